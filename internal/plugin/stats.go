package plugin

import (
	"reflect"
	"time"
)

// Read-only figures about a plugin, for metrics.

// CompileTime reports how long compiling the plugin took when it was
// loaded: little when the machine code came from the compilation cache.
func (p *Plugin) CompileTime() time.Duration { return p.compileTime }

// GuestMemory reports the bytes of linear memory held by the plugin's idle
// instances (not their Extism memory, which kernel.go keeps in Go).
// Instances running a call are not counted: their memory may be growing, and
// is read only while no call runs on it.
func (p *Plugin) GuestMemory() uint64 {
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	var n uint64
	for _, inst := range p.pool.idle {
		n += inst.memory()
	}
	return n
}

// memory returns the size of the instance's linear memory.
func (inst *instance) memory() uint64 {
	if inst.mod == nil {
		return 0
	}
	// A module without a memory has a nil *wasm.MemoryInstance as its
	// api.Memory, whose methods panic.
	if mem := inst.mod.Memory(); mem != nil && !reflect.ValueOf(mem).IsNil() {
		return uint64(mem.Size())
	}
	return 0
}
