package mrtr_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// begin is Begin for r, run on p, with keep answering keepIt.
func begin(t *testing.T, m *mrtr.Manager, p *plugin.Plugin, r req, within time.Duration, keepIt bool) (*mrtr.Call, answer, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r.caps == nil {
		r.caps = allCaps
	}
	kept := 0
	c, out, err := m.Begin(ctx, r.request(t), pluginRun(p, r, nil), within, func(*mrtr.Call) bool { kept++; return keepIt })
	return c, answer{out, err}, kept
}

// Begin answers a call that ends or asks within the threshold as Serve
// does, asks keep only for one still running then, and leaves a kept
// call running, detached, for Next, Answer and Cancel.
func TestBegin(t *testing.T) {
	p := loadPlugin(t, 4)
	m := newManager(t, mrtr.Options{})
	sleep := func(ms int, ask bool) req {
		return req{params: map[string]any{"name": "sleep", "arguments": map[string]any{"ms": ms, "ask": ask}}}
	}
	for _, tc := range []struct {
		name   string
		r      req
		within time.Duration
		keep   bool
		want   string // "result", "input", "call"
	}{
		{"quick call answers directly", req{params: map[string]any{"name": "count"}}, 5 * time.Second, true, "result"},
		{"ask before the threshold is MRTR", req{params: map[string]any{"name": "ask"}}, 5 * time.Second, true, "input"},
		{"long call is kept", sleep(3000, false), 50 * time.Millisecond, true, "call"},
		{"long call at a cap is waited for", sleep(300, false), 50 * time.Millisecond, false, "result"},
		{"threshold zero keeps at once", sleep(300, false), 0, true, "call"},
		{"threshold zero keeps a call that asks at once", req{params: map[string]any{"name": "ask"}}, 0, true, "call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a, kept := begin(t, m, p, tc.r, tc.within, tc.keep)
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
				c.Cancel(errors.New("test over"))
			}
		})
	}
	// The cancelled calls are back in the pool; the parked ask is, once
	// the Manager closes.
	eventually(t, "the cancelled calls' instances are back", func() bool { inUse, _ := p.Stats(); return inUse == 1 })
	if st := m.Stats(); st.Parked != 1 || st.Held != 1 {
		t.Errorf("stats with one parked ask: %+v", st)
	}
	m.Close()
	eventually(t, "every instance is back", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
}

// A request that ends before the threshold cancels its call, as in
// Serve: nobody would get its result, and keep is never asked.
func TestBeginRequestEnds(t *testing.T) {
	p := loadPlugin(t, 1)
	m := newManager(t, mrtr.Options{})
	r := req{params: map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 60_000}}, caps: allCaps}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c, out, err := m.Begin(ctx, r.request(t), pluginRun(p, r, nil), 10*time.Second, func(*mrtr.Call) bool {
		t.Error("keep asked")
		return true
	})
	if c != nil || out != nil || !errors.Is(err, mrtr.ErrRequestEnded) {
		t.Fatalf("Begin = %v, %+v, %v; want ErrRequestEnded", c, out, err)
	}
	eventually(t, "the instance is back", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
}

// A kept call that asks for input is InputRequired with its request;
// Answer resumes the same execution, which completes, and Next reports
// each change without polling.
func TestBeginAnswer(t *testing.T) {
	p := loadPlugin(t, 2)
	m := newManager(t, mrtr.Options{})
	c, _, _ := begin(t, m, p, req{params: map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 100, "ask": true}}}, 10*time.Millisecond, true)
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
	if ok, err := c.Answer(map[string]json.RawMessage{"other": json.RawMessage(`{}`)}); ok || err != nil {
		t.Fatalf("Answer without the pending key = %v, %v; want false, nil", ok, err)
	}
	if ok, err := c.Answer(map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"age":3}}`)}); ok || !errors.Is(err, mrtr.ErrInvalidResponse) {
		t.Fatalf("Answer of the wrong shape = %v, %v; want ErrInvalidResponse", ok, err)
	}
	if ok, err := c.Answer(map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}); !ok || err != nil {
		t.Fatalf("Answer = %v, %v", ok, err)
	}
	s = waitStatus(t, c, mrtr.Completed)
	var got map[string]any
	b, _ := json.Marshal(s.Result)
	json.Unmarshal(b, &got)
	text := got["content"].([]any)[0].(map[string]any)["text"].(string)
	if v := decoded(t, text); v["content"].(map[string]any)["name"] != "Ada" {
		t.Errorf("result %s, want the answer in it", text)
	}
	if ok, err := c.Answer(map[string]json.RawMessage{key: json.RawMessage(`{}`)}); ok || err != nil {
		t.Errorf("Answer of a completed call = %v, %v; want false, nil", ok, err)
	}
	eventually(t, "the call left the table", func() bool { return m.Call(c.ID()) == nil })
	if st := m.Stats(); st.Held != 0 || st.Parked != 0 {
		t.Errorf("stats after: %+v", st)
	}
}

// A kept call cancelled while it waits for input leaves the Manager's
// table when released, not when its round's park timeout ends.
func TestBeginRelease(t *testing.T) {
	p := loadPlugin(t, 1)
	m := newManager(t, mrtr.Options{})
	c, _, _ := begin(t, m, p, req{params: map[string]any{"name": "ask"}}, 0, true)
	if c == nil {
		t.Fatal("the call was not kept")
	}
	waitStatus(t, c, mrtr.InputRequired)
	c.Release() // running: nothing happens
	if m.Call(c.ID()) == nil {
		t.Fatal("Release took a running call out of the table")
	}
	c.Cancel(errors.New("cancelled by the test"))
	if m.Call(c.ID()) == nil {
		t.Fatal("the cancelled call left the table before its round ended; the test shows nothing")
	}
	c.Release()
	if m.Call(c.ID()) != nil {
		t.Error("the released call is still in the table")
	}
	eventually(t, "the instance is back", func() bool { inUse, _ := p.Stats(); return inUse == 0 })
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
