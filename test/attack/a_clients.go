package main

// Section 1: a slow or stalled client cannot hold a plugin.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

func init() {
	register(
		&attack{
			id: "1.1", name: "stalled-readers",
			attempt: "Two clients each ask a plugin (1 instance, call_timeout 20s) for 2,500 notifications of 4 KiB (log messages; progress), more than a session's queue holds, and never read the response; a third client calls the plugin",
			run:     stalledReaders,
		},
		&attack{
			id: "1.2", name: "timeout-while-notifying",
			attempt: "A client that never reads asks for 2,000,000 progress notifications from a plugin with call_timeout 3s",
			run:     timeoutWhileNotifying,
		},
		&attack{
			id: "1.3", name: "delete-mid-call",
			attempt: "A client deletes its session (HTTP DELETE) while its call of a 60 s busy loop runs",
			run:     func(a *A) { cancelMidCall(a, true) },
		},
		&attack{
			id: "1.4", name: "drop-connection",
			attempt: "A client closes its connection (no notifications/cancelled) while its call of a 60 s busy loop runs",
			run:     func(a *A) { cancelMidCall(a, false) },
		},
	)
}

// floodConfig serves the flood plugin with the given limits.
func floodConfig(a *A, limits, http string) string {
	return a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:0\n%splugins:\n  - name: flood\n    path: %s\n    limits: %s\n", http, a.env.flood, limits))
}

func stalledReaders(a *A) {
	p := a.serve(nil, "--config", floodConfig(a, "{max_instances: 1, call_timeout: 20s}", ""))
	third := a.client(p.url, nil)
	rssBefore := p.rss()
	var stalled []*raw
	for _, kind := range []string{"log", "progress"} {
		c := a.raw(p.url)
		c.mustInitialize(a)
		if kind == "log" {
			if answer, _, err := c.call(a.ctx, "logging/setLevel", map[string]any{"level": "debug"}); err != nil || answer["error"] != nil {
				a.Fatalf("logging/setLevel: %v %v", answer, err)
			}
		}
		stalled = append(stalled, c)
	}
	start := time.Now()
	for i, kind := range []string{"log", "progress"} {
		resp, err := stalled[i].post(a.ctx, "tools/call", toolCall("flood", map[string]any{"kind": kind, "n": 2500, "size": 4096}, fmt.Sprint("tok", i)), false)
		if err != nil {
			a.Fatalf("flood call: %v", err)
		}
		a.Cleanup(func() { resp.Body.Close() }) // never read
	}
	served := a.echo(third, 2*time.Minute)
	took := time.Since(start)
	a.Figure("third client served after", "%v (its call took %v; call_timeout 20s; 83-90 s before the fix)", round(took), round(served))
	a.Figure("RSS", "%.0f MiB before, %.0f MiB with both floods held", rssBefore, p.rss())
	// Each flood runs as fast as the plugin can send (seconds), whatever
	// its client does; at worst, on a starved machine, to its call_timeout.
	a.Check(took < 40*time.Second, "the third client waited %v, longer than the two floods' call_timeouts", took)
	a.Result("the plugin was free %v after the floods began; the third client was served", round(took))
}

func timeoutWhileNotifying(a *A) {
	p := a.serve(nil, "--config", floodConfig(a, "{max_instances: 1, call_timeout: 3s}", ""))
	reader := a.client(p.url, nil)
	c := a.raw(p.url)
	c.mustInitialize(a)
	start := time.Now()
	resp, err := c.post(a.ctx, "tools/call", toolCall("flood", map[string]any{"kind": "progress", "n": 2_000_000, "size": 1024}, "t"), false)
	if err != nil {
		a.Fatalf("flood call: %v", err)
	}
	defer resp.Body.Close()
	a.Sleep(200 * time.Millisecond) // let the flood take the instance
	a.echo(reader, 60*time.Second)
	freed := time.Since(start)
	a.Figure("plugin free after", "%v (call_timeout 3s)", round(freed))
	a.Check(freed < 15*time.Second, "the plugin was held %v by a client that does not read, call_timeout 3s", freed)

	// What the stalled client finds when it reads at last: the queue's
	// merged progress, then the time-limit error.
	answer, notes, err := readAnswer(resp, nil)
	if err != nil {
		a.Fatalf("reading the stalled response: %v", err)
	}
	text, isErr := resultText(answer)
	a.Figure("the stalled client read", "%d notifications (of the 2,000,000 asked for), then %q", len(notes), text)
	a.Check(isErr && strings.Contains(text, "time limit"), "the flood's answer: %v, want the time-limit error", answer)
	a.Result("the call was stopped by call_timeout while its notifications were queued; the plugin was free after %v", round(freed))
}

// cancelMidCall starts a 60 s busy call on a one-instance plugin, queues a
// second client's call behind it, then ends the first call's request (by
// deleting its session, or else by closing its connection) and measures
// how soon the plugin serves the second client, and, after a DELETE, how
// the pending request is answered.
func cancelMidCall(a *A, deleteSession bool) {
	p := a.serve(nil, "--config", floodConfig(a, "{max_instances: 1, call_timeout: 60s}", ""))
	other := a.client(p.url, nil)
	c := a.raw(p.url)
	c.mustInitialize(a)
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	resp, err := c.post(ctx, "tools/call", toolCall("sleep_ms", map[string]any{"ms": 60000}, "busy"), false)
	if err != nil {
		a.Fatalf("busy call: %v", err)
	}
	started := make(chan struct{})
	type answer struct {
		msg map[string]any
		err error
		at  time.Time
	}
	answered := make(chan answer, 1)
	go func() {
		defer resp.Body.Close()
		once := false
		m, _, err := readAnswer(resp, func(map[string]any) {
			if !once {
				once = true
				close(started)
			}
		})
		answered <- answer{m, err, time.Now()}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		a.Fatalf("the busy call did not start")
	}
	echoed := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(a.ctx, 90*time.Second)
		defer cancel()
		if _, err := callText(ctx, other, "echo", map[string]any{"text": "next"}); err != nil {
			a.Errorf("the queued call: %v", err)
		}
		echoed <- time.Now()
	}()
	a.Sleep(300 * time.Millisecond) // the second call waits for the instance
	start := time.Now()
	if deleteSession {
		if code, err := c.delete(a.ctx); err != nil || code != http.StatusNoContent {
			a.Errorf("DELETE: %d %v", code, err)
		}
	} else {
		cancel() // closes the connection; no notifications/cancelled is sent
	}
	var interrupted time.Duration
	select {
	case at := <-echoed:
		interrupted = at.Sub(start)
	case <-time.After(30 * time.Second):
		a.Fatalf("the plugin was still busy 30 s after the request ended")
	}
	a.Figure("cancel to interrupt", "%v (the queued call of another session answered)", round(interrupted))
	a.Check(interrupted < 2*time.Second, "the plugin served the next call only %v after the request ended", interrupted)
	if deleteSession { // the pending request must be answered
		select {
		case ans := <-answered:
			msg := errorMessage(ans.msg)
			a.Figure("pending request", "answered %v after DELETE: JSON-RPC error %q", round(ans.at.Sub(start)), msg)
			a.Check(ans.err == nil && strings.Contains(msg, "cancel"), "pending request answered %v, %v; want a cancellation error", ans.msg, ans.err)
		case <-time.After(30 * time.Second):
			a.Errorf("the pending request was not answered 30 s after DELETE")
		}
	}
	a.Result("the plugin was interrupted and served the next session's call %v after the request ended", round(interrupted))
}
