package plugin

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
)

// pool hands out plugin instances, at most max of them at once. Idle
// instances are kept for reuse, newest first, and closed once they have been
// idle for idleTimeout, down to minIdle; an instance returned as unhealthy
// is closed at once.
type pool struct {
	compiled    *module
	cfg         wazero.ModuleConfig
	memPages    uint32        // the limit of each instance's Extism memory
	slots       chan struct{} // one token per instance in use
	idleTimeout time.Duration
	stopReaper  chan struct{}

	mu     sync.Mutex
	idle   []*instance
	inUse  int
	busy   map[*instance]bool // the instances lent out
	closed bool
	done   chan struct{} // closed once the compiled module is closed

	// waiters counts the calls waiting for an instance; contention is
	// closed while there is one (see hold.go).
	waiters    int
	contention chan struct{}
}

const (
	// defaultIdleTimeout is how long an idle instance is kept.
	defaultIdleTimeout = time.Minute
	// minIdle instances are kept however long they are idle, so that a
	// quiet plugin still answers its next call without instantiating.
	minIdle = 1
)

func newPool(compiled *module, cfg wazero.ModuleConfig, memPages uint32, max int) *pool {
	p := &pool{
		compiled:    compiled,
		cfg:         cfg,
		memPages:    memPages,
		slots:       make(chan struct{}, max),
		done:        make(chan struct{}),
		idleTimeout: defaultIdleTimeout,
		stopReaper:  make(chan struct{}),
		busy:        map[*instance]bool{},
		contention:  make(chan struct{}),
	}
	go p.reap()
	return p
}

// setMax sets the number of instances. It is only for a pool that no one
// else uses yet, with no instance in use.
func (p *pool) setMax(max int) {
	p.slots = make(chan struct{}, max)
}

// reap closes instances idle for longer than idleTimeout, keeping minIdle.
func (p *pool) reap() {
	t := time.NewTicker(p.idleTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-p.stopReaper:
			return
		case now := <-t.C:
			p.shrink(now)
		}
	}
}

// shrink closes the instances that were idle longer than idleTimeout at
// now, oldest first, keeping minIdle.
func (p *pool) shrink(now time.Time) {
	p.mu.Lock()
	var old []*instance
	for len(p.idle) > minIdle && now.Sub(p.idle[0].lastUsed) > p.idleTimeout {
		old = append(old, p.idle[0])
		p.idle = p.idle[1:]
	}
	p.mu.Unlock()
	for _, inst := range old {
		inst.close(context.Background())
	}
	if len(old) > 0 {
		releaseMemory()
	}
}

// releaseInterval is the least time between two returns of memory to the
// operating system.
const releaseInterval = 10 * time.Second

var (
	lastRelease    atomic.Int64 // UnixNano of the last releaseMemory
	releasePending atomic.Bool  // a release is scheduled (scheduleRelease)
)

// releaseMemory hands the memory of closed instances back to the operating
// system now rather than over the minutes the Go scavenger would take: an
// instance leaves garbage in the Go heap (wazero's call stack, up to 126
// MB for a guest that recursed; its memories are unmapped at once, see
// memory.go), and a server that shrank after a burst of load should look
// it. It runs a garbage collection, so it is rate-limited across all
// pools, and only reapers call it, never a call: a call that discards its
// instance schedules one (scheduleRelease).
func releaseMemory() {
	now := time.Now().UnixNano()
	last := lastRelease.Load()
	if now-last < int64(releaseInterval) || !lastRelease.CompareAndSwap(last, now) {
		return
	}
	debug.FreeOSMemory()
}

// scheduleRelease runs releaseMemory in the background, as soon as the
// rate limit allows; releases asked for meanwhile are one.
func scheduleRelease() {
	if !releasePending.CompareAndSwap(false, true) {
		return
	}
	wait := time.Duration(lastRelease.Load() + int64(releaseInterval) - time.Now().UnixNano())
	time.AfterFunc(max(wait, 0), func() {
		releasePending.Store(false)
		releaseMemory()
	})
}

// get borrows an instance, creating one when none is idle. While max
// instances are in use it waits, until ctx is done or, when wait > 0, for at
// most wait (then it fails with ErrBusy).
func (p *pool) get(ctx context.Context, wait time.Duration) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	default:
		var expired <-chan time.Time
		if wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			expired = t.C
		}
		p.wait1(+1)
		select {
		case p.slots <- struct{}{}:
			p.wait1(-1)
		case <-ctx.Done():
			p.wait1(-1)
			return nil, fmt.Errorf("waiting for a free instance: %w", context.Cause(ctx))
		case <-expired:
			p.wait1(-1)
			return nil, p.busyError(wait) // who holds the instances (hold.go)
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, ErrClosed
	}
	p.inUse++
	if n := len(p.idle); n > 0 {
		inst := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.busy[inst] = true
		p.mu.Unlock()
		return inst, nil
	}
	p.mu.Unlock()

	// Instantiation must not be cut short by the caller's deadline: a
	// half-built instance is useless, and the cost is bounded.
	inst, err := p.compiled.instantiate(context.WithoutCancel(ctx), p.cfg, p.memPages)
	if err != nil {
		p.release()
		return nil, err
	}
	p.mu.Lock()
	p.busy[inst] = true
	p.mu.Unlock()
	return inst, nil
}

// wait1 counts a call that begins (+1) or ends (-1) waiting for an
// instance.
func (p *pool) wait1(d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiters += d
	switch {
	case d > 0 && p.waiters == 1:
		close(p.contention)
	case d < 0 && p.waiters == 0:
		p.contention = make(chan struct{})
	}
}

// contended returns a channel closed while a call waits for an instance.
func (p *pool) contended() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.contention
}

// waiting reports whether a call waits for an instance.
func (p *pool) waiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters > 0
}

// put gives back an instance borrowed with get. Unhealthy instances, and
// all instances once the pool is closed, are closed instead of kept.
func (p *pool) put(inst *instance, healthy bool) {
	p.mu.Lock()
	delete(p.busy, inst)
	keep := healthy && !p.closed
	if keep {
		inst.lastUsed = time.Now()
		p.idle = append(p.idle, inst)
	}
	p.mu.Unlock()
	if !keep {
		inst.close(context.Background())
		if !healthy {
			scheduleRelease() // a crash or a timeout may leave much garbage
		}
	}
	p.release()
}

// release frees the slot of an instance that is no longer in use, and
// closes the compiled module when the pool is closed and this was the last.
func (p *pool) release() {
	p.mu.Lock()
	p.inUse--
	last := p.closed && p.inUse == 0
	p.mu.Unlock()
	<-p.slots
	if last {
		p.closeCompiled()
	}
}

func (p *pool) closeCompiled() {
	p.compiled.close(context.Background())
	close(p.done)
}

// close closes idle instances at once. Calls in progress finish on their
// instances, which are closed as they are returned; the compiled module is
// closed after the last of them. close does not wait for that: see wait.
func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stopReaper)
	idle := p.idle
	p.idle = nil
	last := p.inUse == 0
	p.mu.Unlock()
	for _, inst := range idle {
		inst.close(ctx)
	}
	if last {
		p.closeCompiled()
	}
}

// wait blocks until a closed pool has released everything, or ctx is done.
func (p *pool) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stats reports the number of instances in use and idle.
func (p *pool) stats() (inUse, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse, len(p.idle)
}
