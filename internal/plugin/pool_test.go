package plugin

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestIdleShrink: instances idle past the timeout are closed, down to
// minIdle, newest kept.
func TestIdleShrink(t *testing.T) {
	wasm, err := os.ReadFile(testutil.BuildWAT(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := e.Load(ctx, wasm, Options{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)

	// Borrow three at once, so that three exist, then give them back.
	var insts []*instance
	for range 3 {
		inst, err := p.pool.get(ctx)
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
