package plugin

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
)

// pool hands out plugin instances, at most max of them at once, and a new
// one only while the instances' memory stays within the pool's budget (see
// room). Idle instances are kept for reuse, newest first, and closed once
// they have been idle for idleTimeout, down to minIdle; an instance
// returned as unhealthy is closed at once.
//
// The pool keeps one account, under mu, of what is in use: the instances
// lent out (busy) and being made (starting), the memory they hold, the
// calls waiting for one (queue) and the calls parked on one, waiting for
// their client (parked, see pool_park.go). A call gets an instance when
// the count is below max and the memory below the budget, or an idle one;
// otherwise it waits in the queue, and the calls waiting are served in the
// order they came, so that a call that waits is not overtaken by those
// that came after it.
type pool struct {
	compiled    *module
	cfg         wazero.ModuleConfig
	memPages    uint32 // the limit of each instance's Extism memory
	idleTimeout time.Duration
	stopReaper  chan struct{}
	done        chan struct{} // closed once the compiled module is closed

	mu       sync.Mutex
	max      int                    // the most instances at once
	idle     []*instance            // newest last
	busy     map[*instance]struct{} // the instances lent out
	starting int                    // instances being made for a get
	closed   bool
	// minIdle instances are kept however long they are idle: one for a
	// plugin that keeps state (its state is in it), none for a stateless
	// one (setShape).
	minIdle int
	// budget bounds the memory of the instances (see room); held is what
	// they hold (each one's size: as last measured, and as its linear
	// memory grew since, see pool_memory.go), expected what the instances
	// being made are expected to hold.
	budget   uint64
	held     uint64
	expected uint64
	// queue holds the calls waiting for an instance, first come first.
	queue []*waiter
	// parked holds the calls waiting for their client, oldest first, and
	// grace the timer that ends the next one (pool_park.go).
	parked    []*parking
	grace     *time.Timer
	holdGrace time.Duration
	// refused marks the instances whose growth the budget refused during
	// their call (pool_memory.go).
	refused map[*instance]bool
}

// waiter is a call waiting in the queue. Its grant is set, under the
// pool's mu, when it is served: an idle instance, leave to make one
// expected to hold size, or an error; ready is then sent once.
type waiter struct {
	since  time.Time
	ready  chan struct{}
	served bool
	inst   *instance
	size   uint64
	err    error
}

// defaultIdleTimeout is how long an idle instance is kept.
const defaultIdleTimeout = time.Minute

func newPool(compiled *module, cfg wazero.ModuleConfig, memPages uint32, max int) *pool {
	p := &pool{
		compiled:    compiled,
		cfg:         cfg,
		memPages:    memPages,
		max:         max,
		done:        make(chan struct{}),
		idleTimeout: defaultIdleTimeout,
		stopReaper:  make(chan struct{}),
		busy:        map[*instance]struct{}{},
		minIdle:     1,
		budget:      poolBudget(memPages),
		holdGrace:   holdGrace,
	}
	go p.reap()
	return p
}

// setShape sets the number of instances, and how many idle ones are kept
// however long they are idle.
func (p *pool) setShape(max, minIdle int) {
	p.mu.Lock()
	p.max, p.minIdle = max, minIdle
	p.dispatch() // a larger pool may serve a waiting call
	p.mu.Unlock()
}

// The memory budget.
//
// A pool may hold max instances, and each instance may grow its linear
// memory and its Extism memory to the memory limit: a stateless plugin on a
// machine with many cores could take that many times twice its limit. So
// the pool also has a budget of memory, as much as one instance may hold
// (twice the memory limit): a new instance starts only while the memory
// the instances hold, plus as much as the largest of them holds (what the
// new one will likely grow to), fits in it. The first instance always
// starts. Otherwise the call waits for an instance to be returned, as it
// waits when max instances are in use. An instance's linear memory is
// counted as it grows, and may grow only while the budget has room (or it
// is the only instance): see pool_memory.go. Small instances (a Go plugin
// holds a few megabytes) are not held back; instances that grew to
// hundreds of megabytes are not multiplied by the cores.

// poolBudget is the memory budget of a pool whose instances' memories are
// limited to memPages pages each.
func poolBudget(memPages uint32) uint64 { return 2 * uint64(memPages) * pageSize }

// instanceSize is what inst holds: its linear memory and its Extism memory.
// inst must not be running a call (or be stopped in a host import, on the
// goroutine of its call).
func instanceSize(inst *instance) uint64 { return inst.memory() + inst.kernel.size() }

// room reports whether a new instance fits the budget, and the size to
// expect of it. p.mu must be held.
func (p *pool) room() (bool, uint64) {
	var largest uint64
	for inst := range p.busy {
		largest = max(largest, inst.size)
	}
	for _, inst := range p.idle {
		largest = max(largest, inst.size)
	}
	if p.held+p.expected == 0 {
		return true, largest // the first instance
	}
	return p.held+p.expected+largest <= p.budget, largest
}

