package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"
	"weak"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/hangar-mcp/hangar/internal/atomicfile"
	"github.com/hangar-mcp/hangar/internal/fuel"
)

// The guard: how a call that runs too long is stopped.
//
// Hangar rewrites each module at load time with a fuel counter (package
// fuel): every loop iteration and every entry into a function that calls
// takes from it, and when it runs out the guest calls guardFuel, which
// looks at the call's context. Once the call's time is up or its client
// cancelled it, guardFuel panics, wazero unwinds the guest, and the call
// fails with ErrTimeout (or the cancellation); otherwise it refills the
// counter. That call into Go, a few thousand times a second in a busy
// guest, is also what lets the Go garbage collector stop the goroutine
// running the guest: wazero's machine code cannot be preempted, and a guest
// that never calls out would hold every goroutine of the process at the
// next collection.
//
// A module the rewriter does not handle (see fuel.ErrUnsupported) is run
// as before, under wazero's WithCloseOnContextDone, which checks the context
// at every loop head and function entry at a much higher cost per call
// (RATIONALE.md, "Why a fuel counter?").

// errStopped is what guardFuel panics with to stop a call.
var errStopped = errors.New("plugin stopped: its call ended")

// rewrite is fuel.Rewrite; tests replace it.
var rewrite = fuel.Rewrite

// guardFunction is the import fuel-instrumented modules call when their
// fuel runs out.
func guardFunction() hostFunc {
	return hostFunc{fuel.Name, nil, []api.ValueType{api.ValueTypeI64}, guardFuel}
}

func guardFuel(ctx context.Context, stack []uint64) {
	if ctx.Err() != nil {
		panic(errStopped)
	}
	stack[0] = fuel.Budget
}

// compile compiles wasm instrumented with the fuel counter, or, when the
// rewriter cannot handle it, as it is under wazero's termination check.
func (e *Engine) compile(ctx context.Context, wasm []byte, rc wazero.RuntimeConfig, p *Plugin) (*module, error) {
	// The digest of the original names the module in the fuel cache, and
	// with guarded, the bytes compiled (the rewrite is deterministic).
	digest := sha256.Sum256(wasm)
	leave, gerr := enterCompile(ctx)
	if gerr != nil {
		return nil, gerr
	}
	defer leave()
	compileAs := func(wasm []byte, guarded bool) (*module, error) {
		unlock := e.compiling.lock(moduleKey{digest, guarded})
		defer unlock()
		return p.compileModule(ctx, wasm, rc.WithCloseOnContextDone(!guarded))
	}
	start := time.Now()
	out, err := e.fuel.rewrite(digest, wasm)
	if err != nil {
		// Malformed, or a feature the rewriter does not handle: the
		// compiler says which.
		compiled, cerr := compileAs(wasm, false)
		if cerr != nil {
			return nil, cerr
		}
		p.log.Warn("plugin not instrumented with a fuel counter; running it under wazero's slower termination check", "reason", err)
		return compiled, nil
	}
	p.log.Debug("instrumented with a fuel counter", "elapsed", time.Since(start))
	compiled, err := compileAs(out, true)
	if err == nil {
		return compiled, nil
	}
	// A module the rewriter reads but the compiler refuses is invalid: the
	// original says why in its own terms. A module valid only without the
	// rewrite would be a bug of the rewriter; it runs under the old guard.
	compiled, err2 := compileAs(wasm, false)
	if err2 != nil {
		return nil, err2
	}
	p.log.Warn("plugin not instrumented with a fuel counter: the rewritten module does not compile; running it under wazero's slower termination check", "reason", err)
	return compiled, nil
}

// compileModule makes p's runtime, with WASI and the host modules its
// imports may name (extism:host/env, Hangar's extism:host/user and the
// fuel guard's), and compiles wasm in it. The caller holds the module's
// lock (see moduleLocks).
func (p *Plugin) compileModule(ctx context.Context, wasm []byte, rc wazero.RuntimeConfig) (*module, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	m, err := func() (*module, error) {
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			return nil, fmt.Errorf("instantiating WASI: %w", err)
		}
		for _, h := range []struct {
			name string
			fns  []hostFunc
		}{
			{envModule, p.envFunctions()},
			{HostNamespace, p.hostFunctions()},
			{fuel.Module, []hostFunc{guardFunction()}},
		} {
			if err := instantiateHost(ctx, rt, h.name, h.fns); err != nil {
				return nil, fmt.Errorf("building host module %s: %w", h.name, err)
			}
		}
		compiled, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return nil, err
		}
		return newModule(p.name, rt, compiled), nil
	}()
	if err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return m, nil
}

