package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
)

// A 2026-07-28 client that stops reading its stream while its plugin
// floods it holds neither the plugin (another call of its one instance is
// answered), nor the drain: once the calls are done, Drain cuts the
// stalled client and returns, with no write timeout to help.
func TestModernStalledReaderHoldsNothing(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 1, CallTimeout: 10 * time.Minute})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, nil) // no write timeout
	c := newModern(t, url)

	meta := modernMeta(nil)
	meta["progressToken"] = "stalled"
	req := c.request(1, "tools/call", map[string]any{"name": "flood", "arguments": map[string]any{"kind": "progress", "n": 5000, "size": 4096}, "_meta": meta}, nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // never read
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the flood's answer: HTTP %d", resp.StatusCode)
	}

	// The client gives up after a minute (newModern): the plugin would wait
	// on the stalled client for ever.
	start := time.Now()
	r := c.post(2, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "beside"}})
	if text := resultTextOf(r.result()); text != "beside" {
		t.Fatalf("the other call: %v", r)
	}
	t.Logf("another call answered %v after the flood began", time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drained := time.Now()
	if n := s.Drain(ctx); n != 0 {
		t.Errorf("Drain cancelled %d calls, want 0: the flood had ended", n)
	}
	// The drain waits for the HTTP requests' answers (at most
	// core.CancelGrace, 5 s), cutting a client stalled for a second.
	if took := time.Since(drained); took > 4*time.Second {
		t.Errorf("Drain took %v with a stalled reader", took)
	}
}

// resultTextOf is the text of a tool result's first content block.
func resultTextOf(res map[string]any) string {
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	text, _ := first["text"].(string)
	return text
}
