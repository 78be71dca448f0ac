package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
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
		name  string
		c     call
		after time.Duration
		task  bool
	}{
		{"quick call answers directly", call{"count", nil}, time.Second, false},
		{"long call becomes a task", sleepCall(300), 30 * time.Millisecond, true},
		{"a tool that runs long is a task at once", sleepCall(50), 0, true},
		{"negative after is the table's (2 s)", sleepCall(50), -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, out, err := start(t, tb, p, alice, tc.c, tc.after)
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
// before any task exists; its retry through the table is served as a
// retry, and never becomes a task.
func TestInputBeforeTheThresholdIsMRTR(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	d, out, err := start(t, tb, p, alice, call{"ask", nil}, 5*time.Second)
	if err != nil || d != nil || out == nil || out.Input == nil {
		t.Fatalf("ask: %+v, %+v, %v; want input_required", d, out, err)
	}
	var key string
	for k := range out.Input.InputRequests {
		key = k
	}
	raw, _ := json.Marshal(map[string]any{
		"name": "ask", "arguments": map[string]any{},
		"requestState":   out.Input.RequestState,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
	})
	req := mrtr.Request{Method: "tools/call", Params: raw, Principal: alice.Principal, Capabilities: allCaps}
	d, out, err = tb.Call(context.Background(), alice, req, nil, 0)
	if err != nil || d != nil || out == nil || out.Result == nil {
		t.Fatalf("the retry: %+v, %+v, %v; want the result", d, out, err)
	}
	if st := tb.Stats(); st.Created != 0 {
		t.Errorf("stats %+v: no task was to be made", st)
	}
}

// A task whose plugin asks for input is input_required with its
// inputRequests; tasks/update ignores unknown keys, rejects a wrong
// answer, and resumes the same execution with the right one.
func TestInputRequiredTask(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, m := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	d := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true}}, 0)
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
	if e := tasks.RPCError(tb.Update(alice, d.TaskID, map[string]json.RawMessage{key: json.RawMessage(`{"action":"nope"}`)})); e == nil || e.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("a wrong answer's RPC error %+v, want invalid params", e)
	}
	if err := tb.Update(alice, d.TaskID, map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}); err != nil {
		t.Fatal(err)
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
			d := mustTask(t, tb, p, alice, tc.c, 0)
			waitFor(t, tb, alice, d.TaskID, tc.wait)
			eventually(t, "the task's call holds the instance", func() bool { return inUse(p) == 1 })
			if err := tb.Cancel(alice, d.TaskID); err != nil {
				t.Fatal(err)
			}
			got := waitFor(t, tb, alice, d.TaskID, "cancelled")
			if !contains(got.StatusMessage, "tasks/cancel") || got.Result != nil || got.Error != nil {
				t.Errorf("cancelled task %+v", got)
			}
			eventually(t, "the instance is back", func() bool { return inUse(p) == 0 })
			if _, out, err := start(t, tb, p, alice, call{"count", nil}, time.Second); err != nil || out == nil {
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
	d := mustTask(t, tb, p, alice, sleepCall(0), 0)
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
	d := mustTask(t, tb, p, alice, sleepCall(60_000), 0)
	other, _ := newTable(t, mrtr.Options{}, tasks.Options{Key: []byte("another key of thirty-two bytes!")})
	foreign := mustTask(t, other, p, tasks.Owner{Client: "x"}, sleepCall(0), 0)
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
			if err := tb.Update(tc.owner, tc.id, nil); err != tasks.ErrUnknownTask {
				t.Errorf("update: %v", err)
			}
			if err := tb.Cancel(tc.owner, tc.id); err != tasks.ErrUnknownTask {
				t.Errorf("cancel: %v", err)
			}
			if e := tasks.RPCError(err); e.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("RPC error %+v", e)
			}
			if got, err := tb.Get(alice, d.TaskID); err != nil || got.Status != "working" {
				t.Errorf("the owner's task after: %+v, %v", got, err)
			}
		})
	}
	// An anonymous caller on a server with auth gets no task: its long
	// call is answered directly.
	if dd, out, err := start(t, tb, p, tasks.Owner{Client: "c"}, sleepCall(100), 0); dd != nil || err != nil || out == nil {
		t.Errorf("anonymous long call with auth: %+v, %+v, %v; want a direct answer", dd, out, err)
	}
	// Without auth, an anonymous request without a client key gets none:
	// it would count with every other such request as one client.
	if dd, out, err := start(t, other, p, tasks.Owner{}, sleepCall(100), 0); dd != nil || err != nil || out == nil {
		t.Errorf("anonymous long call without a client key: %+v, %+v, %v; want a direct answer", dd, out, err)
	}
	// Without auth, the id is the capability.
	if got, err := other.Get(tasks.Owner{Client: "somebody else"}, foreign.TaskID); err != nil || got.TaskID != foreign.TaskID {
		t.Errorf("without auth, the id reaches the task: %+v, %v", got, err)
	}
}

// Task ids are unguessable, authenticated, and name their replica.
func TestLocate(t *testing.T) {
	m1, _ := mrtr.New(mrtr.Options{Replica: "r1", Key: testKey})
	m2, _ := mrtr.New(mrtr.Options{Replica: "r2", Key: testKey})
	defer m1.Close()
	defer m2.Close()
	t1, _ := tasks.New(m1, tasks.Options{Key: testKey})
	t2, _ := tasks.New(m2, tasks.Options{Key: testKey})
	p := loadPlugin(t, 1)
	d := mustTask(t, t1, p, alice, sleepCall(0), 0)
	defer t1.Close()
	defer t2.Close()
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
	for range 1000 {
		id := mustTask(t, t2, p, tasks.Owner{Principal: "bulk"}, call{"count", nil}, 0).TaskID
		if seen[id] || len(id) != 22+1+22+1+2 {
			t.Fatalf("id %q", id)
		}
		seen[id] = true
		if len(seen) == 10 {
			break
		}
	}
}

// A task fails with the JSON-RPC error that ended its call: here a plugin
// asking for elicitation a client did not declare, -32021 with the
// capability it needs, as the extension's failed status wants.
func TestFailedTaskCarriesTheError(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	c := call{"sleep", map[string]any{"ms": 0, "ask": true}}
	raw, _ := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args})
	req := mrtr.Request{Method: "tools/call", Params: raw, Principal: alice.Principal, Capabilities: &mcp.ClientCapabilities{}}
	d, _, err := tb.Call(context.Background(), alice, req, toolRun(p, c), 0)
	if err != nil || d == nil {
		t.Fatalf("Call: %+v, %v", d, err)
	}
	got := waitFor(t, tb, alice, d.TaskID, "failed")
	if got.Error == nil || got.Error.Code != mrtr.CodeMissingRequiredClientCapability || !contains(string(got.Error.Data), "elicitation") || got.Result != nil {
		t.Errorf("failed task %+v (error %+v)", got, got.Error)
	}
	eventually(t, "the plugin's call ended", func() bool { return inUse(p) == 0 })
}
