package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// Running modules.
//
// Hangar runs Extism plugins on wazero itself, as Extism's Go SDK does but
// for the kernel (kernel.go): a plugin's wazero runtime holds WASI, the
// extism:host/env module (env.go), Hangar's own imports (host.go) and the
// fuel guard's import (guard.go), all Go functions, and the compiled guest.
// An instance is the guest's module instance and its Extism memory. A call
// is what Extism's Plugin.Call does: the memory is reset and the input put
// in a block of its own, the guest's language runtime is initialized before
// its first call (_initialize, __wasm_call_ctors, hs_init, as Extism
// detects them), the export runs, and the error the guest set, if any, and
// its output are read from the memory.

// module is a compiled plugin, ready to be instantiated.
type module struct {
	name     string
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	exports  map[string]api.FunctionDefinition
	// init names the exports that initialize the guest's language runtime,
	// in order, and hsInit whether the last is Haskell's hs_init(0, 0).
	init   []string
	hsInit bool
	count  atomic.Uint64 // numbers instances, for their names in stack traces
	grants *fsGrants     // gives each instance its refusing directory (ungranted.go)
}

// newModule prepares compiled, whose imports are in rt, to be instantiated.
func newModule(name string, rt wazero.Runtime, compiled wazero.CompiledModule) *module {
	m := &module{name: name, rt: rt, compiled: compiled, exports: compiled.ExportedFunctions()}
	// Extism's detection: Haskell's runtime (with the reactor's
	// _initialize first, if there is one); else a WASI reactor; else a
	// WASI command's constructors.
	noParams := func(name string) bool {
		d, ok := m.exports[name]
		return ok && len(d.ParamTypes()) == 0
	}
	switch {
	case m.exports["hs_init"] != nil:
		if _, ok := m.exports["_initialize"]; ok {
			m.init = append(m.init, "_initialize")
		}
		m.init = append(m.init, "hs_init")
		m.hsInit = true
	case noParams("_initialize"):
		m.init = []string{"_initialize"}
	case noParams("__wasm_call_ctors"):
		m.init = []string{"__wasm_call_ctors"}
	}
	return m
}

// has reports whether the module exports the named function.
func (m *module) has(name string) bool { return m.exports[name] != nil }

// close releases the module: its machine code and decoded form go once
// its instances are gone. Runtimes that share a compilation cache share an
// engine, which keeps every module compiled in it until the module is
// closed: closing the runtime alone would leave them there, a plugin's
// worth of memory at every reload, until the server stopped.
func (m *module) close(ctx context.Context) error {
	m.compiled.Close(ctx)
	return m.rt.Close(ctx)
}

// instance is one instance of a plugin's module. It is not safe for
// concurrent use: the pool lends it to one call at a time.
type instance struct {
	mod         api.Module
	m           *module
	kernel      *kernel
	fns         map[string]exported // exports looked up so far
	initialized bool                // the guest's runtime is
	stack       [1]uint64
	// vars are the instance's Extism variables (var_get, var_set).
	vars map[string][]byte
	// httpStatus is the status of the last http_request's response.
	httpStatus int32

	httpHeaders []byte // its header fields, for http_headers (see httpRequest)

	lastUsed time.Time
	// size is what the instance holds (instanceSize) as the pool last
	// measured it: when it was made, and each time it was returned.
	size uint64

	// varsBase is the copy of the plugin's variables the instance was
	// given, at varsVersion (see sharedVars).
	varsBase    map[string][]byte
	varsVersion uint64
	// changed holds the lists the instance ever reported changed: the
	// plugin's lists are what it says, so if it is discarded they must be
	// read again from another.
	changed ListSet

	// clock is the instance's WASI sleep, which ends with the running call.
	clock *callClock
	// hold describes the call the instance serves, for the busy errors of
	// others (hold.go); nil between calls.
	hold atomic.Pointer[holding]
}

// instantiate makes a new instance, whose Extism memory may grow to
// maxPages.
func (m *module) instantiate(ctx context.Context, cfg wazero.ModuleConfig, maxPages uint32) (*instance, error) {
	// Start functions are not run: Extism initializes the guest at its
	// first call instead, where host functions can tell which call it is.
	name := fmt.Sprintf("%s#%d", m.name, m.count.Add(1))
	clock := &callClock{}
	ctx = experimental.WithMemoryAllocator(ctx, allocatorFor(ctx)) // memory.go, pool_memory.go
	// Each instance has a refusing directory of its own (ungranted.go).
	cfg = m.grants.config(cfg, clock)
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg.WithName(name).WithStartFunctions().WithNanosleep(clock.sleep))
	if err != nil {
		return nil, err
	}
	return &instance{
		mod:    mod,
		m:      m,
		kernel: newKernel(maxPages),
		fns:    make(map[string]exported, 4),
		vars:   map[string][]byte{},
		clock:  clock,
	}, nil
}

