package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// errDrainTimeout is why a call still running at the drain timeout was
// cancelled. It wraps context.Canceled, so the call answers "request
// cancelled".
var errDrainTimeout = fmt.Errorf("%w: the server is stopping and the drain timeout passed", context.Canceled)

// CodeServerStopping is the JSON-RPC error code (in the range reserved for
// implementation-defined server errors) of requests refused while the
// server stops.
const CodeServerStopping = -32000

// ErrStopping answers a request that arrives while the server stops.
var ErrStopping = &jsonrpc.Error{Code: CodeServerStopping, Message: "the server is shutting down; try again later"}

// tracker keeps account of the calls in progress, so that the server's
// stop ends them.
type tracker struct {
	mu       sync.Mutex
	active   int           // calls in progress
	draining bool          // no new calls
	idle     chan struct{} // closed when active reaches 0, while draining
	calls    callSet       // the calls in progress, for the drain timeout
	stopping chan struct{} // closed when the drain begins
}

func newTracker() *tracker { return &tracker{stopping: make(chan struct{})} }

// A callSet is a set of calls in progress that are cancelled together: a
// scope's, or every call of the core (at the drain timeout). The calls are
// linked through their own entries, so that a call joins and leaves its
// sets without an allocation, and without a context.AfterFunc of its own
// on a context every call shares (a map entry and a lock every concurrent
// call contends for; RATIONALE.md, "Why does a call join its scopes
// through a list?").
type callSet struct {
	mu    sync.Mutex
	head  *setEntry
	cause error // the set was cancelled: calls that join it are cancelled at once
}

// setEntry is a call's place in one callSet.
type setEntry struct {
	cancel     context.CancelCauseFunc
	prev, next *setEntry
	in         bool
}

// join adds e to the set, or cancels its call if the set was cancelled.
func (s *callSet) join(e *setEntry) {
	s.mu.Lock()
	if cause := s.cause; cause != nil {
		s.mu.Unlock()
		e.cancel(cause)
		return
	}
	e.prev, e.next, e.in = nil, s.head, true
	if s.head != nil {
		s.head.prev = e
	}
	s.head = e
	s.mu.Unlock()
}

// leave takes e out of the set.
func (s *callSet) leave(e *setEntry) {
	s.mu.Lock()
	if e.in {
		if e.prev != nil {
			e.prev.next = e.next
		} else {
			s.head = e.next
		}
		if e.next != nil {
			e.next.prev = e.prev
		}
		e.prev, e.next, e.in = nil, nil, false
	}
	s.mu.Unlock()
}

// cancel cancels the calls in the set with cause, and those that join it
// later. The first cause stays.
func (s *callSet) cancel(cause error) {
	s.mu.Lock()
	if s.cause == nil {
		s.cause = cause
	}
	cause = s.cause
	var cancels []context.CancelCauseFunc
	for e := s.head; e != nil; e = e.next {
		cancels = append(cancels, e.cancel)
	}
	s.mu.Unlock()
	for _, c := range cancels {
		c(cause) // outside the lock: a cancelled context runs its own AfterFuncs
	}
}

// A Scope is a group of calls that end together: the calls of a session,
// or those an HTTP request carries. An edge makes its scopes and names
// them in each Request; when a scope ends, its calls are cancelled, and
// the plugins running them interrupted.
//
// A scope is not a context of its own: it ends with a function run by the
// context it came from (context.AfterFunc), and its calls, linked in a
// list, are cancelled there. A derived context, with an AfterFunc on it,
// was two registrations, two maps, a channel and a goroutine at every end,
// for every HTTP request (RATIONALE.md, "Why is a scope not a context?").
type Scope struct {
	cause   error        // the calls' cause, if set
	stop    func() bool  // stops the AfterFunc on the context the scope came from; nil if none
	running atomic.Int32 // its calls in progress
	calls   callSet

	mu    sync.Mutex
	ended error         // why the scope ended; nil while it lasts
	done  chan struct{} // made by Done, closed when the scope ends
}

// NewScope returns a scope that ends when End is called or ctx is done.
// Its calls are then cancelled with cause or, if cause is nil, with the
// cause End gave or ctx's.
func NewScope(ctx context.Context, cause error) *Scope {
	s := &Scope{cause: cause}
	if ctx.Done() != nil {
		s.stop = context.AfterFunc(ctx, func() { s.end(context.Cause(ctx)) })
	}
	return s
}

// End ends the scope, and cancels its calls with cause (see NewScope); a
// nil cause is context.Canceled.
func (s *Scope) End(cause error) {
	if s.stop != nil {
		s.stop()
	}
	if cause == nil {
		cause = context.Canceled
	}
	s.end(cause)
}

// end ends the scope with cause, once: the first cause stays.
func (s *Scope) end(cause error) {
	s.mu.Lock()
	if s.ended != nil {
		s.mu.Unlock()
		return
	}
	s.ended = cause
	if s.done != nil {
		close(s.done)
	}
	s.mu.Unlock()
	if s.cause != nil {
		cause = s.cause
	}
	s.calls.cancel(cause)
}

// Done is closed when the scope ends.
func (s *Scope) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.ended != nil {
			close(s.done)
		}
	}
	return s.done
}

// over reports whether the scope ended.
func (s *Scope) over() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended != nil
}