// live is the number of instances: lent out, idle and being made. p.mu
// must be held.
func (p *pool) live() int { return len(p.busy) + len(p.idle) + p.starting }

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
	for len(p.idle) > p.minIdle && now.Sub(p.idle[0].lastUsed) > p.idleTimeout {
		old = append(old, p.idle[0])
		p.held -= p.idle[0].size
		p.idle = p.idle[1:]
	}
	if len(old) > 0 {
		p.dispatch()
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
// instances are in use, or a new one would not fit the memory budget, or
// other calls wait already, it waits in turn, until ctx is done or, when
// wait > 0, for at most wait (then it fails with ErrBusy).
func (p *pool) get(ctx context.Context, wait time.Duration) (*instance, error) {
	p.mu.Lock()
	if len(p.queue) == 0 {
		if inst, size, ok, err := p.take(); ok {
			p.mu.Unlock()
			return p.granted(ctx, inst, size, err)
		}
	}
	w := &waiter{since: time.Now(), ready: make(chan struct{}, 1)}
	p.queue = append(p.queue, w)
	p.contend() // the parked calls' grace (pool_park.go)
	p.mu.Unlock()

	var expired <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	var err error
	select {
	case <-w.ready:
		return p.granted(ctx, w.inst, w.size, w.err)
	case <-ctx.Done():
		err = fmt.Errorf("waiting for a free instance: %w", context.Cause(ctx))
	case <-expired:
		err = nil
	}
	p.mu.Lock()
	if w.served { // served meanwhile: the grant is this call's
		p.mu.Unlock()
		return p.granted(ctx, w.inst, w.size, w.err)
	}
	p.queue = slices.DeleteFunc(p.queue, func(x *waiter) bool { return x == w })
	if err == nil {
		err = p.busyError(wait) // who holds the instances (hold.go)
	}
	p.contend()
	p.mu.Unlock()
	return nil, err
}

// take lends an idle instance, or leave to make one expected to hold size,
// when the pool has one for a call; ok false means the call must wait.
// p.mu must be held.
func (p *pool) take() (inst *instance, size uint64, ok bool, err error) {
	if p.closed {
		return nil, 0, true, ErrClosed
	}
	if n := len(p.idle); n > 0 {
		inst = p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.busy[inst] = struct{}{}
		return inst, 0, true, nil
	}
	if len(p.busy)+p.starting >= p.max {
		return nil, 0, false, nil
	}
	fits, size := p.room()
	if !fits {
		return nil, 0, false, nil
	}
	p.starting++
	p.expected += size
	return nil, size, true, nil
}

// dispatch serves the waiting calls, first come first, while the pool has
// an instance for them. p.mu must be held.
func (p *pool) dispatch() {
	for len(p.queue) > 0 {
		inst, size, ok, err := p.take()
		if !ok {
			return
		}
		w := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		w.served, w.inst, w.size, w.err = true, inst, size, err
		w.ready <- struct{}{}
	}
}

// granted finishes a get that take served: the instance, or a new one.
func (p *pool) granted(ctx context.Context, inst *instance, size uint64, err error) (*instance, error) {
	switch {
	case err != nil:
		return nil, err
	case inst != nil:
		return inst, nil
	}
	return p.start(ctx, size)
}

// start makes a new instance for get, which counted it in starting and
// expected it to hold size.
func (p *pool) start(ctx context.Context, size uint64) (*instance, error) {
	// Instantiation must not be cut short by the caller's deadline: a
	// half-built instance is useless, and the cost is bounded.
	m := &meter{p: p}
	inst, err := p.compiled.instantiate(withMeter(context.WithoutCancel(ctx), m), p.cfg, p.memPages)
	p.mu.Lock()
	p.starting--
	p.expected -= size
	if err != nil {
		last := p.closed && p.live() == 0
		p.dispatch()
		p.mu.Unlock()
		if last {
			p.closeCompiled()
		}
		return nil, err
	}
	inst.size = instanceSize(inst)
	p.held += inst.size
	p.busy[inst] = struct{}{}
	m.inst = inst // from now on its growth counts
	p.mu.Unlock()
	return inst, nil
}

// put gives back an instance borrowed with get. Unhealthy instances, all
// instances once the pool is closed, and one whose memory would take the
// pool's instances past the budget are closed instead of kept.
func (p *pool) put(inst *instance, healthy bool) {
	size := uint64(0)
	keep := healthy && !inst.mod.IsClosed()
	if keep {
		size = instanceSize(inst) // not under p.mu: it asks wazero
	}
	p.mu.Lock()
	delete(p.busy, inst)
	if p.refused != nil {
		delete(p.refused, inst)
	}
	p.held -= inst.size
	// An instance is kept while it fits beside the others (the only one
	// always does).
	keep = keep && !p.closed && (p.held+p.expected == 0 || p.held+p.expected+size <= p.budget)
	if keep {
		inst.size = size
		p.held += size
		inst.lastUsed = time.Now()
		p.idle = append(p.idle, inst)
	}
	last := p.closed && p.live() == 0
	p.dispatch()
	p.mu.Unlock()
	if !keep {
		inst.close(context.Background())
		if !healthy {
			scheduleRelease() // a crash or a timeout may leave much garbage
		}
	}
	if last {
		p.closeCompiled()
	}
}

func (p *pool) closeCompiled() {
	p.compiled.close(context.Background())
	close(p.done)
}

// close closes idle instances at once, and fails the calls waiting for
// one with ErrClosed. Calls in progress finish on their instances, which
// are closed as they are returned; the compiled module is closed after the
// last of them. close does not wait for that: see wait.
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
	for _, inst := range idle {
		p.held -= inst.size
	}
	p.dispatch() // ErrClosed for every waiting call
	p.contend()
	last := p.live() == 0
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
	return len(p.busy) + p.starting, len(p.idle)
}
