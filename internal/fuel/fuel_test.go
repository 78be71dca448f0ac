package fuel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/hangar-mcp/hangar/internal/fuel"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// wat assembles src with wat2wasm (flags such as --enable-threads first).
func wat(t testing.TB, src string, flags ...string) []byte {
	t.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatal("wat2wasm not found: apt-get install wabt")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, flags...), in, "-o", out)
	if msg, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errStop is what the test's fuel import panics with to stop a call.
var errStop = errors.New("fuel: stopped")

// guard is a fuel import for tests: it counts refills and stops the call
// once stop is set.
type guard struct {
	refills atomic.Int64
	stop    atomic.Bool
}

// runtime returns a wazero runtime with the fuel import instantiated.
func (g *guard) runtime(t testing.TB, features ...api.CoreFeatures) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
	if len(features) > 0 {
		cfg = cfg.WithCoreFeatures(features[0])
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { rt.Close(ctx) })
	_, err := rt.NewHostModuleBuilder(fuel.Module).NewFunctionBuilder().
		WithFunc(func(ctx context.Context) int64 {
			g.refills.Add(1)
			if g.stop.Load() || ctx.Err() != nil {
				panic(errStop)
			}
			return fuel.Budget
		}).Export(fuel.Name).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// env is the test modules' "env" import module: a function that adds 1000,
// a mutable global and a table, so that imported indices come first.
func env(t testing.TB, rt wazero.Runtime) {
	t.Helper()
	_, err := rt.NewHostModuleBuilder("env").
		NewFunctionBuilder().WithFunc(func(x int32) int32 { return x + 1000 }).Export("add1000").
		NewFunctionBuilder().WithFunc(func(x int64) int64 { return x * 3 }).Export("triple").
		Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
}

// call is one export call of a differential test.
type call struct {
	fn   string
	args []uint64
}

// differential instantiates wasm as is and rewritten, runs calls on both,
// and requires equal results (or equal failures).
func differential(t *testing.T, wasm []byte, calls []call, features ...api.CoreFeatures) *guard {
	t.Helper()
	out, err := fuel.Rewrite(wasm)
	if err != nil {
		t.Fatalf("Rewrite: %v", err)
	}
	ctx := context.Background()
	var g guard
	plain := (&guard{}).runtime(t, features...)
	fueled := g.runtime(t, features...)
	env(t, plain)
	env(t, fueled)
	m1, err := plain.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName("m"))
	if err != nil {
		t.Fatalf("original: %v", err)
	}
	m2, err := fueled.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName("m"))
	if err != nil {
		t.Fatalf("rewritten module does not instantiate: %v", err)
	}
	for _, c := range calls {
		r1, err1 := m1.ExportedFunction(c.fn).Call(ctx, c.args...)
		r2, err2 := m2.ExportedFunction(c.fn).Call(ctx, c.args...)
		if (err1 == nil) != (err2 == nil) || err1 != nil && firstLine(err1) != firstLine(err2) {
			t.Errorf("%s%v: errors differ: %v / %v", c.fn, c.args, err1, err2)
		}
		if !equal(r1, r2) {
			t.Errorf("%s%v = %v, rewritten %v", c.fn, c.args, r1, r2)
		}
	}
	// Exported globals and memory read the same.
	for _, name := range []string{"g", "f", "started"} {
		if m1.ExportedGlobal(name) == nil {
			continue
		}
		if a, b := m1.ExportedGlobal(name).Get(), m2.ExportedGlobal(name).Get(); a != b {
			t.Errorf("global %s = %d, rewritten %d", name, a, b)
		}
	}
	if mem1, mem2 := m1.ExportedMemory("memory"), m2.ExportedMemory("memory"); mem1 != nil {
		b1, _ := mem1.Read(0, mem1.Size())
		b2, _ := mem2.Read(0, mem2.Size())
		if !bytes.Equal(b1, b2) {
			t.Error("memories differ")
		}
	}
	return &g
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func args(v ...uint64) []uint64 { return v }

// TestRoundTrip runs modules covering every class of instruction, with and
// without the rewrite.
func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTrips {
		t.Run(tc.name, func(t *testing.T) {
			differential(t, wat(t, tc.src, tc.flags...), tc.calls, tc.features...)
		})
	}
}

