package plugin_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// TestSameModuleLoadedConcurrently loads one module as several plugins at
// once, as a configuration that serves a module under two prefixes does,
// with the module in the disk compilation cache. wazero v1.12 shares
// compiled code between the runtimes of one cache, and makes a module read
// from the disk cache visible before its entry points are compiled: a
// plugin instantiated in that window crashed on its first call ("index
// out of range [1] with length 0"). The module here has thousands of
// function types, so that the window is long (an entry point is compiled
// per type); Engine.Load must compile equal modules one at a time.
func TestSameModuleLoadedConcurrently(t *testing.T) {
	wasm := manyTypesModule(20000)
	dir := t.TempDir()
	ctx := context.Background()
	const rounds, copies = 6, 4
	for round := range rounds {
		// A new engine each round, as a new process would make: the
		// module is read from the disk cache (filled by the round before).
		e, err := plugin.NewEngine(dir)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		plugins := make([]*plugin.Plugin, copies)
		errs := make([]error, copies)
		for i := range copies {
			wg.Go(func() {
				p, err := e.Load(ctx, wasm, plugin.Options{Name: "copy"})
				if err != nil {
					errs[i] = err
					return
				}
				plugins[i] = p
				_, errs[i] = p.ListTools(ctx, nil)
			})
		}
		wg.Wait()
		for i, p := range plugins {
			// describe sets no output, which is an error, but not a crash.
			if err := errs[i]; err == nil || errors.Is(err, plugin.ErrTrap) || strings.Contains(err.Error(), "panic") {
				t.Errorf("round %d, copy %d: ListTools error %v, want a plugin error", round, i, err)
			}
			if p != nil {
				p.Close(ctx)
			}
		}
		e.Close(ctx)
		if t.Failed() {
			return
		}
	}
}

// manyTypesModule returns a legacy plugin (exports call and describe, both
// returning 0 and no output) whose type section also declares n unused,
// distinct function types.
func manyTypesModule(n int) []byte {
	const i32, i64, f32, f64 = 0x7f, 0x7e, 0x7d, 0x7c
	vec := func(items ...[]byte) []byte {
		out := uleb(uint64(len(items)))
		for _, it := range items {
			out = append(out, it...)
		}
		return out
	}
	section := func(id byte, body []byte) []byte {
		return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
	}
	name := func(s string) []byte { return append(uleb(uint64(len(s))), s...) }

	types := [][]byte{{0x60, 0x00, 0x01, i32}} // 0: () -> i32
	for k := 1; k <= n; k++ {
		var params []byte
		for v := k; v > 0; v /= 4 { // k in base 4, one value type per digit
			params = append(params, []byte{i32, i64, f32, f64}[v%4])
		}
		types = append(types, append(append([]byte{0x60}, vec(splitBytes(params)...)...), 0x00))
	}
	body := []byte{0x00, 0x41, 0x00, 0x0b} // no locals; i32.const 0; end
	code := append(uleb(uint64(len(body))), body...)

	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, vec(types...))...)
	m = append(m, section(3, vec([]byte{0}, []byte{0}))...)
	m = append(m, section(7, vec(
		append(name("call"), 0x00, 0x00),
		append(name("describe"), 0x00, 0x01),
	))...)
	m = append(m, section(10, vec(code, code))...)
	return m
}

func splitBytes(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

func uleb(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}
