package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

var alice = tasks.Owner{Principal: "alice"}

// A call still running after its threshold becomes a task and reaches
// completed with the tool's result; one that ends first answers
// directly.
func TestCallBecomesATask(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	for _, tc := range []struct {
		name   string
		c      call
		policy mrtr.TaskPolicy
		task   bool
	}{
		{"quick call answers directly", call{"count", nil}, patient, false},
		{"long call becomes a task", sleepCall(1000), after(30 * time.Millisecond), true},
		{"a tool that runs long is a task at once", sleepCall(1000), always, true},
		{"never a task", sleepCall(50), never, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, out, err := start(t, tb, p, alice, tc.c, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.task {
				if d != nil || out == nil || out.Result == nil {
					t.Fatalf("got task %+v, want a direct result", d)
				}
				return
			}
			if d == nil {
				t.Fatalf("got a direct answer %+v, want a task", out)
			}
			if d.Status != "working" || d.TaskID == "" || d.CreatedAt == "" || d.LastUpdatedAt == "" || d.TTLMs <= 0 || d.PollIntervalMs != 1000 {
				t.Fatalf("created task %+v", d)
			}
			done := waitFor(t, tb, alice, d.TaskID, "completed")
			v := decoded(t, resultText(t, done))
			if v["slept_ms"] != float64(tc.c.args["ms"].(int)) {
				t.Errorf("result %v", v)
			}
			if done.LastUpdatedAt < done.CreatedAt || done.Error != nil || done.InputRequests != nil {
				t.Errorf("completed task %+v", done)
			}
		})
	}
	if st := tb.Stats(); st.Created != 2 || st.Completed != 2 || st.Running != 0 || st.Tasks != 2 {
		t.Errorf("stats %+v", st)
	}
}

// A call that asks for input before its threshold is answered over MRTR,
// before any task exists. Its retry through the table is served as a
// retry: answered directly when the call ends before the threshold, and
// a task (the extension's MRTR to tasks composition) when the answer
// leaves it working, at once with TaskAfterInput; the task's result has
// the answer gathered over MRTR.
func TestInputBeforeTheThresholdIsMRTR(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	afterInput := mrtr.TaskPolicy{Mode: mrtr.TaskAfterInput, After: time.Minute}
	for _, tc := range []struct {
		name   string
		c      call
		policy mrtr.TaskPolicy
		task   bool
	}{
		{"a quick retry answers directly", call{"ask", nil}, patient, false},
		{"a retry that works on becomes a task", call{"sleep", map[string]any{"ms": 0, "ask": true, "then_ms": 1000}}, afterInput, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, out, err := start(t, tb, p, alice, tc.c, tc.policy)
			if err != nil || d != nil || out == nil || out.Input == nil {
				t.Fatalf("round 1: %+v, %+v, %v; want input_required", d, out, err)
			}
			var key string
			for k := range out.Input.InputRequests {
				key = k
			}
			args := tc.c.args
			if args == nil {
				args = map[string]any{}
			}
			raw, _ := json.Marshal(map[string]any{
				"name": tc.c.tool, "arguments": args,
				"requestState":   out.Input.RequestState,
				"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
			})
			req := mrtr.Request{Method: "tools/call", Params: raw, Principal: alice.Principal, Capabilities: allCaps}
			d, out, err = tb.Call(context.Background(), req, "", nil, tc.policy)
			if !tc.task {
				if err != nil || d != nil || out == nil || out.Result == nil {
					t.Fatalf("the retry: %+v, %+v, %v; want the result", d, out, err)
				}
				return
			}
			if err != nil || d == nil || d.Status != "working" || d.InputRequests != nil {
				t.Fatalf("the retry: %+v, %+v, %v; want a working task", d, out, err)
			}
			done := waitFor(t, tb, alice, d.TaskID, "completed")
			if v := decoded(t, resultText(t, done)); v["content"].(map[string]any)["name"] != "Ada" {
				t.Errorf("result %v, want the answer gathered over MRTR", v)
			}
		})
	}
	if st := tb.Stats(); st.Created != 1 {
		t.Errorf("stats %+v", st)
	}
}