// TestIndexShift checks that every reference to a defined function still
// reaches it: calls, exports, the start function, active, passive and
// declarative element segments (function indices and expressions),
// call_indirect through two tables, ref.func in code and in globals, and the
// name section.
func TestIndexShift(t *testing.T) {
	src := `(module
  (import "env" "add1000" (func $add1000 (param i32) (result i32)))
  (import "env" "triple" (func $triple (param i64) (result i64)))
  (type $i2i (func (param i32) (result i32)))
  (table $t0 4 funcref)
  (table $t1 4 funcref)
  (memory (export "memory") 1)
  (global $started (export "started") (mut i32) (i32.const 0))
  (global $fref funcref (ref.func $seven))
  (func $seven (param i32) (result i32) (i32.const 7))
  (func $double (param i32) (result i32) (i32.mul (local.get 0) (i32.const 2)))
  (func $neg (param i32) (result i32) (i32.sub (i32.const 0) (local.get 0)))
  (func $start (global.set $started (i32.add (call $add1000 (i32.const 1)) (call $inc (i32.const 0)))))
  (func $inc (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
  (start $start)
  (elem (table $t0) (i32.const 0) func $seven $double $add1000)
  (elem (table $t1) (i32.const 1) funcref (ref.func $neg) (ref.null func) (ref.func $inc))
  (elem $passive func $double $neg)
  (elem declare func $inc)
  (func (export "indirect0") (param i32 i32) (result i32)
    (call_indirect $t0 (type $i2i) (local.get 1) (local.get 0)))
  (func (export "indirect1") (param i32 i32) (result i32)
    (call_indirect $t1 (type $i2i) (local.get 1) (local.get 0)))
  (func (export "passive") (param i32 i32) (result i32)
    (table.init $t1 $passive (i32.const 0) (i32.const 0) (i32.const 2))
    (call_indirect $t1 (type $i2i) (local.get 1) (local.get 0)))
  (func (export "reffunc") (param i32) (result i32)
    (table.set $t1 (i32.const 3) (ref.func $inc))
    (call_indirect $t1 (type $i2i) (local.get 0) (i32.const 3)))
  (func (export "global_ref") (param i32) (result i32)
    (table.set $t1 (i32.const 3) (global.get $fref))
    (call_indirect $t1 (type $i2i) (local.get 0) (i32.const 3)))
  (func (export "imported") (param i64) (result i64) (call $triple (local.get 0)))
  (export "double" (func $double))
  (export "add1000" (func $add1000))
)`
	var calls []call
	for i := uint64(0); i < 4; i++ {
		calls = append(calls, call{"indirect0", args(i, 21)}, call{"indirect1", args(i, 21)}, call{"passive", args(i, 5)})
	}
	calls = append(calls, call{"reffunc", args(41)}, call{"global_ref", args(1)}, call{"imported", args(14)},
		call{"double", args(8)}, call{"add1000", args(8)})
	wasm := wat(t, src, "--debug-names")
	differential(t, wasm, calls)

	// The rewritten module's names are those of the same functions.
	out, err := fuel.Rewrite(wasm)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range cm.ExportedFunctions() {
		names[d.ExportNames()[0]+"="+d.Name()] = true
	}
	for _, want := range []string{"double=double", "add1000=add1000"} {
		if !names[want] {
			t.Errorf("export and name %s missing: %v", want, names)
		}
	}
	imps := cm.ImportedFunctions()
	if len(imps) != 3 {
		t.Fatalf("%d imported functions, want 3", len(imps))
	}
	if mod, name, _ := imps[2].Import(); mod != fuel.Module || name != fuel.Name {
		t.Errorf("third import is %s.%s", mod, name)
	}
}

// TestStops checks that the rewrite makes loops, recursion and long call
// chains call the import, and that a panic there ends the call.
func TestStops(t *testing.T) {
	src := `(module
  (func $loop (export "loop") (loop $l (br $l)))
  (func $fib (export "fib") (param i64) (result i64)
    (if (result i64) (i64.lt_u (local.get 0) (i64.const 2))
      (then (local.get 0))
      (else (i64.add (call $fib (i64.sub (local.get 0) (i64.const 1)))
                     (call $fib (i64.sub (local.get 0) (i64.const 2)))))))
  ;; Go's shape: the body in one loop, so the loop head is the only check.
  (func $loopfib (export "loopfib") (param i64) (result i64)
    (loop $top (result i64)
      (if (result i64) (i64.lt_u (local.get 0) (i64.const 2))
        (then (local.get 0))
        (else (i64.add (call $loopfib (i64.sub (local.get 0) (i64.const 1)))
                       (call $loopfib (i64.sub (local.get 0) (i64.const 2))))))))
  (func $deep (export "deep") (param i32)
    (if (local.get 0) (then
      (call $deep (i32.sub (local.get 0) (i32.const 1)))
      (call $deep (i32.sub (local.get 0) (i32.const 1))))))
` + chain(40) + `
)`
	wasm := wat(t, src)
	out, err := fuel.Rewrite(wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"loop", "fib", "loopfib", "chain", "deep"} {
		t.Run(fn, func(t *testing.T) {
			var g guard
			rt := g.runtime(t)
			m, err := rt.Instantiate(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			var args []uint64
			switch fn {
			case "fib", "loopfib":
				args = []uint64{100}
			case "deep":
				args = []uint64{5000}
			}
			_, err = m.ExportedFunction(fn).Call(ctx, args...)
			d := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), errStop.Error()) {
				t.Fatalf("call ended with %v, want the import's panic", err)
			}
			if d > 10*time.Second {
				t.Errorf("stopped after %v", d)
			}
			if g.refills.Load() < 1 {
				t.Errorf("%d refills", g.refills.Load())
			}
			t.Logf("%s: stopped after %v, %d refills", fn, d.Round(time.Millisecond), g.refills.Load())
		})
	}
}

