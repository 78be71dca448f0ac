package plugin

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/experimental"
)

// Memory counted as it grows.
//
// The budget (pool.go) would see an instance's size only when it is made
// and when it is returned: a call that grows its memory, then waits for
// its client, holds memory the pool does not count, and calls started
// meanwhile made new instances that grew too. So each instance's linear
// memory is metered: every growth is counted in the pool's account at
// once, and refused (memory.grow fails, as at the memory limit) when it
// would take the pool's instances past the budget, unless the instance is
// the pool's only one. The Extism memory, which grows by the call's input
// and output, is measured again when the call parks (pool_park.go) and
// when it returns.

// meter counts the growth of one instance's linear memory in its pool.
type meter struct {
	p *pool
	// inst is the instance, set under p.mu once the pool counts it; nil
	// while it is being made (start measures it then).
	inst *instance
}

type meterKey struct{}

// withMeter returns ctx with m, for instantiate to meter the memory of the
// instance it makes (allocatorFor).
func withMeter(ctx context.Context, m *meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// charge counts a growth of delta bytes, or reports false if it does not
// fit the budget.
func (m *meter) charge(delta uint64) bool {
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.inst == nil {
		return true
	}
	if p.held+p.expected+delta > p.budget && p.live() > 1 {
		if p.refused == nil {
			p.refused = map[*instance]bool{}
		}
		p.refused[m.inst] = true
		return false
	}
	m.inst.size += delta
	p.held += delta
	return true
}

// refusedError adds to err, the error of a call on inst, that the pool
// refused the instance memory, if it did: the guest's out-of-memory is
// then the budget's, not its limit's.
func (p *pool) refusedError(inst *instance, err error) error {
	p.mu.Lock()
	refused := p.refused[inst]
	delete(p.refused, inst)
	p.mu.Unlock()
	if !refused {
		return err
	}
	return fmt.Errorf("%w; the memory was refused because the plugin's instances together hold its memory budget (%d MiB, twice limits.memory): call again once its other calls end, or lower its max_instances", err, p.budget>>20)
}

// refund gives back a growth that was counted but failed.
func (m *meter) refund(delta uint64) {
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.inst != nil {
		m.inst.size -= delta
		p.held -= delta
	}
}

// allocatorFor returns the memory allocator of an instance made under ctx:
// memoryAllocator's memories, metered if ctx has a meter.
func allocatorFor(ctx context.Context) experimental.MemoryAllocator {
	m, _ := ctx.Value(meterKey{}).(*meter)
	if m == nil {
		return memoryAllocator
	}
	return experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		return &meteredMemory{mem: memoryAllocator.Allocate(capacity, max), m: m}
	})
}

// meteredMemory is a linear memory whose growth its meter counts.
type meteredMemory struct {
	mem  experimental.LinearMemory
	m    *meter
	size uint64 // as last reallocated
}

func (mm *meteredMemory) Reallocate(size uint64) []byte {
	var delta uint64
	if size > mm.size {
		delta = size - mm.size
		if !mm.m.charge(delta) {
			return nil // memory.grow fails
		}
	}
	b := mm.mem.Reallocate(size)
	if b == nil {
		if delta > 0 {
			mm.m.refund(delta)
		}
		return nil
	}
	mm.size = size
	return b
}

func (mm *meteredMemory) Free() { mm.mem.Free() }
