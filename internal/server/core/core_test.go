package core_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
)

// The core is tested here once, alone: requests described by hand, a fake
// client sink (fakeHost), listeners that record (recorder), and real
// plugins. The edges are tested against it in their own packages.

// TestRequestReachesThePlugin: what a Request carries reaches the plugin
// (its id and _meta) and its client sink (sampling, elicitation, logging,
// progress), and the sink is flushed before the answer returns.
func TestRequestReachesThePlugin(t *testing.T) {
	ctx := context.Background()
	c := newCore(t, []core.Mount{
		{Plugin: load(t, "conformance", "./examples/conformance", config.Limits{}), Prefix: "c"},
		{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{}), Prefix: "v"},
	})
	host := &fakeHost{}
	rq := core.Request{ID: "7", Meta: mcp.Meta{"progressToken": "p-1", "trace": "t-1"}, Version: core.Version20251125, Client: host}

	res, err := c.CallTool(ctx, rq, "v_echo_context", args(map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); !strings.Contains(got, `"id":"7"`) || !strings.Contains(got, `"trace":"t-1"`) || !strings.Contains(got, `"progressToken":"p-1"`) {
		t.Errorf("echo_context: %s", got)
	}

	res, err = c.CallTool(ctx, rq, "c_test_sampling", args(map[string]any{"prompt": "hello?"}))
	if err != nil || text(t, res) != "LLM response: heard hello?" {
		t.Errorf("sampling: %v, %v", res, err)
	}
	res, err = c.CallTool(ctx, rq, "c_test_elicitation", args(map[string]any{"message": "who?"}))
	if err != nil || !strings.Contains(text(t, res), `action=accept, content={"name":"ada"}`) {
		t.Errorf("elicitation: %v, %v", res, err)
	}
	if _, err := c.CallTool(ctx, rq, "c_test_tool_with_logging", args(map[string]any{})); err != nil {
		t.Fatal(err)
	}
	flushes := host.flushes
	if _, err := c.CallTool(ctx, rq, "c_test_tool_with_progress", args(map[string]any{})); err != nil {
		t.Fatal(err)
	}
	host.mu.Lock()
	if len(host.sampled) != 1 || len(host.elicited) != 1 || len(host.logs) != 3 || len(host.progress) != 3 || host.progress[2].ProgressToken != "p-1" {
		t.Errorf("the client was asked %q, %q, and sent logs %v, progress %d", host.sampled, host.elicited, host.logs, len(host.progress))
	}
	// Each call flushed the sink before its answer came back.
	if host.flushes != 5 || flushes != 4 {
		t.Errorf("flushes: %d after five calls (%d after four)", host.flushes, flushes)
	}
	host.mu.Unlock()

	// Without a client sink, a plugin's request for the client fails, and
	// the tool says so.
	res, err = c.CallTool(ctx, core.Request{}, "c_test_sampling", args(map[string]any{"prompt": "anyone?"}))
	if err != nil || !res.IsError || !strings.Contains(text(t, res), plugin.ErrNoClient.Error()) {
		t.Errorf("sampling without a client: %v, %v", res, err)
	}
}