// chain returns n functions, $c0 (exported as "chain") to $c<n-1>, each
// calling the next twice: 2^n calls, none recursive, no loop.
func chain(n int) string {
	var b strings.Builder
	for i := range n - 1 {
		fmt.Fprintf(&b, "  (func $c%d (call $c%d) (call $c%d))\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "  (func $c%d)\n  (export \"chain\" (func $c0))\n", n-1)
	return b.String()
}

// TestGoPlugins rewrites Go-PDK plugins (large, and using most of what Go's
// wasip1 port emits): they must be instrumented, not refused, quickly.
func TestGoPlugins(t *testing.T) {
	for _, pkg := range []string{"./examples/hello", "./bench/plugins/echo"} {
		t.Run(pkg, func(t *testing.T) {
			wasm, err := os.ReadFile(testutil.BuildPlugin(t, pkg))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := fuel.Rewrite(wasm)
			d := time.Since(start)
			if err != nil {
				t.Fatalf("Rewrite: %v", err)
			}
			t.Logf("%d bytes rewritten to %d in %v", len(wasm), len(out), d)
			// Well under a second on a quiet machine; the bound leaves room
			// for a busy one (3 s was seen at a load average of 16) and
			// still catches a rewrite that went quadratic.
			if d > 10*time.Second {
				t.Errorf("rewrite took %v", d)
			}
			ctx := context.Background()
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			if _, err := rt.CompileModule(ctx, out); err != nil {
				t.Fatalf("rewritten module does not compile: %v", err)
			}
		})
	}
}

// TestInvalid feeds malformed modules: each must give ErrInvalid or
// ErrUnsupported, never a panic or a module.
func TestInvalid(t *testing.T) {
	good := wat(t, `(module (func (export "f") (result i32) (i32.const 1)))`)
	cases := map[string][]byte{
		"empty":            nil,
		"not wasm":         []byte("hello, world"),
		"version 2":        []byte("\x00asm\x02\x00\x00\x00"),
		"truncated":        good[:len(good)-3],
		"bad section size": append(append([]byte{}, good[:8]...), 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f),
		// global.get 0 where the module has no global: the rewrite would
		// make it read the counter.
		"counter index": wat(t, `(module (global i32 (i32.const 0)) (func (result i32) (global.get 0)))`),
	}
	// The last case is valid; make it reach the global index 1 (the
	// counter's, after the rewrite) by patching "global.get 0".
	m := cases["counter index"]
	i := bytes.Index(m, []byte{0x23, 0x00, 0x0b})
	if i < 0 {
		t.Fatal("global.get not found")
	}
	m[i+1] = 0x01
	for name, wasm := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := fuel.Rewrite(wasm)
			if !errors.Is(err, fuel.ErrInvalid) && !errors.Is(err, fuel.ErrUnsupported) {
				t.Fatalf("Rewrite = %d bytes, %v", len(out), err)
			}
			t.Log(err)
		})
	}
}

// TestUnsupported checks that features the rewrite does not handle are
// refused with ErrUnsupported.
func TestUnsupported(t *testing.T) {
	for name, tc := range map[string]struct {
		src   string
		flags []string
	}{
		"exceptions":   {`(module (tag $e) (func (throw $e)))`, []string{"--enable-exceptions"}},
		"relaxed simd": {`(module (func (result v128) (i32x4.relaxed_trunc_f32x4_s (v128.const i32x4 0 0 0 0))))`, []string{"--enable-relaxed-simd"}},
		"tail call":    {`(module (func $f (return_call $f)))`, []string{"--enable-tail-call"}},
	} {
		t.Run(name, func(t *testing.T) {
			wasm := wat(t, tc.src, tc.flags...)
			_, err := fuel.Rewrite(wasm)
			if name == "tail call" {
				// Decoded and rewritten; wazero itself refuses it.
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, fuel.ErrUnsupported) {
				t.Fatalf("Rewrite: %v, want ErrUnsupported", err)
			}
			t.Log(err)
		})
	}
}

// TestUnsupportedOpcode patches instructions of typed function references
// into a valid module: ErrUnsupported, not a misreading.
func TestUnsupportedOpcode(t *testing.T) {
	base := wat(t, `(module (func (result i32) (ref.is_null (ref.null func))))`)
	i := bytes.Index(base, []byte{0xd0, 0x70, 0xd1})
	if i < 0 {
		t.Fatal("ref.is_null not found")
	}
	for _, op := range []byte{0xd3, 0xd4, 0xd5, 0xd6, 0x14, 0x15, 0xfb, 0x06, 0x08, 0x1f} {
		m := bytes.Clone(base)
		m[i+2] = op
		if _, err := fuel.Rewrite(m); !errors.Is(err, fuel.ErrUnsupported) {
			t.Errorf("opcode %#x: %v, want ErrUnsupported", op, err)
		}
	}
}
