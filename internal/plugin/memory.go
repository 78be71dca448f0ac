package plugin

import (
	"github.com/tetratelabs/wazero/experimental"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Where plugin memory lives.
//
// An instance has two memories, each bounded by the plugin's memory limit:
// the guest's linear memory and its Extism memory (kernel.go). wazero keeps
// a linear memory in a Go slice that it grows by appending: each growth
// copies the memory into a new slice and leaves the old one to the garbage
// collector, and a discarded instance's memory stays in the Go heap until
// a collection, then in the process until the runtime's scavenger returns
// it, minutes later. A plugin that grows its memory to the limit and
// crashes, call after call, took the process far past the sum of its
// limits and left it there.
//
// So each memory is a reservation of address space (reserve): as large as
// the memory may grow, mapped without access and without being counted
// against the machine's memory, then made accessible as the memory grows,
// in place, never copied. Freeing an instance unmaps its memories: the
// operating system has the pages back at once, and the Go heap never held
// them, so they neither pace the garbage collector nor wait for it. Where
// the platform cannot reserve (not Linux, or a mapping
// refused), memory falls back to a Go slice.

// memoryAllocator allocates the linear memory of every instance.
var memoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	if r := reserve(max); r != nil {
		return r
	}
	return &heapMemory{max: max}
})

// A reservation is also a wazero LinearMemory.

// Reallocate implements experimental.LinearMemory: the memory grown to
// size bytes, in place.
func (r *reservation) Reallocate(size uint64) []byte { return r.grow(size) }

// Free implements experimental.LinearMemory.
func (r *reservation) Free() { r.free() }

// heapMemory is a linear memory in a Go slice, grown as wazero grows its
// own, for when no reservation can be made.
type heapMemory struct {
	buf []byte
	max uint64
}

func (m *heapMemory) Reallocate(size uint64) []byte {
	switch {
	case size > m.max:
		return nil
	case size <= uint64(cap(m.buf)):
		m.buf = m.buf[:size]
	default:
		m.buf = append(m.buf[:cap(m.buf)], make([]byte, size-uint64(cap(m.buf)))...)
	}
	return m.buf
}

func (m *heapMemory) Free() { m.buf = nil }

// callStackMax bounds the call stack wazero's compiler keeps in the Go
// heap for a running instance: it doubles the stack as the guest's calls
// nest, up to about 84 MB, and a guest that recurses without end has both
// the last two (126 MB) at once.
const callStackMax = 128 << 20

// InstanceMemory reports the most memory one instance of a plugin with
// limits l may take from the process: in the Go heap (the call stack of
// wazero's compiler, a call's output as read and as sent, and, where they
// cannot be reserved, its two memories), and reserved outside the heap
// (its linear and Extism memories, each up to the memory limit, on Linux).
// An idle instance keeps its memories; a closed one gives everything back.
func InstanceMemory(l config.Limits) (heap, reserved int64) {
	l = withDefaults(l)
	memories := 2 * int64(l.MemoryPages) * pageSize
	heap = callStackMax + 2*l.MaxOutput
	r := reserve(pageSize)
	if r == nil {
		return heap + memories, 0
	}
	r.free()
	return heap, memories
}
