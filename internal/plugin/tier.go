package plugin

import (
	"github.com/tetratelabs/wazero"
)

// Tiers.
//
// An engine compiles plugins to machine code with wazero's optimizing
// compiler, which makes calls fast and costs seconds per module when the
// compilation cache is cold. An engine from Engine.Interpreter prepares
// plugins for wazero's interpreter instead: the module is only validated
// and translated, a small fraction of that, and the plugin runs many times
// slower. Hangar's start uses one to read the lists of a plugin whose
// machine code is not ready yet (see internal/cli's startup), never to
// serve its calls.

// tier selects how an engine runs modules.
type tier uint8

const (
	tierCompiler tier = iota
	tierInterpreter
)

func (t tier) runtimeConfig() wazero.RuntimeConfig {
	if t == tierInterpreter {
		return wazero.NewRuntimeConfigInterpreter()
	}
	return wazero.NewRuntimeConfig()
}

// Interpreter returns an engine that runs plugins in wazero's interpreter,
// sharing e's cache of fuel-instrumented modules. Its plugins are slow to
// run but quick to load. Close it like any engine, after its plugins.
func (e *Engine) Interpreter() *Engine {
	return &Engine{cache: wazero.NewCompilationCache(), fuel: e.fuel, tier: tierInterpreter}
}

// Interpreted reports whether the engine runs plugins in the interpreter.
func (e *Engine) Interpreted() bool { return e.tier == tierInterpreter }