// close closes the instance and gives its memories back to the system.
func (inst *instance) close(ctx context.Context) error {
	err := inst.mod.Close(ctx)
	inst.kernel.release()
	return err
}

// callCtx is the context a call runs in: host functions find their
// instance in it.
type callCtx struct {
	context.Context
	inst *instance
}

type instanceKey struct{}

func (c *callCtx) Value(key any) any {
	if key == (instanceKey{}) {
		return c.inst
	}
	return c.Context.Value(key)
}

// instanceFrom returns the instance whose call ctx is. Host functions get
// the very context the call was made with, so the first test is the one
// that answers.
func instanceFrom(ctx context.Context) *instance {
	if c, ok := ctx.(*callCtx); ok {
		return c.inst
	}
	if inst, ok := ctx.Value(instanceKey{}).(*instance); ok {
		return inst
	}
	panic(errors.New("Extism host function called outside a plugin call"))
}

// result is what a call of an export returned.
type result struct {
	rc  uint32 // the export's result, 0 when it has none
	out []byte
	// err is the error the plugin set (Extism's error_set), or "".
	err string
}

// call runs export with input. A trap, an exit with a non-zero code, or a
// failure to start the call is the error; what the plugin reports is in
// the result.
func (inst *instance) call(ctx context.Context, export string, input []byte) (res result, err error) {
	if inst.mod.IsClosed() {
		return result{rc: 1}, errors.New("module is closed")
	}
	defer func() {
		// A trap in the host's own use of the memory (the plugin left it
		// corrupted) fails the call like a trap in the guest.
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			res, err = result{rc: 1}, e
		}
	}()
	cctx := &callCtx{Context: ctx, inst: inst}
	inst.clock.ctx = cctx
	defer func() { inst.clock.ctx = nil }()
	if err := inst.kernel.setInput(input); err != nil {
		return result{rc: 1}, err
	}
	fn, err := inst.function(export)
	if err != nil {
		return result{rc: 1}, err
	}
	if !inst.initialized && export != "_start" && export != "_initialize" {
		if err := inst.initialize(cctx); err != nil {
			return result{rc: 1}, &initError{err} // errors.go
		}
		inst.initialized = true
	}
	inst.stack[0] = 0
	err = fn.CallWithStack(cctx, inst.stack[:])
	// As Extism: an exit is the status, and exit code 0 a success.
	switch exit, isExit := err.(*sys.ExitError); {
	case isExit:
		res.rc = exit.ExitCode()
		if res.rc == 0 {
			err = nil
		}
	case err != nil:
		res.rc = 1
	case fn.results == 1:
		res.rc = uint32(inst.stack[0])
	}
	if err != nil {
		return res, err
	}
	res.err = inst.kernel.errorMessage()
	res.out = inst.kernel.output()
	return res, nil
}

// exported is an export of an instance's module, and how many results it
// has (wazero's Definition().ResultTypes() allocates at every call).
type exported struct {
	api.Function
	results int
}

// function returns the export, looked up once per instance: each lookup
// in wazero makes a new call engine.
func (inst *instance) function(name string) (exported, error) {
	if fn := inst.fns[name]; fn.Function != nil {
		return fn, nil
	}
	fn := inst.mod.ExportedFunction(name)
	if fn == nil {
		return exported{}, fmt.Errorf("unknown function: %s", name)
	}
	d := fn.Definition()
	n := len(d.ResultTypes())
	if n > 1 {
		return exported{}, fmt.Errorf("function %s has %d results, expected 0 or 1", name, n)
	}
	if n := len(d.ParamTypes()); n > 0 {
		return exported{}, fmt.Errorf("function %s takes %d parameters, expected none", name, n)
	}
	e := exported{Function: fn, results: n}
	inst.fns[name] = e
	return e, nil
}

// initialize runs the guest's language runtime initialization. Haskell's
// _initialize may fail: as in Extism, only hs_init's failure counts.
func (inst *instance) initialize(ctx context.Context) error {
	for i, name := range inst.m.init {
		fn := inst.mod.ExportedFunction(name)
		if fn == nil {
			continue
		}
		if inst.m.hsInit && i == len(inst.m.init)-1 {
			_, err := fn.Call(ctx, 0, 0)
			return err
		}
		if _, err := fn.Call(ctx); err != nil && !inst.m.hsInit {
			return err
		}
	}
	return nil
}