// TestContentByVersion: content a plugin returns is adapted to the
// request's protocol version, and left alone when the version is unknown.
func TestContentByVersion(t *testing.T) {
	ctx := context.Background()
	c := newCore(t, []core.Mount{
		{Plugin: load(t, "notes", "./examples/notes", config.Limits{}), Prefix: "notes"},
		{Plugin: load(t, "conformance", "./examples/conformance", config.Limits{})},
	})
	for _, tc := range []struct {
		version     string
		link, audio bool // kept as such
	}{
		{"", true, true},
		{core.Version20241105, false, false},
		{core.Version20250326, false, true},
		{core.Version20250618, true, true},
		{"2026-07-28", true, true},
	} {
		rq := core.Request{Version: tc.version}
		res, err := c.CallTool(ctx, rq, "notes_add_note", args(map[string]any{"title": "t", "text": "x"}))
		if err != nil || len(res.Content) != 2 {
			t.Fatalf("add_note at %q: %v, %v", tc.version, res, err)
		}
		switch l := res.Content[1].(type) {
		case *mcp.ResourceLink:
			if !tc.link || !strings.HasPrefix(l.URI, "notes+notes://note/") {
				t.Errorf("at %q: a resource link %q", tc.version, l.URI)
			}
		case *mcp.TextContent:
			if tc.link || !strings.HasPrefix(l.Text, "Resource: notes+notes://note/") {
				t.Errorf("at %q: the link stands as %q", tc.version, l.Text)
			}
		default:
			t.Errorf("at %q: %T", tc.version, l)
		}
		res, err = c.CallTool(ctx, rq, "test_audio_content", args(map[string]any{}))
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("audio at %q: %v, %v", tc.version, res, err)
		}
		if _, audio := res.Content[0].(*mcp.AudioContent); audio != tc.audio {
			t.Errorf("audio at %q: %T", tc.version, res.Content[0])
		}
	}
	if caps := core.CapabilitiesFor(core.Version20241105, core.Capabilities()); caps.Completions != nil || caps.Tools == nil {
		t.Errorf("capabilities at 2024-11-05: %+v", caps)
	}
	if caps := core.CapabilitiesFor(core.Version20250326, core.Capabilities()); caps.Completions == nil {
		t.Errorf("capabilities at 2025-03-26: %+v", caps)
	}
}

// TestScopesEndCalls: a call ends with either of its request's scopes,
// with the scope's cause; the carrier counts the call while it runs.
func TestScopesEndCalls(t *testing.T) {
	c := newCore(t, []core.Mount{{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{CallTimeout: time.Minute})}})
	errGone := fmt.Errorf("%w: the client went away", context.Canceled)
	errLost := fmt.Errorf("%w: lost", context.Canceled)
	for _, end := range []string{"scope", "carrier"} {
		t.Run(end, func(t *testing.T) {
			scope := core.NewScope(context.Background(), nil)
			carrier := core.NewScope(context.Background(), errLost)
			done := make(chan error, 1)
			go func() {
				_, err := c.CallTool(context.Background(), core.Request{Scope: scope, Carrier: carrier}, "spin", args(map[string]any{}))
				done <- err
			}()
			eventually(t, "the call runs", func() bool { return carrier.Running() == 1 && scope.Running() == 1 })
			want := "the client went away"
			if end == "scope" {
				scope.End(errGone)
			} else {
				carrier.End(nil) // the carrier's cause is its own
				want = "lost"
			}
			select {
			case err := <-done:
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != core.CodeRequestCancelled || !strings.HasSuffix(je.Message, want) {
					t.Errorf("call: %v, want code %d ending %q", err, core.CodeRequestCancelled, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the call did not end with its scope")
			}
			if carrier.Running() != 0 || scope.Running() != 0 {
				t.Errorf("still running: %d, %d", carrier.Running(), scope.Running())
			}
		})
	}
}

// TestEndedScopeEndsNewCalls: a call whose scope has ended is cancelled
// as it starts, with the scope's cause, whether the scope was ended or the
// context it was made from is done.
func TestEndedScopeEndsNewCalls(t *testing.T) {
	c := newCore(t, []core.Mount{{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{CallTimeout: time.Minute})}})
	errGone := fmt.Errorf("%w: the client went away", context.Canceled)
	scopes := map[string]func() core.Request{
		"ended": func() core.Request {
			s := core.NewScope(context.Background(), nil)
			s.End(errGone)
			return core.Request{Scope: s}
		},
		"made from a context that is done": func() core.Request {
			parent, cancel := context.WithCancelCause(context.Background())
			s := core.NewScope(parent, nil)
			cancel(errGone)
			return core.Request{Carrier: s}
		},
	}
	for name, request := range scopes {
		for range 20 { // a scope whose context ends ends on a goroutine: the call races it
			start := time.Now()
			_, err := c.CallTool(context.Background(), request(), "spin", args(map[string]any{}))
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != core.CodeRequestCancelled || !strings.HasSuffix(je.Message, "the client went away") {
				t.Fatalf("%s: call: %v, want code %d", name, err, core.CodeRequestCancelled)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("%s: the call ran %v", name, d)
			}
		}
	}
}

