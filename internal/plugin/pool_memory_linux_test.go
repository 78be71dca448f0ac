package plugin

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
)

// TestParkedMemoryWithinBudget: a plugin limited to 64 MiB (a pool budget
// of 128 MiB) whose tool touches 50 MiB, then waits for a client that
// never answers. Calls parked one after another, then many at once, keep
// the memory the pool counts within its budget at every moment, and the
// process's resident set within the budget and an overhead: the calls
// beyond wait, end the oldest parked call after the grace, or are refused
// memory; none takes an instance past the budget.
func TestParkedMemoryWithinBudget(t *testing.T) {
	if !InOwnProcess(t, "TestParkedMemoryWithinBudget") {
		return
	}
	p := loadMRTR(t, config.Limits{MemoryPages: 64 << 20 / config.PageSize, MaxInstances: 16})
	const overhead = 80 << 20 // wazero's and the Go runtime's own, per process and per instance
	budget := p.pool.budget
	debug.FreeOSMemory()
	rss0 := rss(t)

	var mu sync.Mutex
	var peakHeld uint64
	var peakRSS int64
	sample := func() {
		p.pool.mu.Lock()
		held := p.pool.held
		p.pool.mu.Unlock()
		r := rss(t) - rss0
		mu.Lock()
		peakHeld, peakRSS = max(peakHeld, held), max(peakRSS, r)
		mu.Unlock()
	}
	ctx, stop := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			sample()
			time.Sleep(5 * time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	outcomes := map[string]int{}
	call := func() *parkingClient {
		client := &parkingClient{}
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			_, err := toolText(ctx, p, &Call{Host: client}, "touch", `{"mib":50}`)
			what := "answered"
			switch {
			case err == nil:
			case strings.Contains(err.Error(), ErrHeld.Error()):
				what = "ended for another call"
			case strings.Contains(err.Error(), "out of memory"):
				what = "refused memory"
			case ctx.Err() != nil:
				what = "parked until the end"
			default:
				what = err.Error()
			}
			mu.Lock()
			outcomes[what]++
			mu.Unlock()
		})
		// Until it asks, or ends.
		for client.asked.Load() == 0 {
			select {
			case <-done:
				return client
			case <-time.After(5 * time.Millisecond):
			}
		}
		return client
	}
	// One after another: each parks, or waits for memory until the grace
	// ends the oldest parked call.
	for range 8 {
		call()
	}
	// Many at once.
	var burst sync.WaitGroup
	for range 16 {
		burst.Go(func() { call() })
	}
	burst.Wait()
	time.Sleep(3 * time.Second)
	sample()
	stop()
	wg.Wait()
	<-sampled

	t.Logf("budget %d MiB: counted at most %d MiB, resident set grew by at most %d MiB; calls: %v", budget>>20, peakHeld>>20, peakRSS>>20, outcomes)
	if peakHeld > budget {
		t.Errorf("the pool counted %d MiB in its instances, past its budget of %d MiB", peakHeld>>20, budget>>20)
	}
	if peakRSS > int64(budget)+overhead {
		t.Errorf("the resident set grew by %d MiB, past the budget (%d MiB) and the overhead (%d MiB)", peakRSS>>20, budget>>20, overhead>>20)
	}
	if outcomes["ended for another call"] == 0 {
		t.Errorf("no parked call was ended for another: %v", outcomes)
	}
	if text, err := toolText(context.Background(), p, nil, "count", `{}`); err != nil {
		t.Fatalf("a call after: %v", err)
	} else if _, err := fmt.Sscan(text, new(int)); err != nil {
		t.Fatalf("count answered %q", text)
	}
}

// TestGrowthPastBudgetRefused: three small idle instances take three calls
// at once that each grow their memory by 50 MiB: the growth that would take
// the instances past the budget (128 MiB) is refused, as at the memory
// limit, and the pool never counts more than its budget.
func TestGrowthPastBudgetRefused(t *testing.T) {
	p := loadMRTR(t, config.Limits{MemoryPages: 64 << 20 / config.PageSize, MaxInstances: 3})
	var insts []*instance
	for range 3 {
		inst, err := p.pool.get(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}
	for _, inst := range insts {
		p.pool.put(inst, true)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var refused, parked int
	clients := make([]*parkingClient, 3)
	for i := range clients {
		clients[i] = &parkingClient{}
		wg.Go(func() {
			_, err := toolText(ctx, p, &Call{Host: clients[i]}, "touch", `{"mib":50}`)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && strings.Contains(err.Error(), "out of memory"):
				refused++
				if !strings.Contains(err.Error(), "together hold its memory budget (128 MiB, twice limits.memory)") {
					t.Errorf("the refused call's error does not name the budget: %v", err)
				}
			case ctx.Err() != nil:
				parked++
			default:
				t.Errorf("a call: %v", err)
			}
		})
	}
	// Two park; the third is refused its memory and crashes.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		asked := 0
		for _, c := range clients {
			asked += int(c.asked.Load())
		}
		mu.Lock()
		r := refused
		mu.Unlock()
		if asked == 2 && r == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls parked, %d refused: want 2 and 1", asked, r)
		}
	}
	p.pool.mu.Lock()
	held, budget := p.pool.held, p.pool.budget
	p.pool.mu.Unlock()
	if held > budget || held < 100<<20 {
		t.Errorf("the pool counts %d MiB with two calls holding 50 MiB each (budget %d MiB)", held>>20, budget>>20)
	}
	stop()
	wg.Wait()
	if refused != 1 || parked != 2 {
		t.Errorf("%d refused, %d parked; want 1 and 2", refused, parked)
	}
}
