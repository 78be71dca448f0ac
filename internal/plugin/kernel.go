package plugin

import (
	"reflect"
	"unsafe"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
)

// Extism keeps a plugin's memory, input and output in a second Wasm module,
// its kernel, and implements the guest's extism:host/env imports (alloc,
// input_load_u64, output_set and the rest) by calling the kernel's exports.
// It looks each export up again on every such call, and in wazero every
// lookup builds a fresh call engine with its own 10 KiB stack. A tool call
// of a Go-PDK plugin makes a few dozen of them, so about a quarter of a
// megabyte of garbage per call, which the profile of the benchmark shows as
// the largest single source of allocation in Hangar (see
// docs/performance.md).
//
// cacheKernel wraps the instance's kernel module so that each export is
// looked up once per instance and its call engine reused. That is sound
// because an instance is used by one goroutine at a time (the pool's rule)
// and kernel exports never call back into the host, so a kernel function is
// never re-entered while it runs.
//
// The kernel is an unexported field of extism.Plugin, and this reaches it
// by reflection. The field's name and type are checked, not assumed: after
// an Extism upgrade that changes them, cacheKernel reports false, instances
// keep working unwrapped, and TestKernelCached fails to say so.

// cachedKernel is a kernel module whose exported functions are looked up
// once.
type cachedKernel struct {
	api.Module
	fns map[string]api.Function
}

func (k *cachedKernel) ExportedFunction(name string) api.Function {
	if f, ok := k.fns[name]; ok {
		return f
	}
	f := k.Module.ExportedFunction(name)
	if f != nil {
		k.fns[name] = f
	}
	return f
}

// kernelField locates extism.Plugin's kernel module field, or is nil when
// this version of Extism does not have it as expected.
var kernelField = func() *reflect.StructField {
	f, ok := reflect.TypeFor[extism.Plugin]().FieldByName("extism")
	if !ok || f.Type != reflect.TypeFor[api.Module]() {
		return nil
	}
	return &f
}()

// kernelOf returns the address of p's kernel module field, or nil.
func kernelOf(p *extism.Plugin) *api.Module {
	if kernelField == nil || p == nil {
		return nil
	}
	return (*api.Module)(unsafe.Add(unsafe.Pointer(p), kernelField.Offset))
}

// cacheKernel wraps p's kernel module in a cachedKernel, once, and reports
// whether it did.
func cacheKernel(p *extism.Plugin) bool {
	m := kernelOf(p)
	if m == nil {
		return false
	}
	switch k := (*m).(type) {
	case nil:
		return false
	case *cachedKernel:
		return true
	default:
		*m = &cachedKernel{Module: k, fns: make(map[string]api.Function, 24)}
		return true
	}
}

// kernelCached reports whether p's kernel module is wrapped.
func kernelCached(p *extism.Plugin) bool {
	m := kernelOf(p)
	if m == nil {
		return false
	}
	_, ok := (*m).(*cachedKernel)
	return ok
}
