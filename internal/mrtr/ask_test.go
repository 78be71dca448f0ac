package mrtr_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// loadConformance loads examples/conformance, whose 2026-07-28 tools ask
// with pdk.Context.Ask: under their own keys, several at once.
func loadConformance(t *testing.T) *plugin.Plugin {
	t.Helper()
	engineOnce.Do(func() { engine, engineErr = plugin.NewEngine(testutil.CacheDir()) })
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./examples/conformance"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(context.Background(), wasm, plugin.Options{Name: "conformance", Limits: config.Limits{MaxInstances: 2}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// askTool serves a tools/call of the conformance plugin's tool name, whose
// _meta declares caps as a 2026-07-28 request does (the plugin reads them
// with pdk.Context.ClientCapabilities).
func askTool(t *testing.T, m *mrtr.Manager, p *plugin.Plugin, name string, caps map[string]any, state string, responses map[string]any) (*mrtr.Outcome, error) {
	t.Helper()
	meta := map[string]any{"io.modelcontextprotocol/clientCapabilities": caps}
	params := map[string]any{"name": name, "arguments": map[string]any{}, "_meta": meta}
	if state != "" {
		params["requestState"] = state
		params["inputResponses"] = responses
	}
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	rawCaps, _ := json.Marshal(caps)
	decoded, err := mrtr.DecodeCapabilities(rawCaps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return m.Serve(ctx, mrtr.Request{Method: "tools/call", Params: raw, Capabilities: decoded},
		func(ctx context.Context, host plugin.Host) (any, error) {
			return p.CallTool(ctx, &plugin.Call{Host: host, ID: "1", Meta: meta}, name, json.RawMessage(`{}`))
		})
}

var everything = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{}}

// A plugin that asks for three inputs with one Ask gets one round: one
// input_required result with the three requests under the plugin's keys,
// answered by one retry; answers to some of them get the same requests
// again, under the same state.
func TestAskOneRound(t *testing.T) {
	p := loadConformance(t)
	m := newManager(t, mrtr.Options{})
	out, err := askTool(t, m, p, "test_input_required_result_multiple_inputs", everything, "", nil)
	if err != nil || out.Input == nil {
		t.Fatalf("Serve: %v, %+v: want input_required", err, out)
	}
	methods := map[string]string{}
	for k, raw := range out.Input.InputRequests {
		var r struct{ Method string }
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		methods[k] = r.Method
	}
	want := map[string]string{"user_name": "elicitation/create", "greeting": "sampling/createMessage", "client_roots": "roots/list"}
	if !maps.Equal(methods, want) {
		t.Fatalf("input requests %v, want %v", methods, want)
	}
	if st := m.Stats(); st.Parked != 1 || st.ParkedTotal != 3 {
		t.Errorf("stats %+v: want one parked call, three input requests", st)
	}
	answers := map[string]any{
		"user_name":    map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}},
		"greeting":     map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "Hello there!"}, "model": "m"},
		"client_roots": map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}},
	}
	partial := map[string]any{"user_name": answers["user_name"]}
	again, err := askTool(t, m, p, "test_input_required_result_multiple_inputs", everything, out.Input.RequestState, partial)
	if err != nil || again.Input == nil || again.Input.RequestState != out.Input.RequestState || len(again.Input.InputRequests) != 3 {
		t.Fatalf("a partial answer: %v, %+v: want the same three requests and state", err, again)
	}
	done, err := askTool(t, m, p, "test_input_required_result_multiple_inputs", everything, out.Input.RequestState, answers)
	if err != nil || done.Result == nil {
		t.Fatalf("the retry: %v, %+v", err, done)
	}
	if text := done.Result.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text; text != "Name: Alice; Greeting: Hello there!; Roots: 1" {
		t.Errorf("result %q", text)
	}
}

// A plugin asks only for what the client declared (ClientCapabilities),
// and a round that needs a capability the client lacks is refused as a
// whole with MissingRequiredClientCapability: no request is parked.
func TestAskCapabilities(t *testing.T) {
	p := loadConformance(t)
	m := newManager(t, mrtr.Options{})
	out, err := askTool(t, m, p, "test_input_required_result_capabilities", map[string]any{"sampling": map[string]any{}}, "", nil)
	if err != nil || out.Input == nil {
		t.Fatalf("Serve: %v, %+v", err, out)
	}
	if keys := slices.Sorted(maps.Keys(out.Input.InputRequests)); !slices.Equal(keys, []string{"sample_input"}) {
		t.Errorf("input requests %v, want sample_input only", keys)
	}

	_, err = askTool(t, m, p, "test_input_required_result_multiple_inputs", map[string]any{"elicitation": map[string]any{}, "roots": map[string]any{}}, "", nil)
	var ce *mrtr.CapabilityError
	if !errors.As(err, &ce) || mrtr.RPCError(err).Code != -32021 || string(mrtr.RPCError(err).Data) != `{"requiredCapabilities":{"sampling":{}}}` {
		t.Errorf("a round needing sampling without it: %v, want -32021 naming sampling", err)
	}
	if st := m.Stats(); st.Parked != 1 {
		t.Errorf("parked calls %d, want 1 (the first call's)", st.Parked)
	}
}
