package mrtr_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// A tool that elicits answers input_required with the plugin's request;
// the retry resumes the same execution: the answer carries the nonce the
// execution drew before it asked, and the plugin counted one execution.
func TestElicitResumesTheSameExecution(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{Replica: "r1"})
	first := req{params: map[string]any{"name": "ask", "arguments": map[string]any{"message": "Who?"}}}
	key, request, state := mustInput(t, do(t, m, p, first))

	if key != "elicitation-1" || request["method"] != "elicitation/create" {
		t.Fatalf("input request %s: %v", key, request)
	}
	params := request["params"].(map[string]any)
	if params["mode"] != "form" || !strings.HasPrefix(params["message"].(string), "Who? ") || params["requestedSchema"] == nil {
		t.Errorf("elicitation params %v: want mode form, the plugin's message and schema", params)
	}
	nonce := nonceOf(t, request)
	if st := m.Stats(); st.Parked != 1 || st.Held != 1 || st.ParkedTotal != 1 {
		t.Errorf("stats while parked: %+v", st)
	}
	if inUse, _ := p.Stats(); inUse != 1 {
		t.Errorf("instances in use while parked = %d, want 1 (the call holds its instance)", inUse)
	}

	retry := first
	retry.state = state
	retry.responses = map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	got := decoded(t, toolText(t, do(t, m, p, retry)))
	if got["nonce"] != nonce || got["call"] != float64(1) || got["action"] != "accept" || got["content"].(map[string]any)["name"] != "Ada" {
		t.Errorf("result %v: want nonce %s, call 1, the answer", got, nonce)
	}
	if text := toolText(t, do(t, m, p, req{params: map[string]any{"name": "count"}})); text != "1" {
		t.Errorf("executions started = %s, want 1: the retry must not run the tool again", text)
	}
	if st := m.Stats(); st.Parked != 0 || st.Held != 0 || st.Resumed != 1 {
		t.Errorf("stats after: %+v", st)
	}
	if inUse, _ := p.Stats(); inUse != 0 {
		t.Errorf("instances in use after = %d", inUse)
	}
}

