package cli

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// The Go memory limit.
//
// The Go heap of a server holds its own state, what compilation leaves
// behind, and, for each plugin instance, what plugin.InstanceMemory counts
// in the heap (wazero's call stack, a call's output). Without a limit the
// runtime lets the heap grow to twice what is live before it collects, and
// returns freed memory to the system over minutes: a burst of crashing
// calls left the process gigabytes large. serve sets the runtime's soft
// limit (debug.SetMemoryLimit) to what the configuration needs:
//
//	256 MiB + 64 MiB per plugin + the heap part of every instance's memory
//
// where a plugin has max_instances instances (when 0, as many as a
// stateless plugin may get: GOMAXPROCS, at least 2). Near the limit the
// runtime collects sooner and gives freed memory back at once. The limit is
// set again at each reload. An operator's GOMEMLIMIT is kept as it is.

const (
	memoryBase      = 256 << 20
	memoryPerPlugin = 64 << 20
)

// memoryLimit is the Go memory limit the plugins need.
func memoryLimit(specs []config.Plugin) int64 {
	total := int64(memoryBase)
	for _, s := range specs {
		heap, _ := plugin.InstanceMemory(s.Limits)
		total += memoryPerPlugin + int64(instancesOf(s))*heap
	}
	return total
}

// instancesOf is the most instances the plugin may run at once.
func instancesOf(s config.Plugin) int {
	if s.Limits.MaxInstances > 0 {
		return s.Limits.MaxInstances
	}
	return max(2, runtime.GOMAXPROCS(0))
}

// setMemoryLimit sets the Go memory limit for specs, unless the operator
// set GOMEMLIMIT.
func setMemoryLimit(specs []config.Plugin, log *slog.Logger) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok && v != "" {
		log.Debug("Go memory limit set by GOMEMLIMIT; keeping it", "GOMEMLIMIT", v)
		return
	}
	limit := memoryLimit(specs)
	debug.SetMemoryLimit(limit)
	log.Debug("Go memory limit", "limit", fmt.Sprintf("%d MiB", limit>>20))
}
