package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
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

// TestIdleShrink: instances idle past the timeout are closed, newest kept,
// down to one for a plugin that keeps state (its state is in it), and to
// none for a stateless one.
func TestIdleShrink(t *testing.T) {
	ctx := context.Background()
	legacy, err := os.ReadFile(testutil.BuildPlugin(t, "./internal/testplugins/legacy"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	stateful, err := e.Load(ctx, legacy, Options{Name: "legacy", Limits: config.Limits{MaxInstances: 3}, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer stateful.Close(ctx)
	for _, tc := range []struct {
		p    *Plugin
		keep int
	}{
		{stateful, 1},
		{loadEcho(t, config.Limits{MaxInstances: 3}), 0},
	} {
		p := tc.p
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
			t.Fatalf("%s: %d idle, want 3", p.name, idle)
		}
		p.pool.shrink(time.Now()) // nothing is old yet
		if _, idle := p.Stats(); idle != 3 {
			t.Fatalf("%s: after an early shrink: %d idle, want 3", p.name, idle)
		}
		newest := insts[2]
		p.pool.shrink(time.Now().Add(2 * defaultIdleTimeout))
		if _, idle := p.Stats(); idle != tc.keep {
			t.Fatalf("%s (stateless %v): after the idle timeout: %d idle, want %d", p.name, p.stateless, idle, tc.keep)
		}
		if tc.keep > 0 && p.pool.idle[0] != newest {
			t.Errorf("%s: shrink kept an older instance, not the newest", p.name)
		}
		if p.pool.held != uint64(tc.keep)*newest.size {
			t.Errorf("%s: the pool counts %d bytes held by %d instances of %d", p.name, p.pool.held, tc.keep, newest.size)
		}
		// A stateless plugin without instances makes one for its next call.
		if _, err := p.CallTool(ctx, nil, map[string]string{"legacy": "reverse", "echo": "echo"}[p.name], json.RawMessage(`{"text":"x"}`)); err != nil {
			t.Fatalf("%s: call after the pool shrank: %v", p.name, err)
		}
	}
}

// TestPoolMemoryBudget: a pool starts a new instance only while its
// instances' memory, and as much again as the largest holds, fits in twice
// the memory limit; calls beyond wait for an instance, as at max_instances,
// and fail with ErrBusy at their time limit, saying why. An instance closed
// or returned makes room.
func TestPoolMemoryBudget(t *testing.T) {
	ctx := context.Background()
	// The WAT echo's instances hold 64 KiB of linear memory and 1 MiB of
	// Extism memory: with a limit of 1.5 MiB (a budget of 3), two fit.
	p := loadEcho(t, config.Limits{MemoryPages: 24, MaxInstances: 4})
	a, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.size == 0 || p.pool.held != a.size+b.size || p.pool.budget != 3<<20 {
		t.Fatalf("instances of %d and %d bytes, %d held, budget %d", a.size, b.size, p.pool.held, p.pool.budget)
	}
	_, err = p.pool.get(ctx, 200*time.Millisecond)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "all 2 instances that fit its memory budget (3 MiB)") {
		t.Fatalf("a third instance past the budget: %v, want ErrBusy naming the budget", err)
	}
	if inUse, idle := p.Stats(); inUse != 2 || idle != 0 {
		t.Fatalf("%d in use, %d idle, want 2 and 0", inUse, idle)
	}
	// A call waiting for memory gets the instance returned.
	got := make(chan *instance, 1)
	go func() {
		inst, err := p.pool.get(ctx, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- inst
	}()
	time.Sleep(100 * time.Millisecond)
	p.pool.put(b, true)
	select {
	case c := <-got:
		if c != b {
			t.Error("the waiting call got another instance than the one returned")
		}
		b = c
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting call did not get the returned instance")
	}
	// A closed instance makes room for a new one.
	p.pool.put(b, false)
	c, err := p.pool.get(ctx, time.Second)
	if err != nil {
		t.Fatalf("an instance after one was closed: %v", err)
	}
	p.pool.put(a, true)
	p.pool.put(c, true)
	if p.pool.held != a.size+c.size {
		t.Errorf("%d held, want %d", p.pool.held, a.size+c.size)
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

// TestPoolServesInOrder: calls waiting for an instance get one in the
// order they came, each returned instance going to the first of them.
func TestPoolServesInOrder(t *testing.T) {
	ctx := context.Background()
	p := loadEcho(t, config.Limits{MaxInstances: 1})
	inst, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		i    int
		inst *instance
	}
	served := make(chan got, 3)
	for i := range 3 {
		go func() {
			inst, err := p.pool.get(ctx, time.Minute)
			if err != nil {
				t.Error(err)
			}
			served <- got{i, inst}
		}()
		waitQueue(t, p.pool, i+1)
	}
	for want := range 3 {
		p.pool.put(inst, true)
		g := <-served
		if g.i != want {
			t.Fatalf("waiting call %d got the instance, want %d (first come, first served)", g.i, want)
		}
		inst = g.inst
	}
	p.pool.put(inst, true)
}

// TestPoolWaitCancelled: a call's context ends its wait for an instance,
// and the call leaves the queue.
func TestPoolWaitCancelled(t *testing.T) {
	p := loadEcho(t, config.Limits{MaxInstances: 1})
	inst, err := p.pool.get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = p.pool.get(ctx, time.Minute)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("a cancelled wait: %v after %v, want context.Canceled at once", err, time.Since(start))
	}
	waitQueue(t, p.pool, 0)
	p.pool.put(inst, true)
	if inst2, err := p.pool.get(context.Background(), time.Second); err != nil || inst2 != inst {
		t.Fatalf("the next call: %v, %v; want the idle instance", inst2, err)
	}
}

// waitQueue waits until n calls wait for an instance of pool.
func waitQueue(t *testing.T, pool *pool, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		pool.mu.Lock()
		queued := len(pool.queue)
		pool.mu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait for an instance, want %d", queued, n)
		}
	}
}