// A plugin that asks twice yields two rounds; the notifications it sends
// after each resume reach the request that resumed it, with that
// request's progress token, and none reaches an earlier one.
func TestAskTwiceNotificationsFollowTheRetry(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{})
	sinks := []*sink{{}, {}, {}}
	r := req{params: map[string]any{"name": "ask_twice"}, token: "t0", sink: sinks[0]}
	key1, q1, state1 := mustInput(t, do(t, m, p, r))
	nonce := nonceOf(t, q1)

	r.token, r.sink, r.state = "t1", sinks[1], state1
	r.responses = map[string]any{key1: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	key2, q2, state2 := mustInput(t, do(t, m, p, r))
	if key2 == key1 || state2 == state1 || !strings.HasPrefix(q2["params"].(map[string]any)["message"].(string), "age ") {
		t.Fatalf("second round %s %v: want a new key, a new state, the second question", key2, q2)
	}

	r.token, r.sink, r.state = 2, sinks[2], state2
	r.responses = map[string]any{key2: map[string]any{"action": "accept", "content": map[string]any{"age": 36}}}
	got := decoded(t, toolText(t, do(t, m, p, r)))
	if got["nonce"] != nonce || got["second"].(map[string]any)["age"] != float64(36) || got["first"].(map[string]any)["name"] != "Ada" {
		t.Errorf("result %v", got)
	}
	want := [][]string{
		nil,
		{`log info {"message":"after first ` + nonce + `"}`, `progress "t1" first`},
		{`log info {"message":"after second ` + nonce + `"}`, `progress 2 second`},
	}
	for i, s := range sinks {
		if got := s.all(); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("request %d got notifications %q, want %q", i, got, want[i])
		}
	}
	if st := m.Stats(); st.ParkedTotal != 2 || st.Resumed != 2 || st.DroppedNotifications != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSamplingRootsPromptsResources(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{})

	t.Run("sampling", func(t *testing.T) {
		r := req{params: map[string]any{"name": "sample", "arguments": map[string]any{"prompt": "capital of France?"}}}
		key, q, state := mustInput(t, do(t, m, p, r))
		params := q["params"].(map[string]any)
		if q["method"] != "sampling/createMessage" || !strings.HasPrefix(key, "sampling-") || params["maxTokens"] != float64(50) || params["_meta"] != nil {
			t.Fatalf("input request %s %v", key, q)
		}
		nonce := nonceOf(t, q)
		r.state = state
		// An array of one block is that block.
		r.responses = map[string]any{key: map[string]any{"role": "assistant", "model": "m1", "content": []any{map[string]any{"type": "text", "text": "Paris"}}, "stopReason": "endTurn"}}
		got := decoded(t, toolText(t, do(t, m, p, r)))
		if got["nonce"] != nonce || got["text"] != "Paris" || got["model"] != "m1" {
			t.Errorf("result %v", got)
		}
	})
	t.Run("roots", func(t *testing.T) {
		r := req{params: map[string]any{"name": "roots"}}
		key, q, state := mustInput(t, do(t, m, p, r))
		if q["method"] != "roots/list" || len(q["params"].(map[string]any)) != 0 || !strings.HasPrefix(key, "roots-") {
			t.Fatalf("input request %s %v", key, q)
		}
		r.state = state
		r.responses = map[string]any{key: map[string]any{"roots": []any{map[string]any{"uri": "file:///src", "name": "src"}}}}
		got := decoded(t, toolText(t, do(t, m, p, r)))
		if roots := got["roots"].([]any); len(roots) != 1 || roots[0].(map[string]any)["uri"] != "file:///src" {
			t.Errorf("result %v", got)
		}
	})
	t.Run("prompt", func(t *testing.T) {
		r := req{method: "prompts/get", params: map[string]any{"name": "ask_prompt"}}
		key, q, state := mustInput(t, do(t, m, p, r))
		nonce := nonceOf(t, q)
		r.state = state
		r.responses = map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
		out, err := serve(t, m, p, r)
		if err != nil {
			t.Fatal(err)
		}
		res := out.Result.(*mcp.GetPromptResult)
		if text := res.Messages[0].Content.(*mcp.TextContent).Text; text != "hello Ada "+nonce {
			t.Errorf("prompt text %q", text)
		}
	})
	t.Run("resource", func(t *testing.T) {
		r := req{method: "resources/read", params: map[string]any{"uri": "mrtr://ask"}}
		key, q, state := mustInput(t, do(t, m, p, r))
		nonce := nonceOf(t, q)
		r.state = state
		r.responses = map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Bo"}}}
		out, err := serve(t, m, p, r)
		if err != nil {
			t.Fatal(err)
		}
		if text := out.Result.(*mcp.ReadResourceResult).Contents[0].Text; text != "hello Bo "+nonce {
			t.Errorf("resource text %q", text)
		}
	})
	t.Run("url", func(t *testing.T) {
		r := req{params: map[string]any{"name": "url", "arguments": map[string]any{"url": "https://example.com/connect"}}}
		key, q, state := mustInput(t, do(t, m, p, r))
		params := q["params"].(map[string]any)
		if params["mode"] != "url" || params["url"] != "https://example.com/connect" || params["elicitationId"] != nil {
			t.Fatalf("URL elicitation %v: want mode url, the url, no elicitationId (2026 has none)", params)
		}
		r.state = state
		r.responses = map[string]any{key: map[string]any{"action": "accept"}}
		// The plugin then calls notify_url_elicitation_completed, which is
		// refused (and only logged): the call completes all the same.
		if got := decoded(t, toolText(t, do(t, m, p, r))); got["action"] != "accept" {
			t.Errorf("result %v", got)
		}
	})
	if inUse, _ := p.Stats(); inUse != 0 {
		t.Errorf("instances in use after = %d", inUse)
	}
}

