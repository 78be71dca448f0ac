package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// Tasks are capped per owner and per server; anonymous callers count per
// client key, not as one; a call that would be a task at a cap is
// answered directly.
func TestCaps(t *testing.T) {
	p := loadPlugin(t, 8)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{MaxTasks: 4, MaxTasksPerOwner: 2, Keep: time.Hour})
	anon := func(c string) tasks.Owner { return tasks.Owner{Client: c} }
	steps := []struct {
		owner tasks.Owner
		task  bool
	}{
		{anon("a"), true},
		{anon("a"), true},
		{anon("a"), false}, // a's cap
		{anon("b"), true},  // another client: its own cap
		{anon("b"), true},
		{anon("c"), false}, // the server's cap
	}
	for i, s := range steps {
		d, out, err := start(t, tb, p, s.owner, askCall(0), always)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if (d != nil) != s.task || (d == nil && out.Input == nil) { // at a cap: MRTR
			t.Fatalf("step %d (%s): task %+v, outcome %+v; want task %v", i, s.owner.Client, d, out, s.task)
		}
	}
	if st := tb.Stats(); st.Tasks != 4 || st.CapFallbacks != 2 {
		t.Errorf("stats at the caps %+v", st)
	}
}

// A finished task is forgotten after Keep: its id is then unknown, and
// its place under the caps and its result's bytes are free.
func TestForgottenAfterKeep(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, MaxTasksPerOwner: 1, Keep: 200 * time.Millisecond})
	d := mustTask(t, tb, p, alice, askCall(0), always)
	if d.TTLMs < 200 {
		t.Errorf("new task's ttlMs %d, want at least keep (200)", d.TTLMs)
	}
	l := listen(t, tb, alice, d.TaskID)
	answerTask(t, tb, alice, d.TaskID)
	end := next(t, l, "completed")
	created, _ := time.Parse(time.RFC3339Nano, end.CreatedAt)
	updated, _ := time.Parse(time.RFC3339Nano, end.LastUpdatedAt)
	if want := updated.Sub(created).Milliseconds() + 200; end.TTLMs < want-1 || end.TTLMs > want+1 {
		t.Errorf("finished task's ttlMs %d, want about %d (its end + keep)", end.TTLMs, want)
	}
	eventually(t, "the task is forgotten", func() bool {
		_, err := tb.Get(alice, d.TaskID)
		return err == tasks.ErrUnknownTask
	})
	if st := tb.Stats(); st.Tasks != 0 || st.Expired != 1 || st.KeptBytes != 0 {
		t.Errorf("stats after expiry %+v", st)
	}
	if d, out, err := start(t, tb, p, alice, askCall(0), always); d == nil {
		t.Errorf("no task after expiry freed the place: %+v, %v, %+v", out, err, tb.Stats())
	}
}

// A running task is cancelled after MaxRun, and an input_required one
// after the park timeout; their plugin calls end. Each case has a table
// of its own, with the other bound out of reach.
func TestExpiry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mo    mrtr.Options
		o     tasks.Options
		c     call
		cause error
	}{
		{"running task past max run", mrtr.Options{}, tasks.Options{Auth: true, MaxRun: 300 * time.Millisecond},
			sleepCall(60_000), tasks.ErrRunTimeout},
		{"input never answered", mrtr.Options{ParkTimeout: 300 * time.Millisecond}, tasks.Options{Auth: true, MaxRun: time.Hour},
			call{"sleep", map[string]any{"ms": 0, "ask": true}}, mrtr.ErrParkExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadPlugin(t, 1)
			tb, m := newTable(t, tc.mo, tc.o)
			d := mustTask(t, tb, p, alice, tc.c, always)
			end := waitFor(t, tb, alice, d.TaskID, "cancelled")
			if !errors.Is(end.Cause, tc.cause) || end.StatusMessage == "" {
				t.Errorf("cancelled with %v (%q), want %v", end.Cause, end.StatusMessage, tc.cause)
			}
			eventually(t, "the instance is free", func() bool { return inUse(p) == 0 })
			if st := m.Stats(); st.Held != 0 || st.Parked != 0 {
				t.Errorf("mrtr stats after %+v", st)
			}
			if st := tb.Stats(); st.Running != 0 || st.InputRequired != 0 || st.Cancelled != 1 {
				t.Errorf("tasks stats after %+v", st)
			}
		})
	}
}

