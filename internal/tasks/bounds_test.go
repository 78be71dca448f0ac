package tasks_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// Tasks are capped per owner and per server; anonymous callers count per
// client key, not as one; a call past its threshold at a cap is answered
// directly, and a task forgotten after Keep frees its place.
func TestCaps(t *testing.T) {
	p := loadPlugin(t, 8)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{MaxTasks: 4, MaxTasksPerOwner: 2, Keep: 2 * time.Second})
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
		d, out, err := start(t, tb, p, s.owner, sleepCall(150), 20*time.Millisecond)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if (d != nil) != s.task || (d == nil && out.Result == nil) {
			t.Fatalf("step %d (%s): task %+v, outcome %+v; want task %v", i, s.owner.Client, d, out, s.task)
		}
	}
	if st := tb.Stats(); st.Tasks != 4 || st.CapFallbacks != 2 {
		t.Errorf("stats at the caps %+v", st)
	}
	// Finished, kept for Keep, then forgotten: the places are free.
	eventually(t, "the tasks are forgotten", func() bool { return tb.Stats().Tasks == 0 })
	if st := tb.Stats(); st.Expired != 4 || st.KeptBytes != 0 {
		t.Errorf("stats after expiry %+v", st)
	}
	if d, _, _ := start(t, tb, p, anon("c"), sleepCall(0), 0); d == nil {
		t.Error("no task after expiry freed the places")
	}
}

// Expiry frees what a task holds: a finished task is forgotten after
// Keep (its id is then unknown); a running task is cancelled after
// MaxRun, and an input_required one after the park timeout, and their
// plugin calls end.
func TestExpiry(t *testing.T) {
	p := loadPlugin(t, 1)
	tb, m := newTable(t, mrtr.Options{ParkTimeout: 200 * time.Millisecond}, tasks.Options{Auth: true, Keep: 200 * time.Millisecond, MaxRun: 400 * time.Millisecond})
	for _, tc := range []struct {
		name    string
		c       call
		status  string
		message string
	}{
		{"finished task is forgotten", sleepCall(0), "completed", ""},
		{"running task past max run", sleepCall(60_000), "cancelled", "tasks.max_run"},
		{"input never answered", call{"sleep", map[string]any{"ms": 0, "ask": true}}, "cancelled", "park timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustTask(t, tb, p, alice, tc.c, 0)
			if d.TTLMs < 200 || d.TTLMs > 200+100 {
				t.Errorf("new task's ttlMs %d, want about keep (200)", d.TTLMs)
			}
			end := waitFor(t, tb, alice, d.TaskID, tc.status)
			if !contains(end.StatusMessage, tc.message) {
				t.Errorf("statusMessage %q, want it to name %q", end.StatusMessage, tc.message)
			}
			created, _ := time.Parse(time.RFC3339Nano, end.CreatedAt)
			updated, _ := time.Parse(time.RFC3339Nano, end.LastUpdatedAt)
			if want := updated.Sub(created).Milliseconds() + 200; end.TTLMs < want-1 || end.TTLMs > want+1 {
				t.Errorf("finished task's ttlMs %d, want about %d (its end + keep)", end.TTLMs, want)
			}
			eventually(t, "the instance is free", func() bool { return inUse(p) == 0 })
			eventually(t, "the task is forgotten", func() bool {
				_, err := tb.Get(alice, d.TaskID)
				return err == tasks.ErrUnknownTask
			})
		})
	}
	if st := m.Stats(); st.Held != 0 || st.Parked != 0 || st.Expired != 1 {
		t.Errorf("mrtr stats after %+v", st)
	}
	if st := tb.Stats(); st.Tasks != 0 || st.Running != 0 || st.InputRequired != 0 || st.Expired != 3 || st.Cancelled != 2 {
		t.Errorf("tasks stats after %+v", st)
	}
}