// A request whose client did not declare the capability the plugin needs
// is answered MissingRequiredClientCapability, nothing is parked, and the
// plugin gets an error answer, as in older sessions.
func TestMissingCapability(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{})
	for _, tc := range []struct {
		name     string
		params   map[string]any
		caps     *mcp.ClientCapabilities
		required string
		plugin   string
	}{
		{"elicitation", map[string]any{"name": "ask"}, &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, `{"elicitation":{}}`, "the client does not support elicitation"},
		{"form", map[string]any{"name": "ask"}, &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, `{"elicitation":{"form":{}}}`, "the client does not support form elicitation"},
		{"url", map[string]any{"name": "url", "arguments": map[string]any{"url": "https://x.example"}}, &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, `{"elicitation":{"url":{}}}`, "the client does not support url elicitation"},
		{"sampling", map[string]any{"name": "sample", "arguments": map[string]any{"prompt": "x"}}, &mcp.ClientCapabilities{}, `{"sampling":{}}`, "the client does not support sampling"},
		{"roots", map[string]any{"name": "roots"}, &mcp.ClientCapabilities{}, `{"roots":{}}`, "the client does not support roots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := make(chan any, 1)
			r := req{params: tc.params, caps: tc.caps}
			_, err := m.Serve(context.Background(), r.request(t), pluginRun(p, r, results))
			var ce *mrtr.CapabilityError
			if !errors.As(err, &ce) {
				t.Fatalf("Serve: %v, want a CapabilityError", err)
			}
			e := mrtr.RPCError(err)
			if e.Code != -32021 || string(e.Data) != `{"requiredCapabilities":`+tc.required+`}` {
				t.Errorf("RPC error %d %s %s", e.Code, e.Message, e.Data)
			}
			if st := m.Stats(); st.Held != 0 || st.Parked != 0 {
				t.Errorf("stats %+v: nothing may be parked", st)
			}
			// The plugin was told, finished, and its result went nowhere.
			res := (<-results).(*mcp.CallToolResult)
			if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, tc.plugin) {
				t.Errorf("the plugin got %q, want an error with %q", text, tc.plugin)
			}
		})
	}
	if st := m.Stats(); st.CapabilityRefusals != 5 {
		t.Errorf("capability refusals = %d", st.CapabilityRefusals)
	}
}

// Answers of the wrong shape are invalid params naming the key and what
// was expected; the plugin sees nothing and the call stays parked, so the
// corrected retry with the same state works.
func TestWrongShapeAnswers(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{})
	r := req{params: map[string]any{"name": "ask"}}
	key, q, state := mustInput(t, do(t, m, p, r))
	nonce := nonceOf(t, q)
	r.state = state
	for _, tc := range []struct {
		name   string
		answer any
		want   string
	}{
		{"sampling result", map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "x"}}, "looks like a CreateMessageResult"},
		{"roots result", map[string]any{"roots": []any{}}, "looks like a ListRootsResult"},
		{"bad action", map[string]any{"action": "maybe"}, `action "maybe" is not`},
		{"not an object", "accept", "not a JSON object"},
		{"content type", map[string]any{"action": "accept", "content": map[string]any{"name": map[string]any{"first": "A"}}}, `content["name"] must be`},
		{"schema type", map[string]any{"action": "accept", "content": map[string]any{"name": 5}}, "does not match the requested schema"},
		{"schema required", map[string]any{"action": "accept", "content": map[string]any{}}, "does not match the requested schema"},
		{"schema minLength", map[string]any{"action": "accept", "content": map[string]any{"name": ""}}, "does not match the requested schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.responses = map[string]any{key: tc.answer}
			_, err := serve(t, m, p, r)
			var re *mrtr.ResponseError
			if !errors.As(err, &re) || re.Key != key || re.Expected != "an ElicitResult" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve: %v, want a ResponseError for %s with %q", err, key, tc.want)
			}
			if e := mrtr.RPCError(err); e.Code != -32602 || !strings.Contains(e.Message, key) {
				t.Errorf("RPC error %d %q", e.Code, e.Message)
			}
		})
	}
	if st := m.Stats(); st.Parked != 1 || st.Resumed != 0 {
		t.Fatalf("stats %+v: the call must still be parked", st)
	}
	r.responses = map[string]any{key: map[string]any{"action": "decline"}}
	got := decoded(t, toolText(t, do(t, m, p, r)))
	if got["nonce"] != nonce || got["action"] != "decline" || got["content"] != nil {
		t.Errorf("result %v", got)
	}
}

