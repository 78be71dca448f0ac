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

// pool hands out plugin instances, at most max of them at once, and a new
// one only while the instances' memory stays within the pool's budget (see
// room). Idle instances are kept for reuse, newest first, and closed once
// they have been idle for idleTimeout, down to minIdle; an instance
// returned as unhealthy is closed at once.
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

	// minIdle instances are kept however long they are idle: one for a
	// plugin that keeps state (its state is in it), none for a stateless
	// one (setShape).
	minIdle int
	// budget bounds the memory of the instances (see room); held is what
	// they hold (instanceSize, as last measured), with starting the size
	// expected of each instance being created. returned, made by the
	// first call that waits for memory, is closed whenever an instance is
	// returned or closed (nil while no call waits: a channel made at every
	// return cost each call an allocation).
	budget   uint64
	held     uint64
	starting uint64
	returned chan struct{}
	// capped is set while calls wait for memory rather than for a slot,
	// for the busy error.
	capped bool

	// waiters counts the calls waiting for an instance; contention is
	// closed while there is one (see hold.go).
	waiters    int
	contention chan struct{}
}

// defaultIdleTimeout is how long an idle instance is kept.
const defaultIdleTimeout = time.Minute

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
		minIdle:     1,
		budget:      poolBudget(memPages),
	}
	go p.reap()
	return p
}

// setShape sets the number of instances, and how many idle ones are kept
// however long they are idle. It is only for a pool that no one else uses
// yet, with no instance in use.
func (p *pool) setShape(max, minIdle int) {
	p.slots = make(chan struct{}, max)
	p.mu.Lock()
	p.minIdle = minIdle
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
// waits when max instances are in use. Small instances (a Go plugin holds a
// few megabytes) are not held back; instances that grew to hundreds of
// megabytes are not multiplied by the cores.

// poolBudget is the memory budget of a pool whose instances' memories are
// limited to memPages pages each.
func poolBudget(memPages uint32) uint64 { return 2 * uint64(memPages) * pageSize }

// instanceSize is what inst holds: its linear memory and its Extism memory.
// inst must not be running a call.
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
	if p.held+p.starting == 0 {
		return true, largest // the first instance
	}
	return p.held+p.starting+largest <= p.budget, largest
}

// changed wakes the calls waiting for memory: an instance was returned or
// closed. p.mu must be held.
func (p *pool) changed() {
	if p.returned != nil {
		close(p.returned)
		p.returned = nil
	}
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
	for len(p.idle) > p.minIdle && now.Sub(p.idle[0].lastUsed) > p.idleTimeout {
		old = append(old, p.idle[0])
		p.held -= p.idle[0].size
		p.idle = p.idle[1:]
	}
	if len(old) > 0 {
		p.changed()
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
// instances are in use, or a new one would not fit the memory budget, it
// waits, until ctx is done or, when wait > 0, for at most wait (then it
// fails with ErrBusy).
func (p *pool) get(ctx context.Context, wait time.Duration) (*instance, error) {
	var (
		timer   *time.Timer
		expired <-chan time.Time
		waiting bool
	)
	// begin counts the call as waiting, from its first wait until end.
	begin := func() {
		if waiting {
			return
		}
		waiting = true
		p.wait1(+1)
		if wait > 0 && timer == nil {
			timer = time.NewTimer(wait)
			expired = timer.C
		}
	}
	end := func() {
		if waiting {
			waiting = false
			p.wait1(-1)
		}
	}
	defer func() {
		end()
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case p.slots <- struct{}{}:
		default:
			begin()
			select {
			case p.slots <- struct{}{}:
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for a free instance: %w", context.Cause(ctx))
			case <-expired:
				return nil, p.busyError(wait) // who holds the instances (hold.go)
			}
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.slots
			return nil, ErrClosed
		}
		if n := len(p.idle); n > 0 {
			p.inUse++
			inst := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.busy[inst] = true
			p.capped = false
			p.mu.Unlock()
			end()
			return inst, nil
		}
		fits, size := p.room()
		if !fits {
			// Wait for an instance to come back, or for memory.
			p.capped = true
			if p.returned == nil {
				p.returned = make(chan struct{})
			}
			returned := p.returned
			p.mu.Unlock()
			<-p.slots
			begin()
			select {
			case <-returned:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for a free instance: %w", context.Cause(ctx))
			case <-expired:
				return nil, p.busyError(wait)
			}
		}
		p.inUse++
		p.starting += size
		p.mu.Unlock()
		end()
		return p.start(ctx, size)
	}
}

// start makes a new instance for get, which counted it in inUse and
// expected it to hold size.
func (p *pool) start(ctx context.Context, size uint64) (*instance, error) {
	// Instantiation must not be cut short by the caller's deadline: a
	// half-built instance is useless, and the cost is bounded.
	inst, err := p.compiled.instantiate(context.WithoutCancel(ctx), p.cfg, p.memPages)
	p.mu.Lock()
	p.starting -= size
	if err != nil {
		p.changed()
		p.mu.Unlock()
		p.release()
		return nil, err
	}
	inst.size = instanceSize(inst)
	p.held += inst.size
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
	size := uint64(0)
	keep := healthy && !inst.mod.IsClosed()
	if keep {
		size = instanceSize(inst) // not under p.mu: it asks wazero
	}
	p.mu.Lock()
	delete(p.busy, inst)
	keep = keep && !p.closed
	p.held -= inst.size
	if keep {
		inst.size = size
		p.held += size
		inst.lastUsed = time.Now()
		p.idle = append(p.idle, inst)
	}
	p.changed()
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
	for _, inst := range idle {
		p.held -= inst.size
	}
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
