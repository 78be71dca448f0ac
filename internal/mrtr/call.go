package mrtr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Status is the state of a call, with the names of the tasks extension's
// task statuses.
type Status string

// The statuses of a call. A call starts Working; it is InputRequired while
// the plugin waits in a host import for answers; Completed, Failed and
// Cancelled are final.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Final reports whether s is a final status: the call will not change
// any more.
func (s Status) Final() bool { return s == Completed || s == Failed || s == Cancelled }

// Sink receives the notifications a call sends for the request that
// currently waits for it: the client request's stream. Its methods are
// called on the goroutine of that request (the one in Manager.Serve), one
// at a time, with the request's context, and never after Serve has
// returned: a sink writes to its own client, and may block on it without
// holding up the plugin, any other request, or Manager.Close. The plugin
// only queues its notifications (see QueueSize).
//
// A 2026 sink sends log messages only if the request's _meta carried
// io.modelcontextprotocol/logLevel, and only at or above that level: that
// filter is the edge's, in the sink.
type Sink interface {
	Log(ctx context.Context, params *mcp.LoggingMessageParams) error
	NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error
}

// QueueSize bounds the notifications of a call that wait for its request's
// goroutine to hand them to the Sink. A plugin that sends faster than its
// client reads (or to a client that stopped reading) loses the
// notifications beyond it: they are dropped and counted
// (Stats.DroppedNotifications, Stats.QueueFull), and the plugin runs on.
const QueueSize = 256

// note is a notification waiting in an attachment's queue: a log message
// or a progress notification.
type note struct {
	log      *mcp.LoggingMessageParams
	progress *mcp.ProgressNotificationParams
}

// attachment is a client request waiting for a call: where the call's
// notifications go while it waits. The plugin's goroutine queues them
// (push); the request's goroutine hands them to the sink (deliver). No
// lock is held while the sink is called.
type attachment struct {
	ctx   context.Context
	sink  Sink          // nil: the request takes no notifications
	token any           // the request's progress token; nil if none
	ready chan struct{} // a notification was queued (capacity 1)

	mu     sync.Mutex // guards queue and closed
	queue  []note
	closed bool // the request was answered: it takes nothing more
}

func newAttachment(ctx context.Context, sink Sink, token any) *attachment {
	return &attachment{ctx: ctx, sink: sink, token: token, ready: make(chan struct{}, 1)}
}

// Outcomes of push.
const (
	queued = iota
	answered
	full
)

// push queues n for the request's goroutine, unless the request was
// answered or its queue is full.
func (a *attachment) push(n note) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.closed:
		return answered
	case a.sink == nil:
		return queued // the request takes none: nothing to send
	case len(a.queue) >= QueueSize:
		return full
	}
	a.queue = append(a.queue, n)
	select {
	case a.ready <- struct{}{}:
	default:
	}
	return queued
}

// deliver hands the queued notifications to the sink, on the request's
// goroutine, with no lock held. Those queued while the request's context
// is done are dropped and counted in dropped.
func (a *attachment) deliver(dropped *atomic.Uint64) {
	for {
		a.mu.Lock()
		q := a.queue
		a.queue = nil
		a.mu.Unlock()
		if len(q) == 0 {
			return
		}
		for _, n := range q {
			if a.ctx.Err() != nil {
				dropped.Add(1)
				continue
			}
			if n.log != nil {
				a.sink.Log(a.ctx, n.log)
			} else {
				a.sink.NotifyProgress(a.ctx, n.progress)
			}
		}
	}
}

// queue pushes n onto a, and counts it in s if it is dropped: the request
// was answered, or its queue is full.
func (s *counters) queue(a *attachment, n note) {
	switch a.push(n) {
	case full:
		s.queueFull.Add(1)
		s.dropped.Add(1)
	case answered:
		s.dropped.Add(1)
	}
}

func (a *attachment) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
}

// Call is a plugin call that may stop to ask its client for input: the
// object a request waits on, and, later, a task. It runs on its own
// goroutine with a context of its own, so that it outlives the request
// that started it; the request that currently waits for it ("owns the
// wire") gets its notifications and its next event.
//
// A Call is safe for concurrent use.
type Call struct {
	m         *Manager
	id        string // made when the call first asks for input (acquire), under both locks
	principal string
	client    string // the principal, or the address of an anonymous caller: who it is for the caps' fairness
	method    string
	digest    [32]byte        // of the params; made from params when first needed
	params    json.RawMessage // nil once digest is made
	token0    any             // the progress token of the request that started the call

	ctx    context.Context // the call's own: ends with the call
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	status   Status
	changed  chan struct{} // closed and replaced on every change of status
	caps     *mcp.ClientCapabilities
	att      *attachment       // nil: no request waits for the call
	pending  map[string]*input // while InputRequired
	seq      int               // numbers input request keys
	use      string            // the single-use id of the state issued for the current round; "" once accepted
	expiry   time.Time         // of that state
	timer    *time.Timer       // fires at expiry
	result   any
	err      error
	held     bool // the call is in m.calls: a retry with its state finds it
	counted  bool // the call counts against the caps: it is parked, or was answered and runs on
	finished bool // run returned

	parkedSince atomic.Int64 // when it last began waiting for input (Unix ns); 0 while not parked
}

