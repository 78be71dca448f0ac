package mrtr_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil/mcpschema"
)

// validator returns a function that validates a JSON value against the
// definition def of the revision's schema (internal/testutil/mcpschema).
func validator(t *testing.T, def string) func(v any) error {
	t.Helper()
	return func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return mcpschema.CheckDefinition(def, b)
	}
}

// What this package sends at 2026-07-28 is valid by the revision's schema:
// input_required results with each kind of input request, and its errors.
func TestMessagesMatchTheSchema(t *testing.T) {
	inputRequired := validator(t, "InputRequiredResult")
	m := newManager(t, mrtr.Options{})
	for name, ask := range map[string]func(ctx context.Context, h plugin.Host) error{
		"form": func(ctx context.Context, h plugin.Host) error {
			_, err := h.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: "Name?", Meta: mcp.Meta{"x": 1},
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","format":"email"}},"required":["name"]}`)})
			return err
		},
		"form without schema": func(ctx context.Context, h plugin.Host) error {
			_, err := h.Elicit(ctx, &mcp.ElicitParams{Message: "OK?"})
			return err
		},
		"url": func(ctx context.Context, h plugin.Host) error {
			_, err := h.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/connect", ElicitationID: "e1"})
			return err
		},
		"sampling": func(ctx context.Context, h plugin.Host) error {
			_, err := h.CreateMessage(ctx, &mcp.CreateMessageParams{
				Meta:           mcp.Meta{"x": 1},
				Messages:       []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}},
				MaxTokens:      10,
				IncludeContext: "thisServer",
				SystemPrompt:   "be brief",
			})
			return err
		},
		"roots": func(ctx context.Context, h plugin.Host) error {
			_, err := h.ListRoots(ctx)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := m.Serve(context.Background(), req{params: map[string]any{"name": name}, caps: allCaps}.request(t),
				func(ctx context.Context, h plugin.Host) (any, error) { return nil, ask(ctx, h) })
			mustInput(t, answer{out, err})
			if err := inputRequired(out.Input); err != nil {
				b, _ := json.Marshal(out.Input)
				t.Errorf("%s: %v", b, err)
			}
			// As the answer to a tools/call, with the revision's rules for
			// input_required results.
			resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": out.Input})
			if m, err := mcpschema.Check("tools/call", resp); err != nil || m.Label() != "tools/call input_required" {
				t.Errorf("%s: %v (%v)", resp, err, m)
			}
			for _, raw := range out.Input.InputRequests {
				var r struct {
					Params map[string]any `json:"params"`
				}
				json.Unmarshal(raw, &r)
				if r.Params["_meta"] != nil || r.Params["includeContext"] != nil || r.Params["elicitationId"] != nil {
					t.Errorf("request %s carries what 2026 or the client's capabilities leave out", raw)
				}
			}
		})
	}

	capErr := validator(t, "MissingRequiredClientCapabilityError")
	_, err := m.Serve(context.Background(), req{params: map[string]any{"name": "x"}, caps: &mcp.ClientCapabilities{}}.request(t),
		func(ctx context.Context, h plugin.Host) (any, error) { return h.ListRoots(ctx) })
	if err := capErr(map[string]any{"jsonrpc": "2.0", "id": 1, "error": mrtr.RPCError(err)}); err != nil {
		t.Errorf("capability error: %v", err)
	}
	invalid := validator(t, "InvalidParamsError")
	_, err = m.Serve(context.Background(), req{params: map[string]any{"name": "x"}, state: "forged"}.request(t), nil)
	if err := invalid(mrtr.RPCError(err)); err != nil {
		t.Errorf("invalid params error: %v", err)
	}
}