// A result past MaxResultBytes fails its task with an error naming the
// limit. Kept results are bounded together (MaxKeptBytes) and per owner
// (MaxKeptBytesPerOwner): a task reserves MaxResultBytes of both when it
// is admitted, and a call whose reservation does not fit is answered
// directly with its result, as at a cap, instead of running as a task
// and failing for want of room (kept_full, before): no work is lost.
func TestResultBounds(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, MaxResultBytes: 8 << 10, MaxKeptBytes: 20 << 10, MaxKeptBytesPerOwner: 12 << 10, Keep: time.Hour})
	bob := tasks.Owner{Principal: "bob"}
	carol := tasks.Owner{Principal: "carol"}
	// padded answers after 300 ms with pad_kib KiB: a task of TaskAlways
	// if there is room for it, else a direct answer with its result. (A
	// call that ends before its request looks is answered directly
	// without meeting the bounds, which a call of 0 ms sometimes does
	// under load.)
	padded := func(kib int) call { return call{"sleep", map[string]any{"ms": 300, "pad_kib": kib}} }
	for _, tc := range []struct {
		name   string
		owner  tasks.Owner
		c      call
		status string // of the task; "" for a call answered directly
		reason string
	}{
		{"too large", alice, askCall(9), "failed", "result_too_large"},
		{"small result kept", alice, askCall(6), "completed", ""},
		{"past the owner's kept bytes", alice, padded(7), "", ""},
		{"another owner's result is kept", bob, askCall(7), "completed", ""},
		{"past the server's kept bytes", carol, padded(7), "", ""},
	} {
		if tc.status == "" {
			d, out, err := start(t, tb, p, tc.owner, tc.c, always)
			if d != nil || err != nil || out == nil || out.Result == nil {
				t.Fatalf("%s: task %+v, outcome %+v, %v; want the call answered directly with its result", tc.name, d, out, err)
			}
			if b, _ := json.Marshal(out.Result); len(b) < 7<<10 {
				t.Errorf("%s: a direct result of %d bytes", tc.name, len(b))
			}
			continue
		}
		d := mustTask(t, tb, p, tc.owner, tc.c, always)
		answerTask(t, tb, tc.owner, d.TaskID)
		got := waitFor(t, tb, tc.owner, d.TaskID, tc.status)
		if tc.reason == "" {
			if len(got.Result) < 6<<10 {
				t.Errorf("%s: result of %d bytes", tc.name, len(got.Result))
			}
			continue
		}
		if got.Error == nil || got.Error.Code != jsonrpc.CodeInternalError || reason(got) != tc.reason || !errors.Is(got.Cause, tasks.ErrResultTooLarge) || got.Result != nil || got.StatusMessage == "" {
			t.Errorf("%s: %+v, want a failed task for %s", tc.name, got, tc.reason)
		}
		b, _ := json.Marshal(got)
		var wire map[string]any
		json.Unmarshal(b, &wire)
		if e, _ := wire["error"].(map[string]any); e["code"] != float64(-32603) || e["data"] == nil || wire["Cause"] != nil {
			t.Errorf("%s: encoded %s", tc.name, b)
		}
		// The setting the error names is one an operator can set: a key
		// of the configuration's tasks section.
		var data struct{ Setting string }
		json.Unmarshal(got.Error.Data, &data)
		key, ok := strings.CutPrefix(data.Setting, "tasks.")
		if _, err := config.Parse([]byte("tasks:\n  "+key+": 1MiB\n"), "test.yaml", t.TempDir(), nil); !ok || err != nil || !strings.Contains(got.Error.Message, data.Setting) {
			t.Errorf("%s: the error names setting %q (%q): %v", tc.name, data.Setting, got.Error.Message, err)
		}
	}
	if st := tb.Stats(); st.TooLarge != 1 || st.KeptFull != 1 || st.KeptFullOwner != 1 || st.CapFallbacks != 0 ||
		st.KeptBytes < 13<<10 || st.KeptBytes > 14<<10 || st.ReservedBytes != 0 || st.Failed != 1 || st.Completed != 2 {
		t.Errorf("stats %+v", st)
	}
}

