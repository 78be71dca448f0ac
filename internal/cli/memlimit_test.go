package cli

import (
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// TestMemoryLimit: serve's Go memory limit is 256 MiB, 64 MiB per plugin
// and the heap part of every instance's memory; GOMEMLIMIT wins.
func TestMemoryLimit(t *testing.T) {
	limits := config.DefaultLimits()
	limits.MaxInstances = 4
	limits.MaxOutput = 1 << 20
	specs := []config.Plugin{{Name: "a", Limits: limits}, {Name: "b", Limits: config.DefaultLimits()}}
	heapA, _ := plugin.InstanceMemory(specs[0].Limits)
	heapB, _ := plugin.InstanceMemory(specs[1].Limits)
	if heapA != 128<<20+2<<20 {
		t.Errorf("heap part of an instance with max_output 1MiB: %d MiB, want 130", heapA>>20)
	}
	want := int64(256<<20) + 2*64<<20 + 4*heapA + int64(instancesOf(specs[1]))*heapB
	if got := memoryLimit(specs); got != want {
		t.Errorf("memoryLimit = %d MiB, want %d MiB", got>>20, want>>20)
	}

	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	t.Setenv("GOMEMLIMIT", "")
	setMemoryLimit(specs, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("limit set: %d MiB, want %d MiB", got>>20, want>>20)
	}
	debug.SetMemoryLimit(1 << 40)
	t.Setenv("GOMEMLIMIT", "1TiB")
	setMemoryLimit(specs, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("with GOMEMLIMIT set, the limit became %d MiB", got>>20)
	}
}