// A result past MaxResultBytes fails its task with an error naming the
// limit; results past MaxKeptBytes together fail theirs too, until kept
// ones are forgotten.
func TestResultBounds(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, MaxResultBytes: 8 << 10, MaxKeptBytes: 12 << 10, Keep: 500 * time.Millisecond})
	pad := func(kib int) call { return call{"sleep", map[string]any{"ms": 0, "pad_kib": kib}} }
	for _, tc := range []struct {
		name   string
		c      call
		status string
		says   string
	}{
		{"small result kept", pad(6), "completed", ""},
		{"too large", pad(9), "failed", "tasks.max_result_bytes"},
		{"past the kept total", pad(7), "failed", "tasks.max_kept_bytes"},
	} {
		d := mustTask(t, tb, p, alice, tc.c, 0)
		got := waitFor(t, tb, alice, d.TaskID, tc.status)
		if tc.says == "" {
			if len(got.Result) < 6<<10 {
				t.Errorf("%s: result of %d bytes", tc.name, len(got.Result))
			}
			continue
		}
		if got.Error == nil || got.Error.Code != jsonrpc.CodeInternalError || !contains(got.Error.Message, tc.says) || got.Result != nil {
			t.Errorf("%s: %+v, want a failed task whose error names %s", tc.name, got, tc.says)
		}
		b, _ := json.Marshal(got)
		if !contains(string(b), `"error":{"code":-32603,"message":`) {
			t.Errorf("%s: encoded %s", tc.name, b)
		}
	}
	if st := tb.Stats(); st.TooLarge != 1 || st.KeptFull != 1 || st.KeptBytes < 6<<10 || st.KeptBytes > 7<<10 {
		t.Errorf("stats %+v", st)
	}
	eventually(t, "the kept result is forgotten", func() bool { return tb.Stats().KeptBytes == 0 })
	d := mustTask(t, tb, p, alice, pad(7), 0)
	waitFor(t, tb, alice, d.TaskID, "completed")
}

// Drain lets running tasks finish until its context ends, then cancels
// the rest with a status a client reads; afterwards no call becomes a
// task, and the plugin's instances are free.
func TestDrain(t *testing.T) {
	p := loadPlugin(t, 3)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true})
	quick := mustTask(t, tb, p, alice, sleepCall(100), 0)
	long := mustTask(t, tb, p, alice, sleepCall(60_000), 0)
	asking := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true}}, 0)
	waitFor(t, tb, alice, asking.TaskID, "input_required")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	if n := tb.Drain(ctx); n != 2 {
		t.Errorf("Drain cancelled %d tasks, want 2", n)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Drain took %s", took)
	}
	for _, tc := range []struct {
		id, status, says string
	}{
		{quick.TaskID, "completed", ""},
		{long.TaskID, "cancelled", "shutting down"},
		{asking.TaskID, "cancelled", "shutting down"},
	} {
		got, err := tb.Get(alice, tc.id)
		if err != nil || got.Status != tc.status || !contains(got.StatusMessage, tc.says) {
			t.Errorf("after drain: %+v, %v; want %s (%q)", got, err, tc.status, tc.says)
		}
	}
	eventually(t, "the instances are free", func() bool { return inUse(p) == 0 })
	if d, out, err := start(t, tb, p, alice, sleepCall(50), 0); d != nil || err != nil || out == nil {
		t.Errorf("a long call after drain: %+v, %+v, %v; want a direct answer", d, out, err)
	}
	if st := tb.Stats(); st.Drained != 2 || st.Running != 0 {
		t.Errorf("stats %+v", st)
	}
	// A client may still listen for the outcome while the server drains.
	l, accepted, err := tb.Listen(alice, []string{long.TaskID})
	if err != nil || len(accepted) != 1 || (<-l.Events()).Status != "cancelled" {
		t.Errorf("listen during the drain: %v, %v", accepted, err)
	}
	l.Close()
}

