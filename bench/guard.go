package main

import (
	"context"
	"fmt"
	"os"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
)

// guardCost is the cost of wazero's termination check for one export.
type guardCost struct {
	Plugin  string  `json:"plugin"`
	Call    string  `json:"call"`
	Calls   int     `json:"calls"`
	Guarded float64 `json:"guarded_us"`   // µs/call with WithCloseOnContextDone(true), as Hangar runs plugins
	Bare    float64 `json:"unguarded_us"` // µs/call without it
}

// runGuard measures, in this process and side by side, what Hangar pays for
// wazero's WithCloseOnContextDone(true): the same plugin, compiled with and
// without it, runs the same exports directly through Extism (no MCP, no
// Hangar). Hangar cannot drop the option (without it a looping plugin
// cannot be interrupted and stops the Go garbage collector for the whole
// process); the numbers say how much of the gap to a JavaScript engine it
// accounts for.
func (e *env) runGuard(ctx context.Context, res *results) error {
	o := e.o
	per := pick(o.quick, 300*time.Millisecond, 2*time.Second)
	v1 := func(tool, args string) []byte {
		return []byte(`{"request":{"name":"` + tool + `","arguments":` + args + `},"context":{"id":"1","_meta":{}}}`)
	}
	cases := []struct {
		plugin, path, label, export string
		input                       []byte
	}{
		{"Go-PDK", e.goEcho, "echo", "call_tool", v1("echo", `{"text":"hello, benchmark"}`)},
		{"Go-PDK", e.goEcho, fmt.Sprintf("spin %d rounds", guardSpin), "call_tool", v1("spin", fmt.Sprintf(`{"rounds":%d}`, guardSpin))},
	}
	for _, c := range cases {
		wasm, err := os.ReadFile(c.path)
		if err != nil {
			return err
		}
		g := guardCost{Plugin: c.plugin, Call: c.label}
		for _, guarded := range []bool{true, false} {
			us, n, err := timeExport(ctx, wasm, guarded, c.export, c.input, per)
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.plugin, c.label, err)
			}
			if guarded {
				g.Guarded, g.Calls = us, n
			} else {
				g.Bare = us
			}
		}
		logf("guard: %-6s %-18s %8.1f µs/call guarded, %8.1f unguarded: %.1f×", g.Plugin, g.Call, g.Guarded, g.Bare, g.Guarded/g.Bare)
		res.Guard = append(res.Guard, g)
	}
	return nil
}

// guardSpin is the spin tool's rounds in the guard section.
const guardSpin = 100000

// timeExport runs export on one instance, compiled with or without the
// termination check, for about d after a short warm-up, and returns the
// mean µs per call.
func timeExport(ctx context.Context, wasm []byte, guarded bool, export string, input []byte, d time.Duration) (float64, int, error) {
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(guarded)
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, guardHostFunctions())
	if err != nil {
		return 0, 0, err
	}
	defer cp.Close(ctx)
	p, err := cp.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig().WithSysWalltime().WithSysNanosleep()})
	if err != nil {
		return 0, 0, err
	}
	defer p.Close(ctx)
	call := func() error {
		rc, _, err := p.CallWithContext(ctx, export, input)
		if err == nil && rc != 0 {
			err = fmt.Errorf("%s returned %d: %s", export, rc, p.GetError())
		}
		return err
	}
	for range 20 {
		if err := call(); err != nil {
			return 0, 0, err
		}
	}
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		if err := call(); err != nil {
			return 0, 0, err
		}
		n++
	}
	return float64(time.Since(start).Microseconds()) / float64(n), n, nil
}

// guardHostFunctions satisfies the Go PDK's imports of extism:host/user;
// the echo and spin tools call none of them.
func guardHostFunctions() []extism.HostFunction {
	var fns []extism.HostFunction
	noop := func(context.Context, *extism.CurrentPlugin, []uint64) {}
	for _, f := range []struct {
		name         string
		params, rets int
	}{
		{"create_message", 1, 1}, {"create_elicitation", 1, 1}, {"list_roots", 0, 1},
		{"notify_logging_message", 1, 0}, {"notify_progress", 1, 0}, {"notify_tool_list_changed", 0, 0},
		{"notify_resource_list_changed", 0, 0}, {"notify_prompt_list_changed", 0, 0},
		{"notify_resource_updated", 1, 0}, {"notify_url_elicitation_completed", 1, 0},
	} {
		fn := extism.NewHostFunctionWithStack(f.name, noop, make([]extism.ValueType, f.params), make([]extism.ValueType, f.rets))
		for i := range f.params {
			fn.Params[i] = extism.ValueTypeI64
		}
		for i := range f.rets {
			fn.Returns[i] = extism.ValueTypeI64
		}
		fn.SetNamespace("extism:host/user")
		fns = append(fns, fn)
	}
	return fns
}