// Running tasks hold their results' room before any result is kept: with
// room for two results, a third call is answered directly while two
// tasks run, and becomes a task again once one has ended and its result
// left room.
func TestReservedRoom(t *testing.T) {
	p := loadPlugin(t, 3)
	const r = 8 << 10
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, MaxResultBytes: r, MaxKeptBytes: 2*r + r/2, MaxKeptBytesPerOwner: 2 * r, Keep: time.Hour})
	bob := tasks.Owner{Principal: "bob"}
	carol := tasks.Owner{Principal: "carol"}
	a := mustTask(t, tb, p, alice, askCall(1), always)
	mustTask(t, tb, p, bob, askCall(1), always)
	if st := tb.Stats(); st.ReservedBytes != 2*r || st.KeptBytes != 0 {
		t.Errorf("two running tasks: stats %+v; want %d bytes reserved", st, 2*r)
	}
	// Asking, the call answers directly over MRTR: input_required.
	if d, out, err := start(t, tb, p, carol, askCall(1), always); d != nil || err != nil || out == nil || out.Input == nil {
		t.Fatalf("a third owner's call with two results' room held: task %+v, outcome %+v, %v; want a direct answer", d, out, err)
	}
	answerTask(t, tb, alice, a.TaskID)
	waitFor(t, tb, alice, a.TaskID, "completed")
	if st := tb.Stats(); st.ReservedBytes != r || st.KeptBytes < 1<<10 || st.KeptBytes > 2<<10 || st.KeptFull != 1 {
		t.Errorf("after one ended: stats %+v", st)
	}
	mustTask(t, tb, p, carol, askCall(1), always)
}

