package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// loadEcho loads the WAT echo plugin with limits, closed at the end of the
// test.
func loadEcho(t testing.TB, limits config.Limits) *Plugin {
	t.Helper()
	wasm, err := os.ReadFile(testutil.BuildWAT(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Load(context.Background(), wasm, Options{Name: "echo", Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// TestIdleShrink: instances idle past the timeout are closed, down to
// minIdle, newest kept.
func TestIdleShrink(t *testing.T) {
	ctx := context.Background()
	p := loadEcho(t, config.Limits{MaxInstances: 3})

	// Borrow three at once, so that three exist, then give them back.
	var insts []*instance
	for range 3 {
		inst, err := p.pool.get(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}
	for _, inst := range insts {
		p.pool.put(inst, true)
	}
	if _, idle := p.Stats(); idle != 3 {
		t.Fatalf("%d idle, want 3", idle)
	}
	p.pool.shrink(time.Now()) // nothing is old yet
	if _, idle := p.Stats(); idle != 3 {
		t.Fatalf("after an early shrink: %d idle, want 3", idle)
	}
	newest := insts[2]
	p.pool.shrink(time.Now().Add(2 * defaultIdleTimeout))
	if _, idle := p.Stats(); idle != minIdle {
		t.Fatalf("after the idle timeout: %d idle, want %d", idle, minIdle)
	}
	if p.pool.idle[0] != newest {
		t.Error("shrink kept an older instance, not the newest")
	}
}

// TestBusy: a call that finds every instance taken waits at most its time
// limit, then fails with ErrBusy; once an instance is free, calls work.
func TestBusy(t *testing.T) {
	ctx := context.Background()
	const limit = 200 * time.Millisecond
	p := loadEcho(t, config.Limits{MaxInstances: 1, CallTimeout: limit})

	held, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.CallTool(ctx, nil, "echo", json.RawMessage(`{"text":"x"}`))
	waited := time.Since(start)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("call with the only instance taken: err = %v, want ErrBusy", err)
	}
	if waited < limit || waited > limit+5*time.Second {
		t.Errorf("waited %s for a free instance, want about %s", waited, limit)
	}
	p.pool.put(held, true)
	if _, err := p.CallTool(ctx, nil, "echo", json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatalf("call with the instance free: %v", err)
	}
}