// Snapshot is the state of a call at one moment.
type Snapshot struct {
	Status Status
	// InputRequests holds the pending input requests while the status is
	// InputRequired: key -> {"method": ..., "params": ...}.
	InputRequests map[string]json.RawMessage
	// Expiry is when the call will be cancelled unless its input comes;
	// zero unless the status is InputRequired.
	Expiry time.Time
	// Result is what the call returned, once Completed.
	Result any
	// Err is why the call failed or was cancelled.
	Err error
}

func (c *Call) snapshotLocked() Snapshot {
	s := Snapshot{Status: c.status, Result: c.result, Err: c.err}
	if c.status == InputRequired {
		s.InputRequests = make(map[string]json.RawMessage, len(c.pending))
		for k, in := range c.pending {
			s.InputRequests[k] = in.request
		}
		s.Expiry = c.expiry
	}
	return s
}

// checkLocked validates responses for the pending requests.
func (c *Call) checkLocked(responses map[string]json.RawMessage) (answers map[*input]json.RawMessage, complete bool, err error) {
	if c.status != InputRequired {
		return nil, true, nil
	}
	answers = make(map[*input]json.RawMessage, len(c.pending))
	complete = true
	for key, in := range c.pending {
		raw, ok := responses[key]
		if !ok {
			complete = false
			continue
		}
		a, err := in.check(raw)
		if err != nil {
			return nil, false, err
		}
		answers[in] = a
	}
	return answers, complete, nil
}

func (c *Call) deliverLocked(answers map[*input]json.RawMessage) {
	if c.status != InputRequired {
		return
	}
	for in, a := range answers {
		in.answer <- a // buffered; each input is answered once
	}
	c.pending = nil
	c.setLocked(Working)
}

// setLocked changes the status and wakes the waiters.
func (c *Call) setLocked(s Status) {
	if c.status == InputRequired {
		c.m.stats.parked.Add(-1)
	}
	if s == InputRequired {
		c.m.stats.parked.Add(1)
		c.parkedSince.Store(time.Now().UnixNano())
	} else {
		c.parkedSince.Store(0)
	}
	c.status = s
	close(c.changed)
	c.changed = make(chan struct{})
}

// endLocked makes the call final, unless it already is. A cancelled
// call's context is cancelled with err as the cause; a failed call's
// plugin keeps running (it was told why its host import failed) and its
// result is dropped.
func (c *Call) endLocked(s Status, result any, err error) {
	if c.status.Final() {
		return
	}
	c.result, c.err = result, err
	blocked := len(c.pending) > 0 // the plugin waits in a host import
	c.pending = nil
	c.setLocked(s)
	if s == Cancelled || blocked {
		c.cancel(err)
	}
	// Its slot under the caps is free at once; the call stays in the
	// table until its outcome is claimed or its state expires, unless
	// max_parked outcomes wait so already: then it is forgotten, and its
	// retry learns to start again (ErrCallGone).
	c.uncountLocked()
	if c.att == nil && c.use != "" && !c.m.keepOutcome() {
		c.use = ""
	}
	if c.att == nil && c.use == "" {
		// Nobody waits for the outcome and no state can claim it.
		c.releaseLocked()
	}
}

// attachLocked makes a the request waiting for the call.
func (c *Call) attachLocked(a *attachment, caps *mcp.ClientCapabilities) {
	if c.att != nil {
		c.att.close()
	}
	c.att = a
	c.caps = caps
}

// detachLocked ends a's wait, if it is still the call's request.
func (c *Call) detachLocked(a *attachment) {
	a.close()
	if c.att == a {
		c.att = nil
	}
}

// releaseLocked forgets the call: it leaves the Manager's table and frees
// its place under the caps.
func (c *Call) releaseLocked() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.uncountLocked()
	if c.held {
		c.held = false
		c.m.release(c)
	}
}

// uncountLocked frees the call's place under the caps, if it has one: it
// no longer waits for its client (it ended, or its plugin stopped waiting
// for the answer).
func (c *Call) uncountLocked() {
	if c.counted {
		c.counted = false
		c.m.uncount(c)
	}
}

// evict ends the call, if it is still parked: acquire gave its place
// under the caps to another client's call.
func (c *Call) evict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == InputRequired {
		c.endLocked(Cancelled, nil, ErrEvicted)
	}
}

// expire runs when the state issued with use expires: if it was never
// accepted, the client is not coming back, and the call is cancelled.
func (c *Call) expire(use string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.use != use {
		return // accepted, or replaced by a later round
	}
	c.use = ""
	if !c.status.Final() {
		c.m.stats.expired.Add(1)
		c.endLocked(Cancelled, nil, fmt.Errorf("%w (%s)", ErrParkExpired, c.m.parkTimeout))
	}
	c.releaseLocked()
}

// finish records run's outcome.
func (c *Call) finish(result any, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished = true
	if err != nil {
		c.endLocked(Failed, nil, err)
	} else {
		c.endLocked(Completed, result, nil)
	}
	c.cancel(errCallDone)
}

var errCallDone = errors.New("the call returned")

// pendingCopy returns the pending requests, key -> request.
func (c *Call) pendingCopy() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(c.pending))
	for k, in := range c.pending {
		out[k] = in.request
	}
	return out
}