// Only tools/call may become a task; the task's owner is the request's
// principal, whose caps its call counts against.
func TestCallRefuses(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	raw, _ := json.Marshal(map[string]any{"name": "ask_prompt"})
	req := mrtr.Request{Method: "prompts/get", Params: raw, Principal: alice.Principal, Capabilities: allCaps}
	if d, out, err := tb.Call(context.Background(), req, "", toolRun(p, call{"count", nil}), always); d != nil || out != nil || !errors.Is(err, mrtr.ErrTaskMethod) {
		t.Errorf("prompts/get: %+v, %+v, %v; want ErrTaskMethod", d, out, err)
	}
	if st := tb.Stats(); st.Created != 0 || inUse(p) != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A task whose plugin asks for input is input_required with its
// inputRequests; tasks/update ignores unknown keys, rejects a wrong
// answer, and resumes the same execution with the right one.
func TestInputRequiredTask(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, m := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	d := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true}}, always)
	in := waitFor(t, tb, alice, d.TaskID, "input_required")
	if len(in.InputRequests) != 1 || in.StatusMessage == "" {
		t.Fatalf("input_required task %+v", in)
	}
	var key string
	var request map[string]any
	for k, raw := range in.InputRequests {
		key = k
		json.Unmarshal(raw, &request)
	}
	if request["method"] != "elicitation/create" {
		t.Fatalf("input request %v", request)
	}
	if st := m.Stats(); st.Parked != 1 {
		t.Errorf("mrtr stats while input_required: %+v; want the call parked", st)
	}
	for _, tc := range []struct {
		name      string
		responses map[string]json.RawMessage
		err       error
	}{
		{"unknown key ignored", map[string]json.RawMessage{"elicitation-99": json.RawMessage(`{"action":"accept","content":{"name":"x"}}`)}, nil},
		{"empty set", map[string]json.RawMessage{}, nil},
		{"wrong shape", map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{}}`)}, mrtr.ErrInvalidResponse},
	} {
		if err := tb.Update(alice, d.TaskID, tc.responses); !errors.Is(err, tc.err) {
			t.Fatalf("%s: Update = %v, want %v", tc.name, err, tc.err)
		}
		if got, _ := tb.Get(alice, d.TaskID); got.Status != "input_required" {
			t.Fatalf("%s: task is %s, want still input_required", tc.name, got.Status)
		}
	}
	if e := tasks.RPCError(tb.Update(alice, d.TaskID, map[string]json.RawMessage{key: json.RawMessage(`{"action":"nope"}`)})); e == nil || e.Code != jsonrpc.CodeInvalidParams || contains(e.Message, "requestState") {
		t.Errorf("a wrong answer's RPC error %+v, want invalid params, with no word of a requestState", e)
	}
	if err := tb.Update(alice, d.TaskID, map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}); err != nil {
		t.Fatal(err)
	}
	// The answered key is gone from the very next tasks/get.
	if got, _ := tb.Get(alice, d.TaskID); got.InputRequests[key] != nil || got.Status == "input_required" {
		t.Errorf("right after tasks/update: %+v", got)
	}
	done := waitFor(t, tb, alice, d.TaskID, "completed")
	v := decoded(t, resultText(t, done))
	if v["content"].(map[string]any)["name"] != "Ada" {
		t.Errorf("result %v, want the answer", v)
	}
	// The same key again is an answered key: ignored.
	if err := tb.Update(alice, d.TaskID, map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"name":"Bob"}}`)}); err != nil {
		t.Errorf("update of a completed task: %v", err)
	}
	if st := m.Stats(); st.Parked != 0 || st.Held != 0 || st.Resumed != 1 {
		t.Errorf("mrtr stats after: %+v", st)
	}
}

// tasks/cancel ends a running plugin call: the instance is back in the
// pool at once and serves the next call; cancel of a finished task is
// acknowledged and changes nothing.
func TestCancelEndsThePluginCall(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	for _, tc := range []struct {
		name string
		c    call
		wait string // status to reach before the cancel
	}{
		{"working", sleepCall(60_000), "working"},
		{"input_required", call{"sleep", map[string]any{"ms": 0, "ask": true}}, "input_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustTask(t, tb, p, alice, tc.c, always)
			waitFor(t, tb, alice, d.TaskID, tc.wait)
			eventually(t, "the task's call holds the instance", func() bool { return inUse(p) == 1 })
			if err := tb.Cancel(alice, d.TaskID); err != nil {
				t.Fatal(err)
			}
			got, err := tb.Get(alice, d.TaskID) // cancelled at once
			if err != nil || got.Status != "cancelled" || !errors.Is(got.Cause, tasks.ErrCancelled) || got.StatusMessage == "" || got.Result != nil || got.Error != nil {
				t.Errorf("cancelled task %+v", got)
			}
			eventually(t, "the instance is back", func() bool { return inUse(p) == 0 })
			if _, out, err := start(t, tb, p, alice, call{"count", nil}, never); err != nil || out == nil {
				t.Fatalf("the next call: %+v, %v", out, err)
			}
			if err := tb.Cancel(alice, d.TaskID); err != nil {
				t.Errorf("second cancel: %v", err)
			}
			if again, _ := tb.Get(alice, d.TaskID); again.Status != "cancelled" || again.LastUpdatedAt != got.LastUpdatedAt {
				t.Errorf("after a second cancel %+v", again)
			}
		})
	}
	// A finished task stays completed.
	d := mustTask(t, tb, p, alice, askCall(0), always)
	answerTask(t, tb, alice, d.TaskID)
	done := waitFor(t, tb, alice, d.TaskID, "completed")
	if err := tb.Cancel(alice, d.TaskID); err != nil {
		t.Fatal(err)
	}
	if again, _ := tb.Get(alice, d.TaskID); again.Status != "completed" || string(again.Result) != string(done.Result) {
		t.Errorf("a completed task after cancel: %+v", again)
	}
}