// TestScopeEnds: a scope ends once, by End or with the context it was
// made from, and Done says so whether it was asked before or after; a
// scope of a context that ends is no context of its own (a few
// allocations, no goroutine at the end).
func TestScopeEnds(t *testing.T) {
	for _, how := range []string{"End", "context"} {
		parent, cancel := context.WithCancel(context.Background())
		s := core.NewScope(parent, nil)
		before := s.Done()
		select {
		case <-before:
			t.Fatalf("%s: Done before the end", how)
		default:
		}
		if how == "End" {
			s.End(nil)
		} else {
			cancel()
		}
		for _, done := range []<-chan struct{}{before, s.Done()} {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: Done not closed at the end", how)
			}
		}
		s.End(errors.New("again")) // a second end changes nothing
		cancel()
	}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	goroutines := runtime.NumGoroutine()
	if n := testing.AllocsPerRun(100, func() { core.NewScope(parent, nil).End(nil) }); n > 5 {
		t.Errorf("a scope made and ended: %.0f allocations, want at most 5", n)
	}
	time.Sleep(10 * time.Millisecond)
	if n := runtime.NumGoroutine(); n > goroutines+2 {
		t.Errorf("%d goroutines after 100 scopes, %d before", n, goroutines)
	}
}

// TestDrain: a drain waits for the calls in progress, cancels those still
// running at its deadline, and refuses new calls.
func TestDrain(t *testing.T) {
	c := newCore(t, []core.Mount{{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{CallTimeout: time.Minute})}})
	carrier := core.NewScope(context.Background(), nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), core.Request{Carrier: carrier}, "spin", args(map[string]any{}))
		done <- err
	}()
	eventually(t, "the call runs", func() bool { return carrier.Running() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if n := c.Drain(ctx); n != 1 {
		t.Errorf("Drain cancelled %d calls, want 1", n)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "drain timeout") {
		t.Errorf("the running call: %v", err)
	}
	if !c.Stopping() {
		t.Error("not stopping after Drain")
	}
	if _, err := c.CallTool(context.Background(), core.Request{}, "echo_context", args(map[string]any{})); err != core.ErrStopping {
		t.Errorf("a call after Drain: %v, want ErrStopping", err)
	}
}

// TestListeners: listeners are told what the core offers, under exposed
// names, as plugins change it and reloads replace them; an item one
// listener refuses is offered on none, and not served.
func TestListeners(t *testing.T) {
	ctx := context.Background()
	v1full := load(t, "v1full", "./internal/testplugins/v1full", config.Limits{})
	conformance := load(t, "conformance", "./examples/conformance", config.Limits{})
	all := &recorder{}
	picky := &recorder{refuse: map[string]bool{"v_panic": true}}
	c := newCore(t, []core.Mount{{Plugin: v1full, Prefix: "v"}, {Plugin: conformance, Prefix: "c"}}, all, picky)

	tools := all.offered(core.Tools)
	if !tools["v_spin"] || !tools["c_test_simple_text"] || tools["v_panic"] || !c.HasTool("v_spin") {
		t.Errorf("tools offered: %v", tools)
	}
	if c.HasTool("v_panic") || all.count(event{what: "withdraw", key: "v_panic"}) == 0 {
		t.Error("the refused tool is served, or was not withdrawn from the listener that took it")
	}
	if _, err := c.CallTool(ctx, core.Request{}, "v_panic", args(map[string]any{})); err == nil || !strings.Contains(err.Error(), `unknown tool "v_panic"`) {
		t.Errorf("calling the refused tool: %v", err)
	}
	if !all.offered(core.Templates)["c+test://template/{id}/data"] || !all.offered(core.Prompts)["c_test_simple_prompt"] || !c.HasResource("c+test://template/7/data") {
		t.Errorf("templates %v, prompts %v", all.offered(core.Templates), all.offered(core.Prompts))
	}
	for _, k := range []plugin.ListKind{plugin.ToolList, plugin.ResourceList, plugin.PromptList} {
		if all.count(event{what: "changed", list: k}) == 0 {
			t.Errorf("no ListChanged(%v) after the first set", k)
		}
	}

	// A plugin changes its lists, or tells of a resource's update.
	changes := all.count(event{what: "changed", list: plugin.ToolList})
	if _, err := c.CallTool(ctx, core.Request{}, "v_enable_extra_tool", args(map[string]any{})); err != nil {
		t.Fatal(err)
	}
	if !all.offered(core.Tools)["v_extra_tool"] || !c.HasTool("v_extra_tool") || all.count(event{what: "changed", list: plugin.ToolList}) == changes {
		t.Error("the tool the plugin added was not offered, or listeners not told the list changed")
	}
	if _, err := c.CallTool(ctx, core.Request{}, "v_notify_resource_updated", args(map[string]any{"uri": "v1full://x"})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "resource update", func() bool { return all.count(event{what: "updated", key: "v+v1full://x"}) == 1 })

	// A reload without v1full withdraws its items.
	if err := c.Reload(ctx, []core.Mount{{Plugin: conformance, Prefix: "c"}}); err != nil {
		t.Fatal(err)
	}
	tools = all.offered(core.Tools)
	if tools["v_spin"] || tools["v_extra_tool"] || !tools["c_test_simple_text"] || c.HasTool("v_spin") {
		t.Errorf("after the reload: %v", tools)
	}
	// A refused reload changes nothing.
	twin := load(t, "twin", "./examples/conformance", config.Limits{})
	if err := c.Reload(ctx, []core.Mount{{Plugin: conformance}, {Plugin: twin}}); !errors.Is(err, core.ErrConflict) {
		t.Errorf("a reload with conflicts: %v", err)
	}
	if !c.HasTool("c_test_simple_text") {
		t.Error("a refused reload changed the set")
	}
}

// TestGrants: a caller whose grant does not allow a plugin is answered as
// if the plugin's names did not exist, and its lists leave them out.
func TestGrants(t *testing.T) {
	ctx := context.Background()
	c := newCore(t, []core.Mount{
		{Plugin: load(t, "conformance", "./examples/conformance", config.Limits{}), Prefix: "c"},
		{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{}), Prefix: "v"},
	})
	rq := core.Request{Principal: principal(t, "v1full")}
	if _, err := c.CallTool(ctx, rq, "c_test_simple_text", args(map[string]any{})); err == nil || err.Error() != `unknown tool "c_test_simple_text"` {
		t.Errorf("a tool of a plugin not allowed: %v", err)
	}
	if res, err := c.CallTool(ctx, rq, "v_echo_context", args(map[string]any{})); err != nil || res.IsError {
		t.Errorf("a tool of the plugin allowed: %v, %v", res, err)
	}
	if _, err := c.ReadResource(ctx, rq, "c+test://static-text"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a resource of a plugin not allowed: %v", err)
	}
	if err := c.Subscribe(rq, "c+test://static-text"); err == nil {
		t.Error("subscribed to a resource of a plugin not allowed")
	}
	if _, err := c.GetPrompt(ctx, rq, "c_test_simple_prompt", nil); err == nil || err.Error() != `unknown prompt "c_test_simple_prompt"` {
		t.Errorf("a prompt of a plugin not allowed: %v", err)
	}
	if _, err := c.Complete(ctx, rq, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "c_test_prompt_with_arguments"}, Argument: mcp.CompleteParamsArgument{Name: "arg1"}}); err == nil {
		t.Error("completed for a plugin not allowed")
	}
	list := &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "c_test_simple_text"}, {Name: "v_echo_context"}, {Name: "nobody's"}}}
	c.FilterList(rq.Principal, nil, list)
	if len(list.Tools) != 1 || list.Tools[0].Name != "v_echo_context" {
		t.Errorf("filtered list: %v", list.Tools)
	}

	// Allowed every plugin, or no authentication: everything.
	for _, p := range []core.Request{{Principal: principal(t, config.AllPlugins)}, {}} {
		if _, err := c.CallTool(ctx, p, "c_test_simple_text", args(map[string]any{})); err != nil {
			t.Errorf("a caller allowed every plugin: %v", err)
		}
		if err := c.Subscribe(p, "c+test://static-text"); err != nil {
			t.Errorf("subscribing: %v", err)
		}
	}
}

