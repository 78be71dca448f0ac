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
	// Cause is why a failed or cancelled task ended, for errors.Is
	// (ErrCancelled, ErrDraining, ErrRunTimeout, ErrResultTooLarge,
	// mrtr.ErrParkExpired, the call's own error); it is not
	// part of the wire view.
	Cause error `json:"-"`
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
		Cause:          tk.cause,
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

	mu     sync.Mutex       // guards tasks, closed, drops and sends on ch
	tasks  map[*task]uint64 // followed, with the version of the last view sent
	ch     chan *Detailed
	closed bool
	drops  uint64
}

// Listen returns a listener for those of ids that o may see, and those
// ids: the others are left out with no sign of why, as tasks/get does;
// an id given twice is followed once. The listener gets the current view
// of each at once, then each change. Listeners count against
// Options.MaxListeners and MaxListenersPerOwner until closed
// (ErrTooManyListeners past them); no more than MaxTasksPerOwner ids are
// followed, as no owner has more tasks. An owner who may have no task
// gets a listener of nothing.
func (t *Table) Listen(o Owner, ids []string) (*Listener, []string, error) {
	l := &Listener{t: t, ch: make(chan *Detailed, t.o.ListenerBuffer), tasks: map[*task]uint64{}}
	key, ok := t.ownerKey(o)
	if !ok {
		return l, nil, nil
	}
	t.mu.Lock()
	switch {
	case t.shut:
		t.mu.Unlock()
		return nil, nil, ErrClosed
	case len(t.listeners) >= t.o.MaxListeners:
		t.mu.Unlock()
		t.stats.listenRefusals.Add(1)
		return nil, nil, fmt.Errorf("%w: %d listen on this server, its limit (tasks.max_listeners); poll with tasks/get instead", ErrTooManyListeners, t.o.MaxListeners)
	case t.perListen[key] >= t.o.MaxListenersPerOwner:
		t.mu.Unlock()
		t.stats.listenRefusals.Add(1)
		return nil, nil, fmt.Errorf("%w: you have %d, the limit per client (tasks.max_listeners_per_client); close one, or poll with tasks/get", ErrTooManyListeners, t.o.MaxListenersPerOwner)
	}
	t.listeners[l] = struct{}{}
	t.perListen[key]++
	l.owner = key
	t.mu.Unlock()
	var accepted []string
	for _, id := range ids {
		if len(accepted) == t.o.MaxTasksPerOwner {
			break // nobody has more tasks to follow
		}
		tk, err := t.lookup(o, id)
		if err != nil {
			continue
		}
		l.mu.Lock()
		_, dup := l.tasks[tk]
		if !dup {
			l.tasks[tk] = 0
		}
		l.mu.Unlock()
		if dup {
			continue
		}
		tk.mu.Lock()
		if tk.gone {
			tk.mu.Unlock()
			continue
		}
		if tk.subs == nil {
			tk.subs = map[*Listener]struct{}{}
		}
		tk.subs[l] = struct{}{}
		d, v := tk.viewLocked(), tk.version
		tk.mu.Unlock()
		l.send(tk, d, v) // the state now, unless a later one was sent already
		accepted = append(accepted, id)
	}
	return l, accepted, nil
}

// Events returns the channel the views come on; it is closed by Close,
// and by the table's Close.
func (l *Listener) Events() <-chan *Detailed { return l.ch }

// Dropped returns how many events this listener lost to a full buffer.
func (l *Listener) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drops
}

// send hands d, the view of tk at version v, to the listener without
// waiting; a view older than one already sent (two changes recorded on
// two goroutines) is left out.
func (l *Listener) send(tk *task, d *Detailed, v uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.tasks[tk]
	if l.closed || !ok || (v <= last && last != 0) {
		return
	}
	l.tasks[tk] = v
	select {
	case l.ch <- d:
	default:
		l.drops++
		l.t.stats.dropped.Add(1)
	}
}

// forget stops following a task the table forgot, and takes its views
// still waiting out of the buffer (counted as dropped): the task can no
// longer be read, and its result is no longer counted anywhere, so no
// listener may keep it.
func (l *Listener) forget(tk *task) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.tasks, tk)
	if l.closed {
		return
	}
	// Sends happen under l.mu: what is taken out here goes back in the
	// same order, with room for it, while the reader may take from the
	// front meanwhile.
	var waiting []*Detailed
	for n := len(l.ch); n > 0; n-- {
		select {
		case d := <-l.ch:
			if d.TaskID == tk.id {
				l.drops++
				l.t.stats.dropped.Add(1)
				continue
			}
			waiting = append(waiting, d)
		default:
			n = 1 // the reader took the rest
		}
	}
	for _, d := range waiting {
		select {
		case l.ch <- d: // room: as many were taken out, and only sends under l.mu put in
		default:
			l.drops++
			l.t.stats.dropped.Add(1)
		}
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
	tasks := l.tasks
	l.tasks = nil
	l.mu.Unlock()
	for tk := range tasks {
		tk.mu.Lock()
		delete(tk.subs, l)
		tk.mu.Unlock()
	}
	if l.owner == "" {
		return
	}
	t := l.t
	t.mu.Lock()
	delete(t.listeners, l)
	if t.perListen[l.owner]--; t.perListen[l.owner] <= 0 {
		delete(t.perListen, l.owner)
	}
	t.mu.Unlock()
}