// Another principal's task, an anonymous caller's view of any task when
// auth is on, a forged id and a guessed one all get the same error; the
// task is untouched by their update and cancel.
func TestWhoseTask(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	d := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true}}, always)
	in := waitFor(t, tb, alice, d.TaskID, "input_required")
	answers := map[string]json.RawMessage{}
	for k := range in.InputRequests {
		answers[k] = json.RawMessage(`{"action":"accept","content":{"name":"Mallory"}}`)
	}
	other, _ := newTable(t, mrtr.Options{Key: []byte("another key of thirty-two bytes!")}, tasks.Options{})
	foreign := mustTask(t, other, p, tasks.Owner{Client: "x"}, askCall(0), always)
	forged := []byte(d.TaskID)
	forged[3] ^= 1
	for _, tc := range []struct {
		name  string
		owner tasks.Owner
		id    string
	}{
		{"another principal", tasks.Owner{Principal: "bob"}, d.TaskID},
		{"anonymous", tasks.Owner{Client: "10.0.0.1"}, d.TaskID},
		{"anonymous with alice's name as client key", tasks.Owner{Client: "alice"}, d.TaskID},
		{"forged id", alice, string(forged)},
		{"id of another server's key", alice, foreign.TaskID},
		{"garbage", alice, "786512e2-9e0d-44bd-8f29-789f320fe840"},
		{"empty", alice, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tb.Get(tc.owner, tc.id)
			if err != tasks.ErrUnknownTask {
				t.Errorf("get: %v, want exactly ErrUnknownTask", err)
			}
			if err := tb.Update(tc.owner, tc.id, answers); err != tasks.ErrUnknownTask {
				t.Errorf("update: %v", err)
			}
			if err := tb.Cancel(tc.owner, tc.id); err != tasks.ErrUnknownTask {
				t.Errorf("cancel: %v", err)
			}
			if e := tasks.RPCError(err); e.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("RPC error %+v", e)
			}
			if got, err := tb.Get(alice, d.TaskID); err != nil || got.Status != "input_required" || len(got.InputRequests) != 1 {
				t.Errorf("the owner's task after: %+v, %v; want it untouched", got, err)
			}
		})
	}
	// An anonymous caller on a server with auth gets no task: its long
	// call is answered directly.
	if dd, out, err := start(t, tb, p, tasks.Owner{Client: "c"}, sleepCall(100), always); dd != nil || err != nil || out == nil {
		t.Errorf("anonymous long call with auth: %+v, %+v, %v; want a direct answer", dd, out, err)
	}
	// Without auth, an anonymous request without a client key gets none:
	// it would count with every other such request as one client.
	if dd, out, err := start(t, other, p, tasks.Owner{}, sleepCall(100), always); dd != nil || err != nil || out == nil {
		t.Errorf("anonymous long call without a client key: %+v, %+v, %v; want a direct answer", dd, out, err)
	}
	// Without auth, the id is the capability.
	if got, err := other.Get(tasks.Owner{Client: "somebody else"}, foreign.TaskID); err != nil || got.TaskID != foreign.TaskID {
		t.Errorf("without auth, the id reaches the task: %+v, %v", got, err)
	}
}