// A listener gets each status change of the tasks it may see, without
// ever holding up the table: past its buffer, events are dropped and
// counted. Listeners are capped per owner and per server.
func TestListen(t *testing.T) {
	p := loadPlugin(t, 2)
	tb, _ := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, ListenerBuffer: 8, MaxListeners: 3, MaxListenersPerOwner: 2})
	d := mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 0, "ask": true}}, 0)
	theirs := mustTask(t, tb, p, tasks.Owner{Principal: "bob"}, sleepCall(60_000), 0)
	l, accepted, err := tb.Listen(alice, []string{d.TaskID, theirs.TaskID, "nonsense"})
	if err != nil || len(accepted) != 1 || accepted[0] != d.TaskID {
		t.Fatalf("Listen = %v, %v; want only alice's task accepted", accepted, err)
	}
	next := func(want string) *tasks.Detailed {
		t.Helper()
		for {
			select {
			case e := <-l.Events():
				if e.TaskID != d.TaskID {
					t.Fatalf("event of task %s", e.TaskID)
				}
				if e.Status == want {
					return e
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s event", want)
			}
		}
	}
	in := next("input_required")
	for k := range in.InputRequests {
		if err := tb.Update(alice, d.TaskID, map[string]json.RawMessage{k: json.RawMessage(`{"action":"decline"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	done := next("completed")
	if got, _ := tb.Get(alice, d.TaskID); string(got.Result) != string(done.Result) || got.LastUpdatedAt != done.LastUpdatedAt {
		t.Errorf("the event %+v is not what tasks/get answers: %+v", done, got)
	}
	// Caps: alice has 2, the server 3.
	l2, _, err := tb.Listen(alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.Listen(alice, nil); err == nil || !contains(err.Error(), "limit per client") {
		t.Errorf("alice's third listener: %v", err)
	}
	l3, _, err := tb.Listen(tasks.Owner{Principal: "bob"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.Listen(tasks.Owner{Principal: "carol"}, nil); err == nil || !contains(err.Error(), "tasks.max_listeners") {
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
	bob := tasks.Owner{Principal: "bob"}
	ids := []string{theirs.TaskID}
	for range 12 {
		ids = append(ids, mustTask(t, tb, p, bob, sleepCall(100), 0).TaskID)
	}
	slow, acc, err := tb.Listen(bob, ids)
	if err != nil || len(acc) != 13 {
		t.Fatal(acc, err)
	}
	defer slow.Close()
	if err := tb.Cancel(bob, theirs.TaskID); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[1:] {
		waitFor(t, tb, bob, id, "completed")
	}
	// 13 views at once, then at least one change each: 8 kept.
	if n := len(slow.Events()); n != 8 || slow.Dropped() < 18-8 {
		t.Errorf("%d events waiting and %d dropped, want 8 and at least 10", n, slow.Dropped())
	}
	if st := tb.Stats(); st.DroppedEvents != slow.Dropped() {
		t.Errorf("stats %+v", st)
	}
}

// Gets, updates and cancels racing on the same tasks leave each in one
// final state, with every instance and place freed.
func TestConcurrentOperations(t *testing.T) {
	p := loadPlugin(t, 4)
	tb, m := newTable(t, mrtr.Options{}, tasks.Options{Auth: true, Keep: time.Minute})
	var ids []string
	for range 8 {
		ids = append(ids, mustTask(t, tb, p, alice, call{"sleep", map[string]any{"ms": 20, "ask": true}}, 0).TaskID)
	}
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 400; i++ {
				id := ids[(i+w)%len(ids)]
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
	for range 4 {
		<-done
	}
	for _, id := range ids {
		tb.Cancel(alice, id)
		eventually(t, "the task is final", func() bool {
			d, _ := tb.Get(alice, id)
			return d.Status == "completed" || d.Status == "cancelled"
		})
	}
	eventually(t, "the instances are free", func() bool { return inUse(p) == 0 })
	if st := tb.Stats(); st.Running != 0 || st.InputRequired != 0 || st.Completed+st.Cancelled != 8 {
		t.Errorf("stats %+v", st)
	}
	eventually(t, "no call is held", func() bool { st := m.Stats(); return st.Held == 0 && st.Parked == 0 })
}