// Every end of a task gives back the room it reserved for its result,
// once: whatever the ends of many tasks, the reserved bytes return to 0,
// the kept bytes are those of the kept results, and Close frees both.
func TestReservationReleased(t *testing.T) {
	const r = 4 << 10
	const n = 12
	fn := func(d time.Duration, v any, err error) mrtr.Run {
		return func(ctx context.Context, _ plugin.Host) (any, error) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return v, err
		}
	}
	small := map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}
	large := map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", 2*r)}}}
	for _, tc := range []struct {
		name string
		mo   mrtr.Options
		o    tasks.Options
		run  func(p *plugin.Plugin) mrtr.Run // nil: the plugin's long sleep
		end  func(tb *tasks.Table, ids []string)
		kept bool // completed tasks keep results
	}{
		{name: "completed", run: func(*plugin.Plugin) mrtr.Run { return fn(30*time.Millisecond, small, nil) }, kept: true},
		{name: "failed", run: func(*plugin.Plugin) mrtr.Run { return fn(30*time.Millisecond, nil, errors.New("boom")) }},
		{name: "result too large", run: func(*plugin.Plugin) mrtr.Run { return fn(30*time.Millisecond, large, nil) }},
		{name: "result not an object", run: func(*plugin.Plugin) mrtr.Run { return fn(30*time.Millisecond, "text", nil) }},
		{name: "ended before it was followed", run: func(*plugin.Plugin) mrtr.Run { return fn(0, small, nil) }, kept: true},
		{name: "cancelled", end: func(tb *tasks.Table, ids []string) {
			for _, id := range ids {
				tb.Cancel(alice, id)
			}
		}},
		{name: "run timeout", o: tasks.Options{MaxRun: 200 * time.Millisecond}},
		{name: "input never answered", mo: mrtr.Options{ParkTimeout: 200 * time.Millisecond},
			run: func(p *plugin.Plugin) mrtr.Run { return toolRun(p, askCall(0)) }},
		{name: "drained", end: func(tb *tasks.Table, _ []string) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			tb.Drain(ctx)
		}},
		{name: "closed", end: func(tb *tasks.Table, _ []string) { tb.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadPlugin(t, 4)
			o := tc.o
			o.Auth, o.MaxResultBytes, o.MaxTasksPerOwner, o.Keep = true, r, 2*n, time.Hour
			tb, _ := newTable(t, tc.mo, o)
			run := toolRun(p, sleepCall(60_000))
			if tc.run != nil {
				run = tc.run(p)
			}
			raw, _ := json.Marshal(map[string]any{"name": "sleep", "arguments": map[string]any{}})
			req := mrtr.Request{Method: "tools/call", Params: raw, Principal: alice.Principal, Capabilities: allCaps}
			var ids []string
			for range n {
				d, _, err := tb.Call(context.Background(), req, "", run, always)
				if err != nil {
					t.Fatal(err)
				}
				if d != nil { // a call that ended at once may answer directly
					ids = append(ids, d.TaskID)
				}
			}
			if tc.run == nil {
				if st := tb.Stats(); st.ReservedBytes != int64(len(ids))*r || len(ids) != n {
					t.Errorf("%d running tasks: stats %+v; want %d bytes reserved", len(ids), st, len(ids)*r)
				}
			}
			if tc.end != nil {
				tc.end(tb, ids)
			}
			eventually(t, "no task running", func() bool { return tb.Stats().Running == 0 })
			st := tb.Stats()
			var kept int64
			for _, id := range ids {
				if d, err := tb.Get(alice, id); err == nil {
					kept += int64(len(d.Result))
					if (d.Result != nil) != tc.kept {
						t.Errorf("task %s: %d result bytes (%s)", d.Status, len(d.Result), d.StatusMessage)
					}
				}
			}
			if st.ReservedBytes != 0 || st.KeptBytes != kept || int(st.Completed+st.Failed+st.Cancelled) != len(ids) {
				t.Errorf("after %d tasks ended: stats %+v; want 0 bytes reserved, %d kept", len(ids), st, kept)
			}
			tb.Close()
			if st := tb.Stats(); st.ReservedBytes != 0 || st.KeptBytes != 0 || st.Tasks != 0 {
				t.Errorf("after Close: stats %+v", st)
			}
		})
	}
}

// Drain lets running tasks finish until its context ends, then cancels
// the rest with a status a client reads at once; afterwards no call
// becomes a task, and the plugin's instances are free.
func TestDrain(t *testing.T) {
	t.Run("running tasks finish", func(t *testing.T) {
		p := loadPlugin(t, 2)
		tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
		quick := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true, "then_ms": 100}}, always)
		answerTask(t, tb, alice, quick.TaskID)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if n := tb.Drain(ctx); n != 0 {
			t.Errorf("Drain cancelled %d tasks, want 0", n)
		}
		if ctx.Err() != nil {
			t.Error("Drain waited for its context, not for the task")
		}
		if got, err := tb.Get(alice, quick.TaskID); err != nil || got.Status != "completed" {
			t.Errorf("after drain: %+v, %v; want completed", got, err)
		}
	})
	t.Run("the rest cancelled", func(t *testing.T) {
		p := loadPlugin(t, 3)
		tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
		long := mustTask(t, tb, p, alice, sleepCall(60_000), always)
		asking := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true}}, always)
		waitFor(t, tb, alice, asking.TaskID, "input_required")
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if n := tb.Drain(ctx); n != 2 {
			t.Errorf("Drain cancelled %d tasks, want 2", n)
		}
		for _, id := range []string{long.TaskID, asking.TaskID} {
			got, err := tb.Get(alice, id) // at once: no wait for a follower
			if err != nil || got.Status != "cancelled" || !errors.Is(got.Cause, tasks.ErrDraining) {
				t.Errorf("after drain: %+v, %v; want cancelled (ErrDraining)", got, err)
			}
		}
		eventually(t, "the instances are free", func() bool { return inUse(p) == 0 })
		if d, out, err := start(t, tb, p, alice, sleepCall(50), always); d != nil || err != nil || out == nil {
			t.Errorf("a long call after drain: %+v, %+v, %v; want a direct answer", d, out, err)
		}
		if st := tb.Stats(); st.Drained != 2 || st.Running != 0 {
			t.Errorf("stats %+v", st)
		}
		// A client may still listen for the outcome while the server drains.
		l := listen(t, tb, alice, long.TaskID)
		if e := <-l.Events(); e.Status != "cancelled" {
			t.Errorf("listen during the drain: %+v", e)
		}
	})
}

