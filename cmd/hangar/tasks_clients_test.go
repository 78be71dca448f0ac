package main_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/testutil/mcpschema"
)

// None of the released SDKs speaks the tasks extension
// (io.modelcontextprotocol/tasks) yet: go-sdk v1.8.0 has no tasks code at
// all, and mcp-go (v1.2.1, the pinned one, up to v1.6.0) has only the
// experimental tasks of 2025-11-25 (params.task, tasks/result,
// tasks/list), not the extension's resultType "task" and tasks/update;
// neither declares the extension. Their users therefore meet the tools
// that say when their calls become tasks (pdk.Tool.Task) as clients
// without the extension, which must see no change but for TaskRequired.

// TestClientsWithoutTasks connects the go-sdk and mcp-go clients to
// `hangar serve` (the tasks extension offered, as by default), over HTTP
// and stdio, at 2026-07-28, and calls the conformance fixture's tools of
// each task policy: slow_compute (TaskAlways) is answered with its result,
// confirm_delete (TaskAlways, asks to confirm) completes through MRTR,
// failing_job (TaskRequired) is refused with -32021 before it runs; no
// answer is a task.
func TestClientsWithoutTasks(t *testing.T) {
	cfg := config2026(t, "")
	cache := testutil.ShareCompiledCache(t, t.TempDir())
	url, _ := serveHTTP2026(t, cfg, cache)
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T, conv *mcpschema.Conversation) client2026
	}{
		{"go-sdk/http", func(t *testing.T, conv *mcpschema.Conversation) client2026 {
			hc := &http.Client{Transport: conv.RoundTripper(nil)}
			return connectSDK(t, newObserved(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, sdkOpts{capable: true})
		}},
		{"go-sdk/stdio", func(t *testing.T, conv *mcpschema.Conversation) client2026 {
			stdin, stdout := serveStdio2026(t, cfg, cache, conv)
			return connectSDK(t, newObserved(), &mcp.IOTransport{Reader: stdout, Writer: stdin}, sdkOpts{capable: true})
		}},
		{"mcp-go/http", func(t *testing.T, conv *mcpschema.Conversation) client2026 {
			hc := &http.Client{Transport: conv.RoundTripper(nil)}
			tr, err := mcpgotransport.NewStreamableHTTP(url, mcpgotransport.WithHTTPBasicClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			return connectMCPGo(t, newObserved(), tr, true)
		}},
		{"mcp-go/stdio", func(t *testing.T, conv *mcpschema.Conversation) client2026 {
			stdin, stdout := serveStdio2026(t, cfg, cache, conv)
			return connectMCPGo(t, newObserved(), mcpgotransport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))), true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := mcpschema.NewConversation(t)
			c := tc.connect(t, conv)
			ctx := context.Background()
			if v := c.version(); v != v2026 {
				t.Fatalf("negotiated %q, want %s", v, v2026)
			}
			if text, err := c.call(ctx, "slow_compute", map[string]any{"seconds": 0.3, "label": "sums"}, nil); err != nil || text != "computed sums after 0.3 s" {
				t.Errorf("slow_compute (TaskAlways): %q, %v", text, err)
			}
			if text, err := c.call(ctx, "confirm_delete", map[string]any{"filename": "old.txt"}, nil); err != nil || !strings.HasSuffix(text, " old.txt") {
				t.Errorf("confirm_delete (TaskAlways, asks): %q, %v", text, err)
			}
			if text, err := c.call(ctx, "failing_job", nil, nil); err == nil {
				t.Errorf("failing_job (TaskRequired): %q, want an error", text)
			}
			counts := conv.Counts()
			if counts["tools/call error -32021"] != 1 || counts["tools/call input_required"] == 0 {
				t.Errorf("want failing_job refused with -32021 and confirm_delete's question over MRTR: %v", counts)
			}
			for label := range counts {
				if strings.Contains(label, "task") {
					t.Errorf("a client without the extension got %q: %v", label, counts)
				}
			}
		})
	}
}
