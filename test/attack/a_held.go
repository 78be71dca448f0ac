package main

// Issue 24, findings 2 and 3: calls parked on a plugin's instance, waiting
// for a client that never answers. A plugin that keeps state has one
// instance: parked calls in turn must not starve its other callers. A
// parked call keeps its instance's memory: parked calls must not take the
// process past the pool's budget (twice limits.memory).

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(
		&attack{
			id: "24.2", name: "held-starve",
			attempt: "Six anonymous 2026-07-28 clients loop on a tool that elicits and never answer, on a plugin that keeps state (one instance), while a victim loops on a tool that does not elicit for 20 s",
			run:     heldStarve,
		},
		&attack{
			id: "24.3", name: "held-memory",
			attempt: "limits.memory 64MiB (a pool budget of 128 MiB), max_instances 64: a tool that touches 50 MiB then elicits, called 20 times one after another and 40 times at once by one anonymous client that never answers",
			run:     heldMemory,
		},
	)
}

// serveHeld serves the mrtr plugin alone with limits, and caps on parked
// calls high enough that they never refuse the attacker (finding 1 is
// another attack's).
func (a *A) serveHeld(limits string) *proc {
	return a.serve(nil, "--config", a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:0
mrtr:
  max_parked: 1000000
plugins:
  - {name: mrtr, path: %s, limits: %s}
`, a.env.mrtr, limits)))
}

// p99 is the 99th percentile of ds, which it sorts.
func p99(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*99/100)]
}

func heldStarve(a *A) {
	p := a.serveHeld("{}")
	var stop atomic.Bool
	var wg sync.WaitGroup
	var parks, other atomic.Int64
	for range 6 {
		c := a.raw26(p.url, "")
		wg.Go(func() {
			for !stop.Load() && a.ctx.Err() == nil {
				ans := c.do(r26{method: "tools/call", params: callArgs("ask", map[string]any{"message": "never answered"})})
				if ans.resultType() == "input_required" {
					parks.Add(1)
				} else {
					other.Add(1)
				}
			}
		})
	}
	a.Until(30*time.Second, "an attacker's call parked", func() bool { return parks.Load() > 0 })
	victim := a.raw26(p.url, "")
	var waits []time.Duration
	failed := 0
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && a.ctx.Err() == nil; {
		t := time.Now()
		ans := victim.do(r26{method: "tools/call", params: callArgs("count", nil)})
		waits = append(waits, time.Since(t))
		if ans.err != nil || ans.resultType() != "complete" || ans.result()["isError"] == true {
			failed++
			a.Logf("victim: %v", ans)
		}
	}
	stop.Store(true)
	wg.Wait()
	if len(waits) == 0 {
		a.Fatalf("the victim made no call")
	}
	worst := p99(waits)
	a.Figure("victim calls", "%d in 20 s, %d failed", len(waits), failed)
	a.Figure("victim latency", "median %v, p99 %v, max %v", round(waits[len(waits)/2]), round(worst), round(waits[len(waits)-1]))
	a.Figure("attacker calls", "%d parked (input_required), %d answered otherwise", parks.Load(), other.Load())
	a.Check(failed == 0, "%d of the victim's %d calls failed", failed, len(waits))
	a.Check(worst <= 5*time.Second, "the victim's p99 latency is %v under 6 parking attackers, want at most 5s", worst)
	a.Result("the victim was answered at p99 in %v (median %v) while 6 attackers kept parking calls on the plugin's one instance", round(worst), round(waits[len(waits)/2]))
}

func heldMemory(a *A) {
	p := a.serveHeld("{memory: 64MiB, max_instances: 64}")
	const budget = 128  // MiB: 2 × limits.memory
	const overhead = 96 // MiB: see docs/security.md
	c := a.raw26(p.url, "")
	// One call first, so that the baseline holds the plugin's instance.
	c.do(r26{method: "tools/call", params: callArgs("count", nil)})
	base := p.rss()
	var mu sync.Mutex
	peak := base
	outcomes := map[string]int{}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			r := p.rss()
			mu.Lock()
			peak = max(peak, r)
			mu.Unlock()
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	touch := func() {
		ans := c.do(r26{method: "tools/call", params: callArgs("touch", map[string]any{"mib": 50})})
		what := ans.resultType()
		switch {
		case ans.err != nil:
			what = "failed: " + ans.err.Error()
		case ans.code() != 0:
			what = fmt.Sprintf("error %d", ans.code())
		case ans.result()["isError"] == true && strings.Contains(ans.text(), "another request is waiting"):
			what = "ended for another call"
		case ans.result()["isError"] == true:
			what = "tool error"
		}
		mu.Lock()
		outcomes[what]++
		mu.Unlock()
	}
	t := time.Now()
	for range 20 {
		touch()
	}
	mu.Lock()
	seq := peak
	mu.Unlock()
	a.Figure("20 calls one after another", "%v; RSS %.0f -> peak %.0f MiB", since(t), base, seq)
	t = time.Now()
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(touch)
	}
	wg.Wait()
	a.Sleep(3 * time.Second)
	close(stopSampling)
	<-sampled
	a.Figure("40 calls at once", "%v; peak RSS %.0f MiB", since(t), peak)
	a.Figure("outcomes", "%v", outcomes)
	a.Figure("RSS growth", "%.0f MiB (budget %d MiB, overhead allowed %d MiB)", peak-base, budget, overhead)
	a.Check(peak-base <= budget+overhead, "RSS grew by %.0f MiB with parked 50 MiB instances: past the pool's budget (%d MiB) and the overhead (%d MiB)", peak-base, budget, overhead)
	// The plugin still serves.
	ans := c.do(r26{method: "tools/call", params: callArgs("count", nil)})
	a.Check(ans.err == nil && ans.resultType() == "complete", "a call after: %v", ans)
	a.Result("RSS grew by %.0f MiB (budget %d MiB) with 60 calls parking 50 MiB instances; outcomes %v", peak-base, budget, outcomes)
}
