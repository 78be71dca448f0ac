package main

// Issue 24, finding 5: a parked call whose client never comes back held
// SIGTERM for the whole drain_timeout, although no retry could come in
// time to matter and the call could not progress without one.

import (
	"fmt"
	"syscall"
	"time"
)

func init() {
	register(&attack{
		id: "24.5", name: "drain-parked",
		attempt: "Three 2026-07-28 calls parked (elicitation) by a client that never answers, a plain call of 3 s running beside them, then SIGTERM with drain_timeout 30s",
		run:     drainParked,
	})
}

func drainParked(a *A) {
	const drain = 30 * time.Second
	p := a.serve(nil, "--config", a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:0
  drain_timeout: %v
metrics:
  addr: 127.0.0.1:0
plugins:
  - {name: mrtr, path: %s, limits: {max_instances: 8}}
  - {name: flood, path: %s}
`, drain, a.env.mrtr, a.env.flood)))
	c := a.raw26(p.url, "")
	for i := range 3 {
		c.park(fmt.Sprintf("never answered %d", i))
	}
	// A call in progress still finishes with its result: the drain ends
	// the calls that wait for a client, not the work being done.
	plain := make(chan a26, 1)
	go func() {
		plain <- a.raw26(p.url, "").do(r26{method: "tools/call", params: callArgs("sleep_ms", map[string]any{"ms": 3000})})
	}()
	// SIGTERM once the plain call runs (a busy instance of its plugin),
	// not after a guess at how long it takes to start.
	a.Until(30*time.Second, "the plain call runs", func() bool {
		return a.metric(p, "hangar_plugin_instances", `plugin="flood"`, `state="busy"`) >= 1
	})
	start := time.Now()
	p.signal(syscall.SIGTERM)
	code := p.wait(drain + 15*time.Second)
	took := since(start)
	var ans a26
	select {
	case ans = <-plain:
	case <-time.After(5 * time.Second):
		ans = a26{err: fmt.Errorf("no answer")}
	}
	a.Figure("SIGTERM to exit", "%v, exit code %d (drain_timeout %v; 30.26s, the whole drain_timeout, before the fix)", took, code, drain)
	a.Figure("the plain call of 3 s in progress", "%s", firstN(ans.String(), 160))
	a.Check(took < drain/3, "exit %v after SIGTERM with 3 calls parked; want well below drain_timeout %v", took, drain)
	a.Check(ans.err == nil && ans.resultType() == "complete", "the plain call in progress at SIGTERM: %v; want its result", ans)
	a.Check(code == 0, "exit code %d", code)
	a.Result("the parked calls ended at once; hangar exited %v after SIGTERM, once the plain call in progress had answered", took)
}
