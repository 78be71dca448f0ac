package plugin

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestCompilationsTakeTurns holds both compilation slots and checks that a
// load waits for one, under its own deadline, and goes ahead once one is
// free.
func TestCompilationsTakeTurns(t *testing.T) {
	wasm, err := os.ReadFile(testutil.BuildWAT(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	opts := Options{Name: "turns", Logger: discard()}
	for range cap(compileSlots) {
		compileSlots <- struct{}{} // other tests' loads finish first
	}
	held := cap(compileSlots)
	defer func() {
		for range held {
			<-compileSlots
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	p, err := e.Load(ctx, wasm, opts)
	if err == nil {
		p.Close(context.Background())
		t.Fatal("a load went ahead while every compilation slot was taken")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for other plugins' compilations") {
		t.Fatalf("load while the slots are taken: %v; want the wait named and its deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the load gave up after %s, not at its deadline", d)
	}

	<-compileSlots // one slot free: the next load goes ahead
	held--
	p, err = e.Load(context.Background(), wasm, opts)
	if err != nil {
		t.Fatalf("load with a free slot: %v", err)
	}
	p.Close(context.Background())
}
