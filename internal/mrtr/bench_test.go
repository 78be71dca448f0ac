package mrtr_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

var benchParams = json.RawMessage(`{"name":"echo","arguments":{"text":"hello","n":3},"_meta":{"progressToken":1,"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`)

// What Serve adds to a call that never asks for input, with and without
// a progress token (which makes it decode the params).
func BenchmarkServeComplete(b *testing.B) {
	for name, params := range map[string]json.RawMessage{
		"token":    benchParams,
		"no-token": json.RawMessage(`{"name":"echo","arguments":{"text":"hello","n":3},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`),
	} {
		b.Run(name, func(b *testing.B) {
			m, _ := mrtr.New(mrtr.Options{})
			defer m.Close()
			run := func(context.Context, plugin.Host) (any, error) { return "ok", nil }
			r := mrtr.Request{Method: "tools/call", Params: params, Capabilities: allCaps}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Serve(ctx, r, run); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A whole round: the request that parks the call and the retry that
// completes it.
func BenchmarkServeParkResume(b *testing.B) {
	m, _ := mrtr.New(mrtr.Options{})
	defer m.Close()
	run := func(ctx context.Context, h plugin.Host) (any, error) {
		res, err := h.Elicit(ctx, &mcp.ElicitParams{Message: "?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, err
		}
		return res.Action, nil
	}
	r := mrtr.Request{Method: "tools/call", Params: benchParams, Capabilities: allCaps}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := m.Serve(ctx, r, run)
		if err != nil || out.Input == nil {
			b.Fatal(err)
		}
		retry := r
		retry.Params, _ = json.Marshal(map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello", "n": 3},
			"requestState": out.Input.RequestState, "inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}})
		if out, err = m.Serve(ctx, retry, nil); err != nil || out.Result != "accept" {
			b.Fatal(out, err)
		}
	}
}