// Close cancels the running tasks, forgets them and closes every
// listener: a reader ranging over Events ends.
func TestClose(t *testing.T) {
	p := loadPlugin(t, 1)
	m, err := mrtr.New(mrtr.Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tb, err := tasks.New(m, tasks.Options{Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	d := mustTask(t, tb, p, alice, sleepCall(60_000), always)
	l, _, err := tb.Listen(alice, []string{d.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		for range l.Events() {
		}
		close(ended)
	}()
	tb.Close()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener's channel is still open after Close")
	}
	if st := tb.Stats(); st.Listeners != 0 || st.Tasks != 0 || st.Running != 0 {
		t.Errorf("stats after Close %+v", st)
	}
	eventually(t, "the instance is free", func() bool { return inUse(p) == 0 })
	l.Close() // after the table's Close: nothing happens
}

// A listener gets each status change of the tasks it may see, without
// ever holding up the table: past its buffer, events are dropped and
// counted. Listeners are capped per owner and per server; an id given
// twice is followed once, and junk ids do not push real ones out.
func TestListen(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, ListenerBuffer: 8, MaxListeners: 3, MaxListenersPerOwner: 2, MaxTasksPerOwner: 13, MaxResultBytes: 64 << 10})
	d := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true}}, always)
	bob := tasks.Owner{Principal: "bob"}
	theirs := mustTask(t, tb, p, bob, sleepCall(60_000), always)
	ids := []string{theirs.TaskID}
	for range 20 { // more than MaxTasksPerOwner
		ids = append(ids, "nonsense")
	}
	ids = append(ids, d.TaskID, d.TaskID)
	l, accepted, err := tb.Listen(alice, ids)
	if err != nil || len(accepted) != 1 || accepted[0] != d.TaskID {
		t.Fatalf("Listen = %v, %v; want only alice's task accepted, once", accepted, err)
	}
	in := next(t, l, "input_required")
	for k := range in.InputRequests {
		if err := tb.Update(alice, d.TaskID, map[string]json.RawMessage{k: json.RawMessage(`{"action":"decline"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	done := next(t, l, "completed")
	if got, _ := tb.Get(alice, d.TaskID); string(got.Result) != string(done.Result) || got.LastUpdatedAt != done.LastUpdatedAt {
		t.Errorf("the event %+v is not what tasks/get answers: %+v", done, got)
	}
	// Caps: alice has 2, the server 3.
	l2, _, err := tb.Listen(alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.Listen(alice, nil); !errors.Is(err, tasks.ErrTooManyListeners) {
		t.Errorf("alice's third listener: %v", err)
	}
	l3, _, err := tb.Listen(bob, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.Listen(tasks.Owner{Principal: "carol"}, nil); !errors.Is(err, tasks.ErrTooManyListeners) {
		t.Errorf("the server's fourth listener: %v", err)
	}
	l2.Close()
	l3.Close()
	l.Close()
	l.Close()
	if st := tb.Stats(); st.Listeners != 0 || st.ListenRefusals != 2 {
		t.Errorf("stats %+v", st)
	}
	// A listener that never reads loses events past its buffer (8); the
	// table goes on.
	bobs := []string{theirs.TaskID}
	for range 12 {
		bobs = append(bobs, mustTask(t, tb, p, bob, askCall(0), always).TaskID)
	}
	slow, acc, err := tb.Listen(bob, bobs)
	if err != nil || len(acc) != 13 {
		t.Fatal(acc, err)
	}
	defer slow.Close()
	for _, id := range bobs {
		if err := tb.Cancel(bob, id); err != nil {
			t.Fatal(err)
		}
	}
	// 13 views at once and 13 cancels at least: 8 kept, 18 dropped or more.
	if n := len(slow.Events()); n != 8 || slow.Dropped() < 18 {
		t.Errorf("%d events waiting and %d dropped, want 8 and at least 18", n, slow.Dropped())
	}
	if st := tb.Stats(); st.DroppedEvents != slow.Dropped() {
		t.Errorf("stats %+v", st)
	}
}

// A listener lets go of a task the table forgot, and of its views still
// in its buffer, with their result: a listener that never reads keeps no
// result the table no longer counts. Another task's views stay.
func TestListenerLetsGo(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, Keep: 100 * time.Millisecond})
	d := mustTask(t, tb, p, alice, askCall(64), always)
	other := mustTask(t, tb, p, alice, sleepCall(60_000), always)
	l, _, err := tb.Listen(alice, []string{d.TaskID, other.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	answerTask(t, tb, alice, d.TaskID)
	eventually(t, "the task is forgotten", func() bool { return tb.Stats().Tasks == 1 })
	if st := tb.Stats(); st.KeptBytes != 0 {
		t.Errorf("stats %+v", st)
	}
	if n := tasks.Following(l); n != 1 {
		t.Errorf("the listener follows %d tasks, want 1 (not the forgotten one)", n)
	}
	if err := tb.Cancel(alice, other.TaskID); err != nil {
		t.Fatal(err)
	}
	var others []string
	for len(l.Events()) > 0 {
		e := <-l.Events()
		if e.TaskID == d.TaskID {
			t.Fatalf("a view of the forgotten task is still buffered (%s, %d result bytes)", e.Status, len(e.Result))
		}
		others = append(others, e.Status)
	}
	if len(others) == 0 || others[len(others)-1] != "cancelled" || l.Dropped() == 0 {
		t.Errorf("the other task's views %v, %d dropped", others, l.Dropped())
	}
}

// Gets, updates and cancels racing on the same tasks, with listeners
// coming and going, then a drain and a close, leave each task in one
// final state, with every instance and place freed.
func TestConcurrentOperations(t *testing.T) {
	p := loadPlugin(t, 4)
	tb, m := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, Keep: time.Minute})
	var ids []string
	for range 8 {
		ids = append(ids, mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 20, "ask": true}}, always).TaskID)
	}
	done := make(chan struct{})
	for w := range 5 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 300; i++ {
				id := ids[(i+w)%len(ids)]
				if w == 4 {
					if l, _, err := tb.Listen(alice, ids); err == nil {
						l.Close()
					}
					continue
				}
				d, err := tb.Get(alice, id)
				if err != nil {
					t.Error(err)
					return
				}
				for k := range d.InputRequests {
					tb.Update(alice, id, map[string]json.RawMessage{k: json.RawMessage(`{"action":"accept","content":{"name":"w"}}`)})
				}
				if w == 3 && i%5 == 0 {
					tb.Cancel(alice, id)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for range 5 {
		<-done
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tb.Drain(ctx)
	for _, id := range ids {
		d, err := tb.Get(alice, id)
		if err != nil || (d.Status != "completed" && d.Status != "cancelled") {
			t.Errorf("after the drain: %+v, %v", d, err)
		}
	}
	eventually(t, "the instances are free", func() bool { return inUse(p) == 0 })
	if st := tb.Stats(); st.Running != 0 || st.InputRequired != 0 || st.Completed+st.Cancelled != 8 {
		t.Errorf("stats %+v", st)
	}
	eventually(t, "no call is held", func() bool { st := m.Stats(); return st.Held == 0 && st.Parked == 0 })
	tb.Close()
	if st := tb.Stats(); st.Tasks != 0 || st.Listeners != 0 {
		t.Errorf("stats after Close %+v", st)
	}
}
