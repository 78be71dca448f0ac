package main

// Issue 24, finding 1 (part): a held slot outlived its parked call. A call
// whose plugin stopped waiting for its client (an elicitation with a
// timeout of its own) stayed counted against mrtr.max_parked until its
// state expired (the park timeout, 10 minutes), so one anonymous client
// took every slot in seconds.

import (
	"fmt"
	"time"
)

func init() {
	register(&attack{
		id: "24.1", name: "held-slots",
		attempt: "mrtr.max_parked 5: one anonymous 2026-07-28 client calls ask {timeout_ms: 1} 20 times (the plugin gives up after 1 ms each time), then another client's eliciting call",
		run:     heldSlots,
	})
}

func heldSlots(a *A) {
	p := a.serve26("", "mrtr:\n  max_parked: 5\n", "{max_instances: 8}")
	c := a.raw26(p.url, "")
	codes := map[string]int{}
	start := time.Now()
	for range 20 {
		ans := c.do(r26{method: "tools/call", params: callArgs("ask", map[string]any{"message": "gives up", "timeout_ms": 1})})
		switch {
		case ans.err == nil && ans.resultType() != "":
			codes[ans.resultType()]++
		default:
			codes[fmt.Sprintf("error %d", ans.code())]++
		}
	}
	took := since(start)
	// The plugins give up 1 ms after they ask; a held slot that outlives
	// its call stays until the park timeout.
	var held, parked float64
	for deadline := time.Now().Add(10 * time.Second); ; a.Sleep(50 * time.Millisecond) {
		held, parked = a.metric(p, "hangar_mrtr_held_calls"), a.metric(p, "hangar_mrtr_parked_calls")
		if held == 0 && parked == 0 || time.Now().After(deadline) {
			break
		}
	}
	refusals := a.metric(p, "hangar_mrtr_refusals_total", `reason="cap"`)
	other := a.raw26(p.url, "")
	ans := other.do(r26{method: "tools/call", params: callArgs("ask", map[string]any{"message": "another client"})})
	a.Figure("20 asks that give up after 1 ms", "%v in %v", codes, took)
	a.Figure("after they gave up", "held %v, parked %v, refusals %v 10 s later at most (before the fix: held 5 for the park timeout, refusals from the 6th ask)", held, parked, refusals)
	a.Figure("another client's eliciting call", "%s", firstN(ans.String(), 160))
	a.Check(codes["error -32010"] == 0, "asks refused at the cap although every earlier one had given up: %v", codes)
	a.Check(held == 0, "%v calls still held after their plugins gave up", held)
	a.Check(ans.resultType() == "input_required", "another client's eliciting call: %v; want input_required", ans)
	a.Result("no slot stayed held after the plugin gave up; another client's call parked")
}
