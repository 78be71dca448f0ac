package mrtr_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

var (
	auto   = mrtr.TaskPolicy{Mode: mrtr.TaskAuto, After: 50 * time.Millisecond}
	always = mrtr.TaskPolicy{Mode: mrtr.TaskAlways}
	never  = mrtr.TaskPolicy{}
	// patient is TaskAuto with a threshold no call of these tests reaches
	// before it ends or asks, however loaded the machine.
	patient = mrtr.TaskPolicy{Mode: mrtr.TaskAuto, After: time.Minute}
)

// begin is Begin for r, run on p, with keep answering keepIt.
func begin(t *testing.T, m *mrtr.Manager, p *plugin.Plugin, r req, policy mrtr.TaskPolicy, keepIt bool) (*mrtr.Call, answer, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r.caps == nil {
		r.caps = allCaps
	}
	kept := 0
	c, out, err := m.Begin(ctx, r.request(t), pluginRun(p, r, nil), policy, func(*mrtr.Call) bool { kept++; return keepIt })
	return c, answer{out, err}, kept
}

func sleepReq(ms int, ask bool, thenMS int) req {
	return req{params: map[string]any{"name": "sleep", "arguments": map[string]any{"ms": ms, "ask": ask, "then_ms": thenMS}}}
}

// Begin answers a call that ends or asks within the threshold as Serve
// does, asks keep only for one still running then, and leaves a kept
// call running, detached, for Next, Answer and Stop; TaskAlways keeps a
// call at once, TaskNever never.
func TestBegin(t *testing.T) {
	p := loadPlugin(t, 4)
	m := newManager(t, mrtr.Options{})
	for _, tc := range []struct {
		name   string
		r      req
		policy mrtr.TaskPolicy
		keep   bool
		want   string // "result", "input", "call"
	}{
		{"quick call answers directly", req{params: map[string]any{"name": "count"}}, patient, true, "result"},
		{"ask before the threshold is MRTR", req{params: map[string]any{"name": "ask"}}, patient, true, "input"},
		{"long call is kept", sleepReq(60_000, false, 0), auto, true, "call"},
		{"long call at a cap is waited for", sleepReq(300, false, 0), auto, false, "result"},
		{"never a task", sleepReq(300, false, 0), never, true, "result"},
		{"always keeps at once", sleepReq(60_000, false, 0), always, true, "call"},
		{"always keeps a call that asks at once", req{params: map[string]any{"name": "ask"}}, always, true, "call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a, kept := begin(t, m, p, tc.r, tc.policy, tc.keep)
			switch tc.want {
			case "result":
				if c != nil {
					t.Fatalf("Begin returned a call, want a direct answer")
				}
				toolText(t, a)
			case "input":
				if c != nil || kept != 0 {
					t.Fatalf("Begin returned call %v (keep asked %d times), want input_required", c, kept)
				}
				mustInput(t, a)
			case "call":
				if c == nil || a.err != nil || a.out != nil || kept != 1 {
					t.Fatalf("Begin = %v, %+v, %v (keep asked %d times); want a running call", c, a.out, a.err, kept)
				}
				if s, _ := c.Next(); s.Status.Final() {
					t.Fatalf("kept call is %s, want running", s.Status)
				}
				if !c.Stop(errors.New("test over")) || c.Stop(errors.New("again")) {
					t.Fatal("Stop of a running call, then of a stopped one: want true, then false")
				}
				c.Release()
			}
		})
	}
	eventually(t, "the stopped calls' instances are back", func() bool { inUse, _ := p.Stats(); return inUse == 1 })
	if st := m.Stats(); st.Parked != 1 || st.Held != 1 {
		t.Errorf("stats with one parked ask: %+v", st)
	}
	m.Close()
	eventually(t, "every instance is back", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
}

