package main

// Issue 24, finding 1 (the rest): without authentication the principal is
// empty and the cap per principal does not apply, so one anonymous client
// could take every place under mrtr.max_parked with calls that stay
// parked, and every other client's eliciting call was refused for as long
// as it kept them (host_timeout, renewable).

import (
	"time"
)

func init() {
	register(&attack{
		id: "24.6", name: "held-anonymous",
		attempt: "mrtr.max_parked 5, the plugin 8 instances: one anonymous 2026-07-28 client (127.0.0.1) parks eliciting calls that stay parked until it is refused; then another anonymous client (127.0.0.2) makes an eliciting call, trying again every 250 ms for 15 s",
		run:     heldAnonymous,
	})
}

func heldAnonymous(a *A) {
	p := a.serve26("", "mrtr:\n  max_parked: 5\n", "{max_instances: 8}")
	attacker := a.raw26(p.url, "")
	nParked, refusedAt := 0, 0
	for i := range 20 {
		ans := attacker.do(r26{method: "tools/call", params: callArgs("ask", map[string]any{"message": "never answered"})})
		if ans.resultType() == "input_required" {
			nParked++
			continue
		}
		if ans.code() == -32010 {
			refusedAt = i + 1
			break
		}
		a.Fatalf("the attacker's ask %d: %v", i+1, ans)
	}
	a.Check(refusedAt > 0, "the attacker was never refused: %d calls parked", nParked)
	// The attacker keeps asking: it must not take back what it is refused.
	stop := make(chan struct{})
	attackerRefused := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if ans := attacker.do(r26{method: "tools/call", params: callArgs("ask", map[string]any{"message": "again"})}); ans.code() == -32010 {
				attackerRefused++
			}
		}
	}()

	victim := a.raw26(p.url, "")
	victim.hc = a.from("127.0.0.2")
	start := time.Now()
	var ans a26
	tries := 0
	for time.Since(start) < 15*time.Second && a.ctx.Err() == nil {
		tries++
		ans = victim.do(r26{method: "tools/call", params: callArgs("ask", map[string]any{"message": "victim"})})
		if ans.resultType() == "input_required" || ans.code() != -32010 {
			break
		}
		a.Sleep(250 * time.Millisecond)
	}
	took := since(start)
	// The victim answers at once, and its call completes.
	completed := false
	if ans.resultType() == "input_required" && len(ans.keys()) == 1 {
		pk := &parked{args: map[string]any{"message": "victim"}, state: ans.state(), key: ans.keys()[0]}
		pk.question = ans.question(pk.key)
		completed = pk.completed(a, "the victim's answer", victim.do(pk.answer("Ada")), "Ada")
	}
	close(stop)
	<-done
	evicted := a.metric(p, "hangar_mrtr_evicted_total")
	a.Figure("the attacker", "%d calls parked, refused at ask %d (max_parked 5); refused %d times more while it kept asking", nParked, refusedAt, attackerRefused)
	a.Figure("another anonymous client's eliciting call", "%s after %v and %d tries (refused -32010 for 15 s, and for as long as the attacker held its calls, before the fix)", firstN(ans.String(), 100), took, tries)
	a.Figure("parked calls ended for another client", "%.0f (hangar_mrtr_evicted_total)", evicted)
	a.Check(ans.resultType() == "input_required" && completed, "another anonymous client's eliciting call: %v after %v; want it parked and completed", ans, took)
	a.Check(took < 10*time.Second, "another anonymous client waited %v", took)
	a.Result("an anonymous client holding every place under max_parked did not lock another out: its call parked after %v, and completed", took)
}
