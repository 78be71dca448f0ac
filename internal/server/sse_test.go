package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server"
)

// TestLegacySSEIsOffByDefault: without LegacySSE, /sse is not served.
func TestLegacySSEIsOffByDefault(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: legacy(t)})
	for _, opts := range []*server.HTTPOptions{nil, {}} {
		ts := httptest.NewServer(s.HTTPHandler(opts))
		for _, method := range []string{"GET", "POST"} {
			req, _ := http.NewRequest(method, ts.URL+server.SSEPath, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s with %+v: status %d, want 404", method, server.SSEPath, opts, resp.StatusCode)
			}
		}
		ts.Close()
	}
}

// TestLegacySSE serves the HTTP+SSE transport on 127.0.0.1 and drives it
// with the go-sdk's SSE client: a 2024-11-05 session lists and calls tools
// and answers a plugin's sampling request; a 2025-06-18 session answers an
// elicitation; the Host and Origin checks of /mcp apply.
func TestLegacySSE(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: legacy(t)}, server.Mount{Plugin: fixture(t)})
	ts := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{LegacySSE: true, AllowedOrigins: []string{"https://app.example"}}))
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var sampled *mcp.CreateMessageParams
	client := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled = req.Params
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "over sse"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: ts.URL + server.SSEPath}, &mcp.ClientSessionOptions{ProtocolVersion: "2024-11-05"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	init := cs.InitializeResult()
	if init.ProtocolVersion != "2024-11-05" || init.Capabilities.Tools == nil || init.Capabilities.Completions != nil {
		t.Errorf("initialize = %+v, capabilities %+v", init, init.Capabilities)
	}
	names := strings.Join(toolNames(t, cs), ",")
	if !strings.Contains(names, "reverse") || !strings.Contains(names, "test_sampling") {
		t.Errorf("tools = %s", names)
	}
	if got := resultText(t, callTool(t, cs, "reverse", map[string]any{"text": "sse"})); got != "ess" {
		t.Errorf("reverse = %q", got)
	}
	res := callTool(t, cs, "test_sampling", map[string]any{"prompt": "legacy?"})
	if res.IsError || resultText(t, res) != "LLM response: over sse" {
		t.Errorf("test_sampling = %q", resultText(t, res))
	}
	if sampled == nil || sampled.Messages[0].Content.(*mcp.TextContent).Text != "legacy?" {
		t.Errorf("client got sampling request %+v", sampled)
	}
	// 2024-11-05 has no elicitation: the plugin is told so.
	res = callTool(t, cs, "test_elicitation", map[string]any{"message": "who?"})
	if !res.IsError || !strings.Contains(resultText(t, res), "does not support elicitation") {
		t.Errorf("elicitation in 2024-11-05: %q", resultText(t, res))
	}

	// A newer client may use the transport too, with its version's features.
	var asked string
	newer := mcp.NewClient(&mcp.Implementation{Name: "newer", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
		},
	})
	cs2, err := newer.Connect(ctx, &mcp.SSEClientTransport{Endpoint: ts.URL + server.SSEPath}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs2.Close() })
	res = callTool(t, cs2, "test_elicitation", map[string]any{"message": "who?"})
	if res.IsError || !strings.Contains(resultText(t, res), "action=accept") || asked != "who?" {
		t.Errorf("elicitation over SSE: %q (asked %q)", resultText(t, res), asked)
	}

	// The Host and Origin checks of /mcp, on the stream and on the messages.
	for _, tc := range []struct {
		method, path, host, origin string
		want                       int
	}{
		{"GET", server.SSEPath, "evil.example", "", http.StatusForbidden},
		{"GET", server.SSEPath, "", "https://evil.example", http.StatusForbidden},
		{"POST", server.SSEPath + "?sessionid=x", "evil.example", "", http.StatusForbidden},
		{"POST", server.SSEPath + "?sessionid=x", "", "https://evil.example", http.StatusForbidden},
		{"POST", server.SSEPath + "?sessionid=x", "", "https://app.example", http.StatusNotFound}, // allowed; no such session
	} {
		req, _ := http.NewRequestWithContext(ctx, tc.method, ts.URL+tc.path, strings.NewReader(`{"jsonrpc":"2.0","method":"ping","id":1}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s Host %q Origin %q: status %d, want %d", tc.method, tc.path, tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
	// An allowed browser origin opens a stream.
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+server.SSEPath, nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := resp.Body.Read(buf)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(buf[:n]), "event: endpoint") || !strings.Contains(string(buf[:n]), server.SSEPath+"?sessionid=") {
		t.Errorf("GET %s from an allowed origin: %d %q", server.SSEPath, resp.StatusCode, buf[:n])
	}
}