// Begin refuses what cannot be a task: another method than tools/call,
// and a policy with a threshold of zero (which would read as "at once").
func TestBeginRefuses(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	r := req{method: "prompts/get", params: map[string]any{"name": "ask_prompt"}, caps: allCaps}
	keep := func(*mrtr.Call) bool { t.Error("keep asked"); return true }
	run := func(context.Context, plugin.Host) (any, error) { t.Error("the call ran"); return nil, nil }
	if _, _, err := m.Begin(context.Background(), r.request(t), run, always, keep); !errors.Is(err, mrtr.ErrTaskMethod) {
		t.Errorf("prompts/get: %v, want ErrTaskMethod", err)
	}
	tool := req{params: map[string]any{"name": "count"}, caps: allCaps}
	for _, policy := range []mrtr.TaskPolicy{{Mode: mrtr.TaskAuto}, {Mode: mrtr.TaskAfterInput, After: -time.Second}, {Mode: 9}} {
		if _, _, err := m.Begin(context.Background(), tool.request(t), run, policy, keep); err == nil {
			t.Errorf("policy %+v accepted", policy)
		}
	}
}

// A request that ends before the threshold cancels its call, as in
// Serve: nobody would get its result, and keep is never asked.
func TestBeginRequestEnds(t *testing.T) {
	p := loadPlugin(t, 1)
	m := newManager(t, mrtr.Options{})
	r := req{params: map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 60_000}}, caps: allCaps}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c, out, err := m.Begin(ctx, r.request(t), pluginRun(p, r, nil), patient, func(*mrtr.Call) bool {
		t.Error("keep asked")
		return true
	})
	if c != nil || out != nil || !errors.Is(err, mrtr.ErrRequestEnded) {
		t.Fatalf("Begin = %v, %+v, %v; want ErrRequestEnded", c, out, err)
	}
	eventually(t, "the instance is back", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
	// A request already gone makes no task, even with TaskAlways.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	c, _, err = m.Begin(done, r.request(t), pluginRun(p, r, nil), always, func(*mrtr.Call) bool {
		t.Error("keep asked for a request already gone")
		return true
	})
	if c != nil || !errors.Is(err, mrtr.ErrRequestEnded) {
		t.Fatalf("Begin of a request gone = %v, %v; want ErrRequestEnded", c, err)
	}
	eventually(t, "the instance is back", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
}

// The MRTR to tasks composition: a call that asks first is answered over
// MRTR; its retry, whose answer leaves the call working, becomes a task
// (at once with TaskAfterInput, after the threshold with TaskAuto), and
// the task's result has the answer; with TaskNever the retry waits for
// the result.
func TestBeginRetry(t *testing.T) {
	p := loadPlugin(t, 3)
	m := newManager(t, mrtr.Options{})
	for _, tc := range []struct {
		name   string
		policy mrtr.TaskPolicy
		task   bool
	}{
		{"after input", mrtr.TaskPolicy{Mode: mrtr.TaskAfterInput, After: time.Minute}, true},
		{"auto", auto, true},
		{"never", never, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sleepReq(0, true, 1000)
			first := tc.policy
			if first.Mode == mrtr.TaskAuto {
				first = patient // the ask comes before the threshold, however loaded the machine
			}
			c, a, _ := begin(t, m, p, r, first, true)
			if c != nil {
				t.Fatal("round 1 became a task; want MRTR input_required")
			}
			key, _, state := mustInput(t, a)
			r.state = state
			r.responses = map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}}
			c, a, kept := begin(t, m, p, r, tc.policy, true)
			if !tc.task {
				if c != nil || kept != 0 {
					t.Fatal("the retry became a task")
				}
				if v := decoded(t, toolText(t, a)); v["content"].(map[string]any)["name"] != "Alice" {
					t.Errorf("result %v, want the answer", v)
				}
				return
			}
			if c == nil || a.err != nil || kept != 1 {
				t.Fatalf("the retry: %v, %+v, %v; want a task", c, a.out, a.err)
			}
			s := waitStatus(t, c, mrtr.Completed)
			b, _ := json.Marshal(s.Result)
			var res mcp.CallToolResult
			if err := json.Unmarshal(b, &res); err != nil || len(res.Content) == 0 {
				t.Fatalf("result %s: %v", b, err)
			}
			if v := decoded(t, res.Content[0].(*mcp.TextContent).Text); v["content"].(map[string]any)["name"] != "Alice" {
				t.Errorf("result %v, want the answer gathered over MRTR", v)
			}
			c.Release()
		})
	}
	eventually(t, "no call is held", func() bool { st := m.Stats(); return st.Held == 0 && st.Parked == 0 })
}

