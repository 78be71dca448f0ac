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

// NewInterpreterEngine returns an engine that runs plugins in wazero's
// interpreter. Its plugins are slow to run but quick to load. It keeps
// fuel-instrumented modules in cacheDir, as NewEngine does, so that an
// engine of either kind finds the other's; an empty cacheDir keeps them
// in memory only. It holds no machine code, so it checks no compilation
// cache. Close it like any engine, after its plugins.
func NewInterpreterEngine(cacheDir string) *Engine {
	return &Engine{cache: wazero.NewCompilationCache(), fuel: newFuelCache(cacheDir), tier: tierInterpreter}
}

// Interpreted reports whether the engine runs plugins in the interpreter.
func (e *Engine) Interpreted() bool { return e.tier == tierInterpreter }