// TestPromptsAndCompletion: prompts/get and completion/complete reach the
// plugin under its own names, and the content is adapted to the version.
func TestPromptsAndCompletion(t *testing.T) {
	ctx := context.Background()
	c := newCore(t, []core.Mount{{Plugin: load(t, "conformance", "./examples/conformance", config.Limits{}), Prefix: "c"}})
	res, err := c.GetPrompt(ctx, core.Request{}, "c_test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b"})
	if err != nil || len(res.Messages) == 0 {
		t.Fatalf("prompt: %v, %v", res, err)
	}
	res, err = c.GetPrompt(ctx, core.Request{}, "c_test_prompt_with_embedded_resource", map[string]string{"resourceUri": "test://x"})
	if err != nil {
		t.Fatal(err)
	}
	var embedded *mcp.EmbeddedResource
	for _, m := range res.Messages {
		if e, ok := m.Content.(*mcp.EmbeddedResource); ok {
			embedded = e
		}
	}
	if embedded == nil || embedded.Resource.URI != "c+test://x" {
		t.Errorf("embedded resource: %#v", embedded)
	}
	cr, err := c.Complete(ctx, core.Request{}, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "c+test://template/{id}/data"}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"}})
	if err != nil || cr.Completion.Values == nil {
		t.Errorf("completion: %v, %v", cr, err)
	}
	if _, err := c.Complete(ctx, core.Request{}, &mcp.CompleteParams{}); err == nil || !strings.Contains(err.Error(), "missing ref") {
		t.Errorf("completion without ref: %v", err)
	}
}

