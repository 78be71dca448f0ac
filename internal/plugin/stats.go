package plugin

import (
	"reflect"
	"time"
	"unsafe"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
)

// Read-only figures about a plugin, for metrics.

// CompileTime reports how long compiling the plugin took when it was
// loaded: little when the machine code came from the compilation cache.
func (p *Plugin) CompileTime() time.Duration { return p.compileTime }

// GuestMemory reports the bytes of linear memory held by the plugin's idle
// instances. Instances running a call are not counted: their memory may be
// growing, and is read only while no call runs on it.
func (p *Plugin) GuestMemory() uint64 {
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	var n uint64
	for _, inst := range p.pool.idle {
		n += guestMemory(inst.p)
	}
	return n
}

// guestMemory returns the size of the linear memory of p's main module (not
// that of Extism's kernel, which extism.Plugin.Memory returns), or 0 when
// this version of Extism does not hold the module where expected. Like
// kernelOf, it reaches an unexported field whose name and type are checked.
func guestMemory(p *extism.Plugin) uint64 {
	if mainModuleField == nil || p == nil {
		return 0
	}
	m := *(*api.Module)(unsafe.Add(unsafe.Pointer(p), mainModuleField.Offset))
	if m == nil {
		return 0
	}
	if mem := m.Memory(); mem != nil {
		return uint64(mem.Size())
	}
	return 0
}

// mainModuleField locates extism.Plugin's guest module field, or is nil.
var mainModuleField = func() *reflect.StructField {
	f, ok := reflect.TypeFor[extism.Plugin]().FieldByName("mainModule")
	if !ok || f.Type != reflect.TypeFor[api.Module]() {
		return nil
	}
	return &f
}()
