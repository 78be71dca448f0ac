package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"
	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// TestServeHeld: the core starts a 2026-07-28 call that may need the
// client's input itself, with its own dispatch (a nil run): a call that
// asks the client parks and comes back as input; its retry, once the core
// admitted it, brings the answer and completes it; a retry of a tool that
// is not there is refused before the Manager reads its state; prompts/get
// is the core's too. With a task table, a tool that runs only as a task is
// refused to a request that does not declare the tasks extension, and
// becomes a task for one that does once it runs past TaskAfter.
func TestServeHeld(t *testing.T) {
	ctx := context.Background()
	p := load(t, "conformance", "./examples/conformance", config.Limits{})

	bare := core.New(&core.Options{Logger: servertest.Logger()})
	if _, err := bare.ServeHeld(ctx, &core.HeldCall{Method: "tools/call", Key: "c_test_simple_text"}, nil); !errors.Is(err, core.ErrNoManager) {
		t.Errorf("ServeHeld without a Manager: %v, want ErrNoManager", err)
	}

	m, table := heldTables(t, true)
	// A call of a task-only tool becomes a task past TaskAfter, as one
	// of the default policy does (failing_job runs for a second).
	c := core.New(&core.Options{Logger: servertest.Logger(), Manager: m, Tasks: table, TaskAfter: 20 * time.Millisecond})
	if err := c.Reload(ctx, []core.Mount{{Plugin: p, Prefix: "c"}}); err != nil {
		t.Fatal(err)
	}
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	rq := core.Request{Version: core.Version20260728, Capabilities: caps}

	// A call that asks for input parks.
	first := map[string]any{"name": "c_test_elicitation", "arguments": map[string]any{"message": "who?"}}
	hc := &core.HeldCall{Request: rq, Method: "tools/call", Key: "c_test_elicitation", Params: marshal(t, first), Args: args(map[string]any{"message": "who?"}), ClientKey: "local"}
	out, err := c.ServeHeld(ctx, hc, nil)
	if err != nil || out.Input == nil || len(out.Input.InputRequests) != 1 {
		t.Fatalf("first request: %+v, %v; want input", out, err)
	}
	retry := map[string]any{"name": "c_test_elicitation", "arguments": map[string]any{"message": "who?"}, "requestState": out.Input.RequestState}
	responses := map[string]any{}
	for k := range out.Input.InputRequests {
		responses[k] = map[string]any{"action": "decline"}
	}
	retry["inputResponses"] = responses

	// A retry of a tool that is not there is refused by the core (as a
	// request), before its state is read.
	gone := &core.HeldCall{Request: rq, Method: "tools/call", Key: "c_gone", Params: marshal(t, map[string]any{"name": "c_gone", "requestState": "x"}), Retry: true}
	var je *jsonrpc.Error
	if _, err := c.ServeHeld(ctx, gone, nil); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "c_gone") {
		t.Errorf("retry of an unknown tool: %v; want the core's unknown tool", err)
	}

	hc = &core.HeldCall{Request: rq, Method: "tools/call", Key: "c_test_elicitation", Params: marshal(t, retry), Retry: true, ClientKey: "local"}
	out, err = c.ServeHeld(ctx, hc, func(context.Context, core.Request) (mcp.Result, error) {
		t.Error("a retry ran its run")
		return nil, nil
	})
	if err != nil || out.Result == nil {
		t.Fatalf("retry: %+v, %v; want the result", out, err)
	}
	if got := text(t, out.Result.(*mcp.CallToolResult)); !strings.Contains(got, "action=decline") {
		t.Errorf("retry's result: %q", got)
	}

	// prompts/get, with the core's own dispatch.
	pp := map[string]any{"name": "c_test_prompt_with_arguments", "arguments": map[string]string{"arg1": "a", "arg2": "b"}}
	hc = &core.HeldCall{Request: rq, Method: "prompts/get", Key: "c_test_prompt_with_arguments", Params: marshal(t, pp), Args: marshal(t, pp["arguments"])}
	out, err = c.ServeHeld(ctx, hc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := out.Result.(*mcp.GetPromptResult); !ok || len(r.Messages) == 0 {
		t.Errorf("prompts/get: %+v", out)
	}

	// A tool that runs only as a task (pdk.TaskRequired).
	fp := marshal(t, map[string]any{"name": "c_failing_job", "arguments": map[string]any{}})
	hc = &core.HeldCall{Request: rq, Method: "tools/call", Key: "c_failing_job", Params: fp, Args: args(map[string]any{}), ClientKey: "local"}
	if _, err := c.ServeHeld(ctx, hc, func(context.Context, core.Request) (mcp.Result, error) {
		t.Error("a task-only tool ran for a request without the tasks extension")
		return nil, nil
	}); !errors.As(err, &je) || je.Code != mrtr.CodeMissingRequiredClientCapability {
		t.Errorf("task-only tool without the extension: %v; want -32021", err)
	}
	declared := rq
	declared.Meta = mcp.Meta{wire.MetaClientCapabilities: map[string]any{"extensions": map[string]any{wire.TasksExtension: map[string]any{}}}}
	hc.Request = declared
	out, err = c.ServeHeld(ctx, hc, nil)
	if err != nil || out.Task == nil || out.Task.TaskID == "" {
		t.Errorf("task-only tool with the extension: %+v, %v; want a task", out, err)
	}
}

func marshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A first tools/call of a plugin that imports no host function asking the
// client runs as a plain call (mrtr.Request.Direct): its host refuses a
// request for the client at once, where a call of a plugin that can ask
// parks for it. Both get the call's result through the same ServeHeld.
func TestServeHeldDirect(t *testing.T) {
	ctx := context.Background()
	asks := load(t, "conformance", "./examples/conformance", config.Limits{})
	plain := load(t, "echo", "./bench/plugins/echo", config.Limits{})
	m, _ := heldTables(t, false)
	c := core.New(&core.Options{Logger: servertest.Logger(), Manager: m})
	if err := c.Reload(ctx, []core.Mount{{Plugin: asks, Prefix: "c"}, {Plugin: plain, Prefix: "e"}}); err != nil {
		t.Fatal(err)
	}
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	rq := core.Request{Version: core.Version20260728, Capabilities: caps}
	// run asks the client as the plugin would, then lets the core call the
	// tool.
	run := func(key string, args map[string]any) core.HeldRun {
		return func(ctx context.Context, rq core.Request) (mcp.Result, error) {
			if _, err := rq.Client.Elicit(ctx, &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{"type": "object"}}); err != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + err.Error()}}}, nil
			}
			return c.CallTool(ctx, rq, key, marshal(t, args))
		}
	}
	echo := map[string]any{"name": "e_echo", "arguments": map[string]any{"text": "hi"}}
	out, err := c.ServeHeld(ctx, &core.HeldCall{Request: rq, Method: "tools/call", Key: "e_echo", Params: marshal(t, echo), ClientKey: "local"}, run("e_echo", map[string]any{"text": "hi"}))
	if err != nil || out.Result == nil {
		t.Fatalf("echo: %+v, %v", out, err)
	}
	if got := text(t, out.Result.(*mcp.CallToolResult)); !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, "cannot ask") {
		t.Errorf("a call of a plugin that cannot ask asked the client: %q", got)
	}
	if st := m.Stats(); st.Held != 0 || st.Parked != 0 {
		t.Errorf("stats after the direct call: %+v", st)
	}
	out, err = c.ServeHeld(ctx, &core.HeldCall{Request: rq, Method: "tools/call", Key: "e_echo", Params: marshal(t, echo), Args: args(map[string]any{"text": "hi"}), ClientKey: "local"}, nil)
	if err != nil || out.Result == nil || text(t, out.Result.(*mcp.CallToolResult)) != "hi" {
		t.Fatalf("echo with the core's dispatch: %+v, %v", out, err)
	}

	simple := map[string]any{"name": "c_test_simple_text", "arguments": map[string]any{}}
	out, err = c.ServeHeld(ctx, &core.HeldCall{Request: rq, Method: "tools/call", Key: "c_test_simple_text", Params: marshal(t, simple), ClientKey: "local"}, run("c_test_simple_text", map[string]any{}))
	if err != nil || out.Input == nil {
		t.Fatalf("a call of a plugin that can ask: %+v, %v; want it parked for the client", out, err)
	}
}

// The request's cancel (HeldCall.Cancel) is the core's to use only for a
// direct call, which runs under the request's context: a call of a plugin
// that cannot ask, from a client that declares the tasks extension, goes
// through the task table, may outlive its request, and runs under a
// context of its own, which that cancel would not end (a drain or a scope
// that ends would miss it).
func TestServeHeldCancelOnlyDirect(t *testing.T) {
	ctx := context.Background()
	plain := load(t, "echo", "./bench/plugins/echo", config.Limits{})
	m, table := heldTables(t, true)
	c := core.New(&core.Options{Logger: servertest.Logger(), Manager: m, Tasks: table})
	if err := c.Reload(ctx, []core.Mount{{Plugin: plain, Prefix: "e"}}); err != nil {
		t.Fatal(err)
	}
	echo := map[string]any{"name": "e_echo", "arguments": map[string]any{"text": "hi"}}
	for _, tc := range []struct {
		name       string
		meta       mcp.Meta
		wantCancel bool
	}{
		{"direct", mcp.Meta{wire.MetaClientCapabilities: map[string]any{}}, true},
		{"through the task table", mcp.Meta{wire.MetaClientCapabilities: map[string]any{"extensions": map[string]any{wire.TasksExtension: map[string]any{}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			gotCancel := false
			run := func(ctx context.Context, rq core.Request) (mcp.Result, error) {
				gotCancel = rq.Cancel != nil
				return c.CallTool(ctx, rq, "e_echo", marshal(t, echo["arguments"]))
			}
			rq := core.Request{Version: core.Version20260728, Capabilities: &mcp.ClientCapabilities{}, Meta: tc.meta}
			out, err := c.ServeHeld(rctx, &core.HeldCall{Request: rq, Method: "tools/call", Key: "e_echo", Params: marshal(t, echo), ClientKey: "local", Cancel: cancel}, run)
			if err != nil || out.Result == nil {
				t.Fatalf("%+v, %v", out, err)
			}
			if gotCancel != tc.wantCancel {
				t.Errorf("the run got the request's cancel: %v, want %v", gotCancel, tc.wantCancel)
			}
		})
	}
}

// heldTables returns a Manager, and with tasks a task table over it,
// closed at the end of the test.
func heldTables(t *testing.T, withTasks bool) (*mrtr.Manager, *tasks.Table) {
	t.Helper()
	m, err := mrtr.New(mrtr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if !withTasks {
		return m, nil
	}
	table, err := tasks.New(m, tasks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(table.Close)
	return m, table
}