// slowListener takes a millisecond per offer, as a listener with many
// sessions may: the core's lock is held meanwhile, and a lookup waiting
// for it gets it as soon as it is released.
type slowListener struct{ recorder }

func (l *slowListener) Offer(item any) error {
	time.Sleep(time.Millisecond)
	return l.recorder.Offer(item)
}

// TestReloadNeverHidesAName: while a reload replaces a plugin with another
// that serves the same names, every lookup finds them, on the old plugin
// or the new; a name only the old set served is gone after the reload.
func TestReloadNeverHidesAName(t *testing.T) {
	ctx := context.Background()
	a := load(t, "a", "./examples/conformance", config.Limits{})
	b := load(t, "b", "./examples/conformance", config.Limits{})
	v1 := load(t, "v1full", "./internal/testplugins/v1full", config.Limits{})
	// v1full first: its offers, one by one, come before the others'.
	c := newCore(t, []core.Mount{{Plugin: v1, Prefix: "v"}, {Plugin: a, Prefix: "c"}}, &slowListener{})

	stop := make(chan struct{})
	var missed, looked int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			looked++
			if !c.HasTool("c_test_simple_text") || !c.HasResource("c+test://static-text") {
				missed++
			}
		}
	}()
	for i := range 20 {
		p := []*plugin.Plugin{b, a}[i%2]
		if err := c.Reload(ctx, []core.Mount{{Plugin: v1, Prefix: "v"}, {Plugin: p, Prefix: "c"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reload(ctx, []core.Mount{{Plugin: a, Prefix: "c"}}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	t.Logf("%d lookups, %d missed", looked, missed)
	if missed > 0 {
		t.Errorf("%d of %d lookups during 20 reloads found no tool or resource", missed, looked)
	}
	if c.HasTool("v_spin") {
		t.Error("a tool of a plugin the last reload dropped is still served")
	}
}