// Running returns how many of the scope's calls are in progress.
func (s *Scope) Running() int { return int(s.running.Load()) }

// A Flusher is a client sink (Request.Client) that queues what it sends
// the client: when a call ends, the core flushes its sink before the call's
// answer is returned, so that its notifications reach the client first.
type Flusher interface {
	Flush()
}

// call is a call in progress, from begin to end.
type call struct {
	t      *tracker
	pc     plugin.Call // what the plugin is told of it
	cancel context.CancelCauseFunc
	own    bool // cancel is the core's own (not Request.Cancel)
	scopes [2]*Scope
	// entries are its places in the tracker's set and its scopes'.
	entries [3]setEntry
}

// begin starts serving a call: the returned context is cancelled when the
// caller's is, when one of the request's scopes ends, or when the drain
// timeout passes. The call's end must be called when it is done. While
// the server stops, begin refuses new calls with ErrStopping.
func (c *Core) begin(ctx context.Context, rq *Request) (context.Context, *call, error) {
	t := c.calls
	t.mu.Lock()
	if t.draining {
		t.mu.Unlock()
		return nil, nil, ErrStopping
	}
	t.active++
	t.mu.Unlock()

	cl := &call{t: t, pc: plugin.Call{ID: rq.ID, Meta: rq.Meta, MetaJSON: rq.MetaJSON, Host: rq.Client, Holder: rq.Holder}, scopes: [2]*Scope{rq.Scope, rq.Carrier}}
	if cl.cancel = rq.Cancel; cl.cancel == nil {
		ctx, cl.cancel = context.WithCancelCause(ctx)
		cl.own = true
	}
	for i := range cl.entries {
		cl.entries[i].cancel = cl.cancel
	}
	t.calls.join(&cl.entries[0])
	for i, s := range cl.scopes {
		if s != nil {
			s.running.Add(1)
			s.calls.join(&cl.entries[i+1])
		}
	}
	return ctx, cl, nil
}

// end ends a call begin started. It first waits (briefly) for the call's
// notifications to be written, so that they reach the client before the
// answer.
func (cl *call) end() {
	if f, ok := cl.pc.Host.(Flusher); ok {
		f.Flush()
	}
	t := cl.t
	t.calls.leave(&cl.entries[0])
	for i, s := range cl.scopes {
		if s != nil {
			s.calls.leave(&cl.entries[i+1])
		}
	}
	if cl.own {
		cl.cancel(nil)
	}
	for _, s := range cl.scopes {
		if s != nil {
			s.running.Add(-1)
		}
	}
	t.mu.Lock()
	t.active--
	if t.active == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
	t.mu.Unlock()
}

// CancelGrace bounds how long Drain waits, once it has cancelled the calls
// still running, for them to answer; edges give their answers as long to
// be written.
const CancelGrace = 5 * time.Second

// Drain stops the core taking calls and waits for the calls in progress
// to finish, until ctx is done. Then it cancels those still running, each
// of which answers its client with an error, and waits briefly for them
// (CancelGrace). Calls that arrive meanwhile are refused with ErrStopping.
// Drain reports how many calls it cancelled.
func (c *Core) Drain(ctx context.Context) int {
	n := c.calls.drain(ctx)
	if n > 0 {
		c.log.Warn("drain timeout: calls still running were cancelled", "calls", n)
	}
	return n
}

func (t *tracker) drain(ctx context.Context) int {
	t.mu.Lock()
	if !t.draining {
		close(t.stopping)
	}
	t.draining = true
	if t.active == 0 {
		t.mu.Unlock()
		return 0
	}
	idle := make(chan struct{})
	t.idle = idle
	t.mu.Unlock()
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
	}
	t.mu.Lock()
	n := t.active
	t.mu.Unlock()
	t.calls.cancel(errDrainTimeout)
	timer := time.NewTimer(CancelGrace)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
	}
	return n
}

// Stopping reports whether Drain has been called.
func (c *Core) Stopping() bool {
	t := c.calls
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.draining
}

// cancelled is the JSON-RPC error of a call whose context ended.
func cancelled(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) && cause != context.Canceled {
		return &jsonrpc.Error{Code: CodeRequestCancelled, Message: "request cancelled: " + cause.Error()}
	}
	return errCancelled
}

// maxRetries bounds how many successive reloads a call follows.
const maxRetries = 8

// onCurrent runs call on m's plugin, once it is loaded (see loading.go).
// If that plugin was closed by a reload before the call started there
// (plugin.ErrClosed means the call never ran), it runs call again on the
// plugin of the same name in the current set, so that a reload loses no
// call. A plugin that is no longer configured keeps the error.
func onCurrent[T any](ctx context.Context, m *mount, call func(*plugin.Plugin, *mount) (T, error)) (T, error) {
	run := func(m *mount) (T, error) {
		p, err := m.plugin(ctx)
		if err != nil {
			var zero T
			return zero, err
		}
		return call(p, m)
	}
	res, err := run(m)
	for i := 0; i < maxRetries && errors.Is(err, plugin.ErrClosed); i++ {
		next := m.core.current(m.name)
		if next == nil || next == m {
			break
		}
		m = next
		res, err = run(m)
	}
	return res, err
}

// current returns the mount of the named plugin in the current set, or nil.
func (c *Core) current(name string) *mount {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.mounts {
		if m.name == name {
			return m
		}
	}
	return nil
}