// Task ids are unguessable, authenticated, and name their replica.
func TestLocate(t *testing.T) {
	p := loadPlugin(t, 1)
	t1, _ := newTable(t, mrtr.Options{Replica: "r1"}, tasks.Options{})
	// The same state key: newTable's. Its results are small, so that room
	// for ten running tasks' results is held within its owner's bound.
	t2, _ := newTable(t, mrtr.Options{Replica: "r2"}, tasks.Options{MaxResultBytes: 64 << 10})
	d := mustTask(t, t1, p, alice, askCall(0), always)
	for _, tb := range []*tasks.Table{t1, t2} {
		if r, err := tb.Locate(d.TaskID); r != "r1" || err != nil {
			t.Errorf("Locate = %q, %v; want r1", r, err)
		}
	}
	var e *tasks.ElsewhereError
	if _, err := t2.Get(alice, d.TaskID); !errors.As(err, &e) || e.Replica != "r1" {
		t.Errorf("r2's get of r1's task: %v", err)
	}
	// Another replica's name in the id breaks its MAC.
	swapped := d.TaskID[:len(d.TaskID)-2] + "r2"
	if _, err := t2.Locate(swapped); err != tasks.ErrUnknownTask {
		t.Errorf("Locate of an id naming another replica: %v", err)
	}
	seen := map[string]bool{}
	for range 10 {
		id := mustTask(t, t2, p, tasks.Owner{Principal: "bulk"}, askCall(0), always).TaskID
		if seen[id] || len(id) != 22+1+22+1+2 {
			t.Fatalf("id %q", id)
		}
		seen[id] = true
	}
}

// A task fails with the JSON-RPC error that ended its call: here a plugin
// asking for elicitation a client did not declare, -32021 with the
// capability it needs, as the extension's failed status wants, with a
// statusMessage. Its plugin, which would work on for a minute, is ended
// at once.
func TestFailedTaskCarriesTheError(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	c := call{"sleep", map[string]any{"ms": 0, "ask": true, "then_ms": 60_000}}
	raw, _ := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args})
	req := mrtr.Request{Method: "tools/call", Params: raw, Principal: alice.Principal, Capabilities: &mcp.ClientCapabilities{}}
	d, _, err := tb.Call(context.Background(), req, "", toolRun(p, c), always)
	if err != nil || d == nil {
		t.Fatalf("Call: %+v, %v", d, err)
	}
	got := waitFor(t, tb, alice, d.TaskID, "failed")
	var ce *mrtr.CapabilityError
	if got.Error == nil || got.Error.Code != mrtr.CodeMissingRequiredClientCapability || !contains(string(got.Error.Data), "elicitation") ||
		got.Result != nil || got.StatusMessage == "" || !errors.As(got.Cause, &ce) {
		t.Errorf("failed task %+v (error %+v)", got, got.Error)
	}
	eventually(t, "the plugin's call ended", func() bool { return inUse(p) == 0 })
}

// A partial tasks/update delivers its answers at once: the answered key
// leaves inputRequests on the very next tasks/get, the task stays
// input_required with the other key, and its host import has its answer
// (the conformance suite's multi_input check). A Go Run: the PDK asks
// one question at a time, and this is a plugin that asks two at once.
func TestPartialUpdate(t *testing.T) {
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	got := make(chan string, 2)
	run := func(ctx context.Context, h plugin.Host) (any, error) {
		var wg sync.WaitGroup
		for _, q := range []string{"first", "second"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, err := h.Elicit(ctx, &mcp.ElicitParams{Message: q, RequestedSchema: schema}); err == nil {
					got <- q + "=" + res.Content["name"].(string)
				}
			}()
		}
		wg.Wait()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	raw, _ := json.Marshal(map[string]any{"name": "multi_input", "arguments": map[string]any{}})
	req := mrtr.Request{Method: "tools/call", Params: raw, Principal: alice.Principal, Capabilities: allCaps}
	d, _, err := tb.Call(context.Background(), req, "", run, always)
	if err != nil || d == nil {
		t.Fatal(d, err)
	}
	var in *tasks.Detailed
	eventually(t, "two input requests", func() bool {
		in, _ = tb.Get(alice, d.TaskID)
		return len(in.InputRequests) == 2
	})
	var first, second string
	for k, raw := range in.InputRequests {
		if contains(string(raw), `"first"`) {
			first = k
		} else {
			second = k
		}
	}
	if err := tb.Update(alice, d.TaskID, map[string]json.RawMessage{first: json.RawMessage(`{"action":"accept","content":{"name":"a"}}`)}); err != nil {
		t.Fatal(err)
	}
	after, _ := tb.Get(alice, d.TaskID)
	if _, still := after.InputRequests[first]; still || after.InputRequests[second] == nil || after.Status != "input_required" {
		t.Errorf("after a partial tasks/update: %+v; want input_required with %s only", after, second)
	}
	if g := <-got; g != "first=a" {
		t.Errorf("delivered %q", g)
	}
	if err := tb.Update(alice, d.TaskID, map[string]json.RawMessage{second: json.RawMessage(`{"action":"accept","content":{"name":"b"}}`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tb, alice, d.TaskID, "completed")
	if g := <-got; g != "second=b" {
		t.Errorf("delivered %q", g)
	}
}