// A kept call that asks for input is InputRequired with its request;
// Answer resumes the same execution, which completes, and Next reports
// each change without polling. Once answered, the call no longer holds a
// place under max_parked_per_principal while it works on.
func TestBeginAnswer(t *testing.T) {
	p := loadPlugin(t, 2)
	m := newManager(t, mrtr.Options{MaxParkedPerPrincipal: 1})
	r := sleepReq(0, true, 60_000)
	r.principal = "alice"
	c, _, _ := begin(t, m, p, r, always, true)
	if c == nil {
		t.Fatal("the call was not kept")
	}
	s := waitStatus(t, c, mrtr.InputRequired)
	if len(s.InputRequests) != 1 || s.Expiry.IsZero() {
		t.Fatalf("input required snapshot %+v", s)
	}
	var key string
	for k := range s.InputRequests {
		key = k
	}
	if n, err := c.Answer(map[string]json.RawMessage{"other": json.RawMessage(`{}`)}); n != 0 || err != nil {
		t.Fatalf("Answer without the pending key = %v, %v; want 0, nil", n, err)
	}
	if n, err := c.Answer(map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"age":3}}`)}); n != 0 || !errors.Is(err, mrtr.ErrInvalidResponse) {
		t.Fatalf("Answer of the wrong shape = %v, %v; want ErrInvalidResponse", n, err)
	}
	if st := m.Stats(); st.Held != 1 || st.Parked != 1 {
		t.Fatalf("stats while the task waits: %+v", st)
	}
	if n, err := c.Answer(map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}); n != 1 || err != nil {
		t.Fatalf("Answer = %v, %v", n, err)
	}
	if s, _ := c.Next(); s.Status != mrtr.Working {
		t.Fatalf("answered call is %s, want working", s.Status)
	}
	// M1: alice's answered, working task leaves her place free.
	if st := m.Stats(); st.Held != 0 || st.Parked != 0 || m.HeldCall(c.ID()) != nil {
		t.Errorf("stats with the task answered and working: %+v", st)
	}
	ask := req{params: map[string]any{"name": "ask"}, principal: "alice", caps: allCaps}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := m.Serve(ctx, ask.request(t), pluginRun(p, ask, nil))
	if err != nil || out.Input == nil {
		t.Fatalf("alice's MRTR ask while her task works: %+v, %v; want input_required", out, err)
	}
	c.Stop(errors.New("test over"))
	c.Release()
	if n, err := c.Answer(map[string]json.RawMessage{key: json.RawMessage(`{}`)}); n != 0 || err != nil {
		t.Errorf("Answer of an ended call = %v, %v; want 0, nil", n, err)
	}
}

// Answers to some of a round's keys reach their host imports at once:
// each answered key leaves the pending set, and the call stays
// InputRequired with the rest. (A Go Run: the PDK asks one question at a
// time, and this is the shape of a plugin that asks several at once.)
func TestAnswerPartial(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	got := make(chan string, 2)
	run := func(ctx context.Context, h plugin.Host) (any, error) {
		var wg sync.WaitGroup
		for _, q := range []string{"first", "second"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := h.Elicit(ctx, &mcp.ElicitParams{Message: q, RequestedSchema: schema})
				if err == nil {
					got <- q + "=" + res.Content["name"].(string)
				}
			}()
		}
		wg.Wait()
		return &mcp.CallToolResult{}, nil
	}
	r := req{params: map[string]any{"name": "two"}, caps: allCaps}
	c, _, err := m.Begin(context.Background(), r.request(t), run, always, func(*mrtr.Call) bool { return true })
	if c == nil || err != nil {
		t.Fatal(c, err)
	}
	var s mrtr.Snapshot
	for {
		var next <-chan struct{}
		s, next = c.Next()
		if len(s.InputRequests) == 2 {
			break
		}
		select {
		case <-next:
		case <-time.After(20 * time.Second):
			t.Fatalf("no two input requests: %+v", s)
		}
	}
	var first, second string
	for k, raw := range s.InputRequests {
		var v struct {
			Params struct{ Message string } `json:"params"`
		}
		json.Unmarshal(raw, &v)
		if v.Params.Message == "first" {
			first = k
		} else {
			second = k
		}
	}
	_, changed := c.Next()
	if n, err := c.Answer(map[string]json.RawMessage{first: json.RawMessage(`{"action":"accept","content":{"name":"a"}}`)}); n != 1 || err != nil {
		t.Fatalf("partial Answer = %d, %v", n, err)
	}
	select {
	case <-changed:
	default:
		t.Error("a partial answer did not wake Next's waiters")
	}
	s, _ = c.Next()
	if _, still := s.InputRequests[first]; still || len(s.InputRequests) != 1 || s.Status != mrtr.InputRequired {
		t.Errorf("after a partial answer: %+v; want input_required with %s only", s, second)
	}
	select {
	case g := <-got:
		if g != "first=a" {
			t.Errorf("delivered %q", g)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first answer did not reach its host import")
	}
	if n, err := c.Answer(map[string]json.RawMessage{first: json.RawMessage(`{"action":"accept","content":{"name":"again"}}`), second: json.RawMessage(`{"action":"accept","content":{"name":"b"}}`)}); n != 1 || err != nil {
		t.Fatalf("second Answer = %d, %v; want only the pending key delivered", n, err)
	}
	waitStatus(t, c, mrtr.Completed)
	if g := <-got; g != "second=b" {
		t.Errorf("delivered %q", g)
	}
	c.Release()
	if st := m.Stats(); st.Held != 0 || st.Parked != 0 {
		t.Errorf("stats after: %+v", st)
	}
}

// A kept call cancelled while it waits for input leaves the Manager's
// table when released, not when its round's park timeout ends; a kept
// call that failed while its plugin works on (its input request refused)
// has its execution ended by Release.
func TestBeginRelease(t *testing.T) {
	p := loadPlugin(t, 1)
	m := newManager(t, mrtr.Options{})
	c, _, _ := begin(t, m, p, req{params: map[string]any{"name": "ask"}}, always, true)
	if c == nil {
		t.Fatal("the call was not kept")
	}
	waitStatus(t, c, mrtr.InputRequired)
	c.Release() // running: nothing happens
	if m.HeldCall(c.ID()) == nil {
		t.Fatal("Release took a running call out of the table")
	}
	c.Stop(errors.New("cancelled by the test"))
	if m.HeldCall(c.ID()) == nil {
		t.Fatal("the cancelled call left the table before its round ended; the test shows nothing")
	}
	c.Release()
	if m.HeldCall(c.ID()) != nil {
		t.Error("the released call is still in the table")
	}
	eventually(t, "the instance is back", func() bool { inUse, _ := p.Stats(); return inUse == 0 })

	// M4: no elicitation capability: the ask fails the call, and the
	// plugin would sleep a minute more. It sleeps before it asks: a call
	// that has failed before Begin looks is answered directly, not kept
	// (CI once saw the ask fail first).
	r := sleepReq(500, true, 60_000)
	r.caps = &mcp.ClientCapabilities{}
	c, _, _ = begin(t, m, p, r, always, true)
	if c == nil {
		t.Fatal("the call was not kept")
	}
	s := waitStatus(t, c, mrtr.Failed)
	var ce *mrtr.CapabilityError
	if !errors.As(s.Err, &ce) {
		t.Fatalf("failed with %v, want a CapabilityError", s.Err)
	}
	eventually(t, "the plugin runs on after the failure", func() bool { inUse, _ := p.Stats(); return inUse == 1 })
	c.Release()
	eventually(t, "Release ended the plugin's execution", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
}

// DeriveKeys derives one key per state key, apart by label.
func TestDeriveKeys(t *testing.T) {
	other := []byte("another key of thirty-two bytes!")
	m := newManager(t, mrtr.Options{PreviousKeys: [][]byte{other}})
	a, b := m.DeriveKeys("a"), m.DeriveKeys("b")
	if len(a) != 2 || string(a[0]) == string(b[0]) || string(a[0]) == string(a[1]) || string(a[0]) == string(testKey) {
		t.Errorf("derived keys %x, %x", a, b)
	}
	n := newManager(t, mrtr.Options{Key: other})
	if string(n.DeriveKeys("a")[0]) != string(a[1]) {
		t.Error("the previous key's derivation differs from the same key's as current")
	}
}

// waitStatus follows c with Next until it has status want.
func waitStatus(t *testing.T, c *mrtr.Call, want mrtr.Status) mrtr.Snapshot {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s, next := c.Next()
		if s.Status == want {
			return s
		}
		if s.Status.Final() {
			t.Fatalf("call is %s (%v), want %s", s.Status, s.Err, want)
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("call still %s, want %s", s.Status, want)
		}
	}
}