// A retry without the answer it was asked for gets the same input
// requests and state again; answers to keys never requested are ignored.
func TestMissingAndUnknownKeys(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{})
	r := req{params: map[string]any{"name": "ask"}}
	out, err := serve(t, m, p, r)
	key, q, state := mustInput(t, answer{out, err})
	nonce := nonceOf(t, q)
	r.state = state
	for _, responses := range []map[string]any{nil, {}, {"other": map[string]any{"action": "accept"}}} {
		r.responses = responses
		again, err := serve(t, m, p, r)
		if err != nil || again.Input == nil || again.Input.RequestState != state || !reflect.DeepEqual(again.Input.InputRequests, out.Input.InputRequests) {
			t.Fatalf("retry with %v: %+v, %v: want the same input requests and state", responses, again, err)
		}
	}
	r.responses = map[string]any{
		key:        map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		"other":    "not even an answer",
		"sample-9": map[string]any{"role": "assistant"},
	}
	if got := decoded(t, toolText(t, do(t, m, p, r))); got["nonce"] != nonce {
		t.Errorf("result %v", got)
	}
}

func TestResponsesWithoutState(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	r := req{params: map[string]any{"name": "ask"}, responses: map[string]any{"elicitation-1": map[string]any{"action": "accept"}}}
	_, err := m.Serve(context.Background(), r.request(t), func(context.Context, plugin.Host) (any, error) {
		t.Error("the call ran")
		return nil, nil
	})
	if !errors.Is(err, mrtr.ErrResponsesWithoutState) || mrtr.RPCError(err).Code != -32602 {
		t.Errorf("Serve: %v", err)
	}
	for _, params := range []string{`[]`, `{"requestState":5}`, `{"requestState":"x","inputResponses":[1]}`} {
		_, err := m.Serve(context.Background(), mrtr.Request{Method: "tools/call", Params: json.RawMessage(params)}, nil)
		if !errors.Is(err, mrtr.ErrInvalidParams) || mrtr.RPCError(err).Code != -32602 {
			t.Errorf("params %s: %v", params, err)
		}
	}
	if _, err := m.Serve(context.Background(), mrtr.Request{Method: "tools/list"}, nil); !errors.Is(err, mrtr.ErrMethod) {
		t.Errorf("tools/list: %v", err)
	}
}

// A parked call that no retry claims is cancelled after the park timeout:
// the plugin's call returns and its instance is free for the next call.
func TestParkTimeoutFreesTheInstance(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{ParkTimeout: 300 * time.Millisecond})
	results := make(chan any, 1)
	r := req{params: map[string]any{"name": "ask"}, caps: allCaps}
	out, err := m.Serve(context.Background(), r.request(t), pluginRun(p, r, results))
	_, _, state := mustInput(t, answer{out, err})
	if inUse, _ := p.Stats(); inUse != 1 {
		t.Fatalf("instances in use while parked = %d", inUse)
	}
	select {
	case res := <-results:
		// The host import fails with the cause; the plugin either returns
		// with it (a tool error) or is stopped by the cancellation.
		switch res := res.(type) {
		case *mcp.CallToolResult:
			if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, mrtr.ErrParkExpired.Error()) {
				t.Errorf("the plugin returned %q, want a tool error with the park timeout", text)
			}
		case error:
			if !errors.Is(res, mrtr.ErrParkExpired) {
				t.Errorf("the plugin call failed with %v, want the park timeout as cause", res)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin call did not return after the park timeout")
	}
	eventually(t, "the instance is back in the pool", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
	if st := m.Stats(); st.Expired != 1 || st.Held != 0 || st.Parked != 0 {
		t.Errorf("stats %+v", st)
	}
	// The instance serves the next call at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.CallTool(ctx, nil, "count", nil); err != nil {
		t.Errorf("next call: %v", err)
	}
	r.state = state
	r.responses = map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "late"}}}
	if _, err := serve(t, m, p, r); !errors.Is(err, mrtr.ErrStateExpired) {
		t.Errorf("late retry: %v, want ErrStateExpired", err)
	}
}

