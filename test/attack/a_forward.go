package main

// Issue 24, finding 7: retries of one requestState sent to a replica that
// does not hold its call were each forwarded to the replica that does: 20
// racing retries opened 20 connections to an owner that had hung, each
// held until the forward timeout (10 minutes, not configurable).

import (
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(&attack{
		id: "24.7", name: "forward-coalesce",
		attempt: "A call parked on replica r2, whose address then hangs (accepts connections, never answers, closes them after 8 s); 20 retries of its requestState at once to replica r1, which forwards to r2; then one retry to replica r3 with mrtr.forward_timeout 2s",
		run:     forwardCoalesce,
	})
}

func forwardCoalesce(a *A) {
	key := filepath.Join(a.TempDir(), "state.key")
	a.writeFile(key, hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	cfg := func(replica, peers, limits string) string {
		return a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:0
metrics:
  addr: 127.0.0.1:0
mrtr:
  replica: %s
  state_key_file: %s
%splugins:
  - {name: mrtr, path: %s, limits: {max_instances: 4%s}}
`, replica, key, peers, a.env.mrtr, limits))
	}
	r2 := a.serve(nil, "--config", cfg("r2", "", ""))
	parked := a.raw26(r2.url, "").park("held by r2")

	// r2's address now hangs: a listener that accepts and never answers.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Fatalf("%v", err)
	}
	a.Cleanup(func() { hung.Close() })
	var conns atomic.Int64
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			time.AfterFunc(8*time.Second, func() { c.Close() })
		}
	}()
	r1 := a.serve(nil, "--config", cfg("r1", fmt.Sprintf("  peers: {r2: \"http://%s/mcp\"}\n", hung.Addr()), ""))

	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	var slowest time.Duration
	start := time.Now()
	for range 20 {
		c := a.raw26(r1.url, "")
		wg.Go(func() {
			t := time.Now()
			ans := c.do(parked.answer("Ada"))
			took := time.Since(t)
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, took)
			switch {
			case ans.err != nil:
				outcomes["failed: "+firstN(ans.err.Error(), 60)]++
			case ans.code() != 0:
				outcomes[fmt.Sprintf("%d %s", ans.code(), firstN(ans.message(), 70))]++
			default:
				outcomes[ans.resultType()]++
			}
		})
	}
	// The connections made while the forwards are held.
	a.Sleep(2 * time.Second)
	held := conns.Load()
	wg.Wait()
	all := since(start)
	inFlight := a.metric(r1, "hangar_mrtr_refusals_total", `reason="state_in_flight"`)
	a.Figure("connections to the hung owner", "%d for 20 racing retries of one state (20 before the fix)", held)
	a.Figure("the retries' answers", "%v; all answered in %v, the slowest after %v (the owner cut its connections after 8 s)", outcomes, all, round(slowest))
	a.Figure("refused as in flight", "%.0f (hangar_mrtr_refusals_total{reason=\"state_in_flight\"})", inFlight)
	// The forward timeout is a setting: 2 s here (10 minutes, fixed,
	// before the fix).
	r3 := a.serve(nil, "--config", cfg("r3", fmt.Sprintf("  forward_timeout: 2s\n  peers: {r2: \"http://%s/mcp\"}\n", hung.Addr()), ", call_timeout: 2s"))
	t := time.Now()
	late := a.raw26(r3.url, "").do(parked.answer("Ada"))
	cut := since(t)
	a.Figure("one retry with mrtr.forward_timeout 2s", "answered after %v: %s", cut, firstN(late.String(), 120))
	a.Check(late.code() == -32602 && cut < 6*time.Second, "a retry forwarded to the hung owner with forward_timeout 2s: %v after %v", late, cut)
	a.Check(held == 1, "%d connections to the hung owner for 20 retries of one state; want 1", held)
	a.Result("20 racing retries of one state opened %d connection to the hung owner; the others were refused at once", held)
}
