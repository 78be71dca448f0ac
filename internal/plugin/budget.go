package plugin

import (
	"context"
	"sync"
	"time"
)

// budget limits the time a call spends running plugin code. It is a
// deadline that can be paused: while a host import waits for the MCP client
// (a person answering an elicitation, say), the plugin is not running, and
// the clock stops.
type budget struct {
	cancel context.CancelCauseFunc
	total  time.Duration

	mu        sync.Mutex
	remaining time.Duration
	started   time.Time // zero while paused
	timer     *time.Timer
	expired   bool
	done      bool
}

// start starts a zero budget of d, and returns its context, which is
// cancelled with cause ErrTimeout once d of running time has been spent.
// The caller must call stop.
func (b *budget) start(parent context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	b.cancel, b.total, b.remaining = cancel, d, d
	b.resume()
	return ctx
}

func (b *budget) fire() {
	b.mu.Lock()
	if b.done || b.started.IsZero() {
		b.mu.Unlock()
		return
	}
	b.expired = true
	b.mu.Unlock()
	b.cancel(ErrTimeout)
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

// stop ends the budget and releases its context. It reports whether the
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
	b.mu.Unlock()
	b.cancel(context.Canceled)
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