// moduleLocks serializes the compilation of equal modules.
//
// Runtimes that share a compilation cache share compiled code. wazero
// v1.12, reading a module from the disk cache, makes it visible to the
// other runtimes before it has compiled the module's entry points; another
// runtime compiling the same bytes in that window gets the module at once
// and its first call panics ("index out of range"). Two plugins of one
// module that load together (the same module under two prefixes, say) hit
// that window on a busy machine. Compiling equal bytes one at a time closes
// it: the second compilation starts once the first is complete. Different
// modules still compile in parallel.
type moduleLocks struct {
	mu   sync.Mutex
	held map[moduleKey]*moduleLock
}

// moduleKey names the bytes a plugin compiles: the digest of its module,
// and whether it is the module rewritten with the fuel counter.
type moduleKey struct {
	digest  [sha256.Size]byte
	guarded bool
}

type moduleLock struct {
	sync.Mutex
	waiters int // goroutines holding or waiting for it; guarded by moduleLocks.mu
}

// lock locks the module key names and returns its unlock.
func (l *moduleLocks) lock(key moduleKey) (unlock func()) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[moduleKey]*moduleLock{}
	}
	m := l.held[key]
	if m == nil {
		m = &moduleLock{}
		l.held[key] = m
	}
	m.waiters++
	l.mu.Unlock()
	m.Lock()
	return func() {
		m.Unlock()
		l.mu.Lock()
		if m.waiters--; m.waiters == 0 {
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
}

// fuelCache keeps rewritten modules by the digest of the original, in
// memory and, when the engine has a cache directory, on disk beside the
// compiled code. The memory holds a module only as long as something else
// does (a plugin being compiled from it): plugins loaded at once from the
// same module share one copy, which goes once they are compiled.
type fuelCache struct {
	dir string // "" for memory only

	mu  sync.Mutex
	mem map[[sha256.Size]byte]weakBytes
}

// weakBytes is a byte slice the garbage collector may take.
type weakBytes struct {
	p weak.Pointer[byte]
	n int
}

func (w weakBytes) get() []byte {
	if p := w.p.Value(); p != nil {
		return unsafe.Slice(p, w.n)
	}
	return nil
}

func newFuelCache(cacheDir string) *fuelCache {
	c := &fuelCache{mem: map[[sha256.Size]byte]weakBytes{}}
	if cacheDir != "" {
		c.dir = filepath.Join(cacheDir, fmt.Sprintf("fuel-v%d", fuel.Version))
	}
	return c
}

// rewrite returns wasm, whose SHA-256 is key, rewritten by fuel.Rewrite,
// from the cache if it is there. Errors are not cached.
func (c *fuelCache) rewrite(key [sha256.Size]byte, wasm []byte) ([]byte, error) {
	if c == nil {
		return rewrite(wasm)
	}
	c.mu.Lock()
	out := c.mem[key].get()
	c.mu.Unlock()
	if out != nil {
		return out, nil
	}
	file := ""
	if c.dir != "" {
		file = filepath.Join(c.dir, hex.EncodeToString(key[:])+".fuel")
		if b, ok := readFuelEntry(file); ok {
			c.keep(key, b)
			return b, nil
		}
	}
	out, err := rewrite(wasm)
	if err != nil {
		return nil, err
	}
	c.keep(key, out)
	if file != "" {
		// A cache that cannot be written costs only the next rewrite.
		sum := sha256.Sum256(out)
		_ = atomicfile.Write(c.dir, file, append(sum[:], out...))
	}
	return out, nil
}

// readFuelEntry reads a rewritten module from the disk cache. An entry is
// the SHA-256 of the module followed by the module; one that does not
// match (a flipped byte, a truncated write, an edit) is ignored and
// rewritten, never run: a module stripped of its counter would run
// unguarded.
func readFuelEntry(file string) ([]byte, bool) {
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < sha256.Size+8 || fi.Size() > maxFuelEntry {
		return nil, false
	}
	b, err := os.ReadFile(file)
	if err != nil || len(b) < sha256.Size+8 {
		return nil, false
	}
	sum, mod := b[:sha256.Size], b[sha256.Size:]
	if got := sha256.Sum256(mod); string(got[:]) != string(sum) || string(mod[:4]) != "\x00asm" {
		return nil, false
	}
	return mod, true
}

// maxFuelEntry bounds the size of a disk cache entry that is read.
const maxFuelEntry = 1 << 30

func (c *fuelCache) keep(key [sha256.Size]byte, b []byte) {
	if len(b) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, w := range c.mem {
		if w.get() == nil {
			delete(c.mem, k)
		}
	}
	c.mem[key] = weakBytes{p: weak.Make(&b[0]), n: len(b)}
}