// Parked calls count against the per-principal and global caps; at a cap
// the request fails, nothing is parked, and the plugin is told.
func TestCaps(t *testing.T) {
	p := loadPlugin(t, 6)
	m := newManager(t, mrtr.Options{MaxParked: 4, MaxParkedPerPrincipal: 2})
	ask := func(principal string) (*mrtr.Outcome, error, chan any) {
		results := make(chan any, 1)
		r := req{params: map[string]any{"name": "ask"}, principal: principal, caps: allCaps}
		out, err := m.Serve(context.Background(), r.request(t), pluginRun(p, r, results))
		return out, err, results
	}
	for range 2 {
		if out, err, _ := ask("alice"); err != nil || out.Input == nil {
			t.Fatalf("alice: %v", err)
		}
	}
	_, err, results := ask("alice")
	if !errors.Is(err, mrtr.ErrPrincipalCap) || errors.Is(err, mrtr.ErrServerCap) || !errors.Is(err, mrtr.ErrTooManyParked) || mrtr.RPCError(err).Code != mrtr.CodeTooManyParked {
		t.Fatalf("alice's third: %v", err)
	}
	if res := (<-results).(*mcp.CallToolResult); !res.IsError {
		t.Errorf("the refused call's plugin got %v, want an error", res)
	}
	if st := m.Stats(); st.Held != 2 || st.Parked != 2 || st.CapRefusals != 1 {
		t.Errorf("stats %+v", st)
	}
	// Without a principal only the global cap applies.
	for range 2 {
		if out, err, _ := ask(""); err != nil || out.Input == nil {
			t.Fatalf("anonymous: %v", err)
		}
	}
	if _, err, _ := ask("bob"); !errors.Is(err, mrtr.ErrServerCap) || errors.Is(err, mrtr.ErrPrincipalCap) || mrtr.RPCError(err).Code != mrtr.CodeTooManyParked {
		t.Fatalf("bob at the global cap: %v", err)
	}
	eventually(t, "refused calls' instances are back", func() bool { inUse, _ := p.Stats(); return inUse == 4 })
}

// When the request waiting for a running call ends, the call is cancelled.
func TestRequestEndCancelsTheCall(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	_, err := m.Serve(ctx, req{params: map[string]any{"name": "x"}}.request(t), func(ctx context.Context, _ plugin.Host) (any, error) {
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	if !errors.Is(err, mrtr.ErrRequestEnded) || !errors.Is(err, context.Canceled) {
		t.Errorf("Serve: %v", err)
	}
	if cause := <-ended; !errors.Is(cause, mrtr.ErrRequestEnded) {
		t.Errorf("the call's cause: %v", cause)
	}
}

// A plugin that stops waiting (its own timeout) runs on with no request
// waiting: its notifications are dropped and counted, and the retry with
// the outstanding state gets its result, ignoring the late answer.
func TestPluginStopsWaiting(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	r := req{params: map[string]any{"name": "x"}, caps: allCaps}
	out, err := m.Serve(context.Background(), r.request(t), func(ctx context.Context, h plugin.Host) (any, error) {
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := h.Elicit(wctx, &mcp.ElicitParams{Message: "?", RequestedSchema: map[string]any{"type": "object"}})
		if !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		h.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "alone"})
		if err := h.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "e"}); !errors.Is(err, mrtr.ErrNoElicitationComplete) {
			return nil, err
		}
		return "went on without the answer", nil
	})
	key, _, state := mustInput(t, answer{out, err})
	eventually(t, "the call runs on and drops its log message", func() bool { return m.Stats().DroppedNotifications == 1 })
	r.state = state
	r.responses = map[string]any{key: map[string]any{"action": "accept"}}
	out, err = m.Serve(context.Background(), r.request(t), nil)
	if err != nil || out.Result != "went on without the answer" {
		t.Fatalf("retry: %+v, %v", out, err)
	}
	if _, err := m.Serve(context.Background(), r.request(t), nil); !errors.Is(err, mrtr.ErrStateReplayed) {
		t.Errorf("second retry: %v", err)
	}
}
