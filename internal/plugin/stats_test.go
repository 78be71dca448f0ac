package plugin_test

import (
	"context"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func TestStats(t *testing.T) {
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/legacy"), plugin.Options{Limits: config.Limits{MaxInstances: 2}})
	if p.CompileTime() <= 0 {
		t.Errorf("CompileTime = %v", p.CompileTime())
	}
	if _, err := p.CallTool(context.Background(), nil, "reverse", []byte(`{"text":"abc"}`)); err != nil {
		t.Fatal(err)
	}
	busy, idle := p.Stats()
	if busy != 0 || idle != 1 {
		t.Errorf("Stats = %d busy, %d idle", busy, idle)
	}
	// A Go guest's heap is a few MiB at least; Extism's kernel memory,
	// which is not the guest's, is a page or two.
	if m := p.GuestMemory(); m < 1<<20 || m%config.PageSize != 0 {
		t.Errorf("GuestMemory = %d", m)
	}
}
