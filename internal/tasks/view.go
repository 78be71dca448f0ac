package tasks

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Detailed is the extension's DetailedTask: a task's state as tasks/get
// answers it and notifications/tasks carries it. The edge adds
// resultType ("task" for a CreateTaskResult, "complete" for tasks/get)
// and _meta. Its fields are shared with the table: treat them as read
// only.
type Detailed struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
	// InputRequests are the outstanding requests of an input_required
	// task: key -> {"method": ..., "params": ...}, as in MRTR.
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	// Result is a completed task's result (the CallToolResult).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is a failed task's JSON-RPC error.
	Error *jsonrpc.Error `json:"error,omitempty"`
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func (tk *task) view() *Detailed {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return tk.viewLocked()
}

// viewLocked returns the task's view. Its ttlMs, counted from createdAt,
// never shrinks, and the task is kept at least that long (the extension:
// a task stays readable for its ttlMs): while it runs, the time it has
// run plus Options.Keep; once finished, its run plus Keep, which is when
// it is forgotten.
func (tk *task) viewLocked() *Detailed {
	o := &tk.t.o
	end := tk.finished
	if end.IsZero() {
		if end = o.Now(); end.Before(tk.created) {
			end = tk.created
		}
	}
	ttl := end.Sub(tk.created) + o.Keep
	d := &Detailed{
		TaskID:         tk.id,
		Status:         string(tk.status),
		StatusMessage:  tk.message,
		CreatedAt:      stamp(tk.created),
		LastUpdatedAt:  stamp(tk.updated),
		TTLMs:          ttl.Milliseconds(),
		PollIntervalMs: o.PollInterval.Milliseconds(),
		InputRequests:  tk.inputs,
		Result:         tk.result,
		Error:          tk.errObj,
	}
	return d
}

// Listener receives the views of some tasks each time their status
// changes, for notifications/tasks on a subscriptions/listen stream. The
// table never waits for it: an event its buffer has no room for is
// dropped and counted (Dropped, Stats.DroppedEvents), and the client
// reads the task's state with tasks/get.
type Listener struct {
	t     *Table
	owner string
	tasks []*task

	mu     sync.Mutex // guards closed and sends on ch
	ch     chan *Detailed
	closed bool
	drops  uint64
}

// Listen returns a listener for those of ids that o may see, and those
// ids: the others are left out with no sign of why, as tasks/get does.
// The listener gets the current view of each at once, then each change.
// Listeners count against Options.MaxListeners and
// MaxListenersPerOwner until closed (ErrTooManyListeners past them); ids
// past MaxTasksPerOwner are left out, as no owner has more tasks. An
// owner who may have no task gets a listener of nothing.
func (t *Table) Listen(o Owner, ids []string) (*Listener, []string, error) {
	l := &Listener{t: t, ch: make(chan *Detailed, t.o.ListenerBuffer)}
	key, ok := t.ownerKey(o)
	if !ok {
		return l, nil, nil
	}
	t.mu.Lock()
	switch {
	case t.shut:
		t.mu.Unlock()
		return nil, nil, ErrClosed
	case t.listeners >= t.o.MaxListeners:
		t.mu.Unlock()
		t.stats.listenRefusals.Add(1)
		return nil, nil, fmt.Errorf("%w: %d listen on this server, its limit (tasks.max_listeners); poll with tasks/get instead", ErrTooManyListeners, t.o.MaxListeners)
	case t.perListen[key] >= t.o.MaxListenersPerOwner:
		t.mu.Unlock()
		t.stats.listenRefusals.Add(1)
		return nil, nil, fmt.Errorf("%w: you have %d, the limit per client (tasks.max_listeners_per_client); close one, or poll with tasks/get", ErrTooManyListeners, t.o.MaxListenersPerOwner)
	}
	t.listeners++
	t.perListen[key]++
	l.owner = key
	t.mu.Unlock()
	if len(ids) > t.o.MaxTasksPerOwner {
		ids = ids[:t.o.MaxTasksPerOwner] // nobody has more tasks to follow
	}
	var accepted []string
	for _, id := range ids {
		tk, err := t.lookup(o, id)
		if err != nil {
			continue
		}
		tk.mu.Lock()
		if tk.subs == nil {
			tk.subs = map[*Listener]struct{}{}
		}
		tk.subs[l] = struct{}{}
		l.send(tk.viewLocked()) // the state now, before any later change
		tk.mu.Unlock()
		l.tasks = append(l.tasks, tk)
		accepted = append(accepted, id)
	}
	return l, accepted, nil
}

// Events returns the channel the views come on; it is closed by Close.
func (l *Listener) Events() <-chan *Detailed { return l.ch }

// Dropped returns how many events this listener lost to a full buffer.
func (l *Listener) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drops
}

// send hands d to the listener without waiting.
func (l *Listener) send(d *Detailed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	select {
	case l.ch <- d:
	default:
		l.drops++
		l.t.stats.dropped.Add(1)
	}
}

// Close ends the listener: it gets no more events, its channel is closed,
// and its place under the caps is free.
func (l *Listener) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.ch)
	l.mu.Unlock()
	for _, tk := range l.tasks {
		tk.mu.Lock()
		delete(tk.subs, l)
		tk.mu.Unlock()
	}
	if l.owner == "" {
		return
	}
	t := l.t
	t.mu.Lock()
	t.listeners--
	if t.perListen[l.owner]--; t.perListen[l.owner] <= 0 {
		delete(t.perListen, l.owner)
	}
	t.mu.Unlock()
}
