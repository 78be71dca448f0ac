package plugin

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// budget limits the time a call spends running plugin code. It is a
// deadline that can be paused: while a host import waits for the MCP client
// (a person answering an elicitation, say), the plugin is not running, and
// the clock stops.
//
// The budget is also the call's context (callState's methods are its): its
// parent's, ended too when the budget runs out (cause ErrTimeout) or stops.
// The context it is made of, a child of the parent, is made only when
// something needs one (link): a Done channel to wait on, a lookup once the
// budget ended, or the budget running out. Most calls need none, as the
// fuel guard and the imports ask Err, which the budget answers itself; a
// context.WithCancelCause at every call registered it with its caller's
// context, and cost it five allocations.
type budget struct {
	parent context.Context
	total  time.Duration
	link   atomic.Pointer[linked] // the context, once made (link)
	ended  atomic.Bool            // stopped, or ran out

	mu        sync.Mutex
	remaining time.Duration
	started   time.Time // zero while paused
	timer     *time.Timer
	expired   bool
	done      bool
	// parentEnded records that the parent had ended when the budget
	// stopped with no context made: the context, if made later, ends as
	// the parent did; otherwise it is cancelled, whatever the parent does
	// after.
	parentEnded bool
}

// linked is the budget's context, and what cancels it.
type linked struct {
	context.Context
	cancel context.CancelCauseFunc
}

// start starts a zero budget of d under parent: its context ends with
// cause ErrTimeout once d of running time has been spent. The caller must
// call stop.
func (b *budget) start(parent context.Context, d time.Duration) {
	b.parent, b.total, b.remaining = parent, d, d
	b.resume()
}

// context returns the budget's context, made on first use.
func (b *budget) context() *linked {
	if l := b.link.Load(); l != nil {
		return l
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.linkLocked()
}

// linkLocked makes the budget's context if it has none, ended already if
// the budget has. b.mu must be held.
func (b *budget) linkLocked() *linked {
	if l := b.link.Load(); l != nil {
		return l
	}
	parent := b.parent
	if b.done && !b.expired && !b.parentEnded {
		// Stopped while the parent lived: ended by the stop, not by what
		// the parent did since.
		parent = context.WithoutCancel(parent)
	}
	ctx, cancel := context.WithCancelCause(parent)
	switch {
	case b.expired:
		cancel(ErrTimeout)
	case b.done:
		cancel(context.Canceled)
	}
	l := &linked{ctx, cancel}
	b.link.Store(l)
	return l
}

func (b *budget) fire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done || b.started.IsZero() {
		return
	}
	b.expired = true
	b.linkLocked().cancel(ErrTimeout)
	b.ended.Store(true)
}

// The budget's context.

func (b *budget) Deadline() (time.Time, bool) { return b.parent.Deadline() }

func (b *budget) Done() <-chan struct{} { return b.context().Done() }

func (b *budget) Err() error {
	if l := b.link.Load(); l != nil {
		return l.Err()
	}
	if b.ended.Load() { // stopped: running out makes the context
		if b.parentEnded {
			return b.parent.Err()
		}
		return context.Canceled
	}
	return b.parent.Err()
}

// Value looks key up in the parent, or in the budget's context once there
// is one or the budget has ended: context.Cause finds the cause there.
func (b *budget) Value(key any) any {
	if b.link.Load() != nil || b.ended.Load() {
		return b.context().Value(key)
	}
	return b.parent.Value(key)
}

// pause stops the clock.
func (b *budget) pause() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done || b.started.IsZero() {
		return
	}
	b.timer.Stop()
	b.remaining -= time.Since(b.started)
	b.started = time.Time{}
}

// resume restarts the clock.
func (b *budget) resume() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done || !b.started.IsZero() {
		return
	}
	b.started = time.Now()
	if b.remaining <= 0 {
		b.remaining = 0
	}
	b.timer = time.AfterFunc(b.remaining, b.fire)
}

// stop ends the budget and its context. It reports whether the
// budget ran out, and the running time spent (the clock's, so without the
// paused waits).
func (b *budget) stop() (expired bool, spent time.Duration) {
	b.mu.Lock()
	b.done = true
	if b.timer != nil {
		b.timer.Stop()
	}
	remaining := b.remaining
	if !b.started.IsZero() {
		remaining -= time.Since(b.started)
	}
	spent = min(max(b.total-remaining, 0), b.total)
	expired = b.expired
	l := b.link.Load()
	if l == nil {
		b.parentEnded = b.parent.Err() != nil
	}
	b.ended.Store(true) // after parentEnded, which Err reads once it sees ended
	b.mu.Unlock()
	if l != nil {
		l.cancel(context.Canceled)
	}
	return expired, spent
}

// left is the running time the budget has left.
func (b *budget) left() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	remaining := b.remaining
	if !b.started.IsZero() {
		remaining -= time.Since(b.started)
	}
	return max(remaining, 0)
}
