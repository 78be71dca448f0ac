package main

// Issue 23: a 2026-07-28 client that stops reading its response stream
// while its plugin sends notifications. Nothing of the server may wait on
// that client's connection but the request that carries its call: not
// the plugin (whose notifications are queued, and dropped beyond the
// queue), not the other clients' calls, not the server's stop.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"time"
)

func init() {
	register(&attack{
		id: "18.6.1", name: "mcp26-stalled-reader",
		attempt: "A 2026 client asks a plugin (1 instance, call_timeout 60s; write_timeout 5m, drain_timeout 3s) for 20,000 progress notifications of 4 KiB and never reads its response; meanwhile another client calls the same plugin and a well-behaved 2026 client runs its calls (MRTR and plain); then SIGTERM",
		run:     stalled2026,
	})
}

func stalled2026(a *A) {
	p := a.serve(nil, "--config", a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:0
  write_timeout: 5m
  drain_timeout: 3s
metrics:
  addr: 127.0.0.1:0
plugins:
  - {name: flood, path: %s, limits: {max_instances: 1, call_timeout: 60s}}
  - {name: good, path: %s, prefix: g, limits: {max_instances: 4}}
`, a.env.flood, a.env.mrtr)))
	c := a.raw26(p.url, "")
	if ans := c.do(r26{method: "tools/call", params: callArgs("echo", map[string]any{"text": "warm"})}); ans.text() != "warm" {
		a.Fatalf("the first echo: %v", ans)
	}
	by := a.bystander(p.url, "")

	// The stalled client: it reads the status line and headers, never
	// the body.
	resp := a.stall(p.url, callArgs("flood", map[string]any{"kind": "progress", "n": 20000, "size": 4096}))
	a.Cleanup(func() { resp.Body.Close() })
	a.Sleep(time.Second) // the connection's buffers fill

	// Another client's call of the same plugin, one instance: it waits
	// for the flood to end, which must not wait for the stalled client.
	start := time.Now()
	ans, ok := a.within(40*time.Second, func() a26 {
		return c.do(r26{method: "tools/call", params: callArgs("echo", map[string]any{"text": "beside"})})
	})
	served := time.Since(start)
	a.Check(ok && ans.text() == "beside", "another client's call of the flooding plugin: %v (answered: %v) after %v", ans, ok, round(served))
	a.Figure("another client's call of the same plugin", "answered after %v (more than 40 s, until write_timeout, before the fix: the plugin waited on the stalled client)", round(served))
	// The plugin ran to its end: what the stalled client could not take
	// was dropped and counted.
	dropped := 0.0
	for deadline := time.Now().Add(10 * time.Second); dropped == 0 && time.Now().Before(deadline); a.Sleep(50 * time.Millisecond) {
		dropped = a.metric(p, "hangar_mrtr_dropped_notifications_total")
	}
	a.Check(dropped > 0, "no notification of the flood was dropped: the plugin still waits on the stalled client")
	a.Figure("notifications dropped for the stalled client", "%.0f of 20,000 (hangar_mrtr_dropped_notifications_total)", dropped)
	by.finish()

	// The stop: the drain waits at most drain_timeout, for a call of the
	// well-behaved client left parked when it stopped (if any), not for
	// the stalled client, which is cut; before the fix the stalled call
	// held the drain, then the HTTP server's shutdown, to about 18 s.
	term := time.Now()
	p.signal(syscall.SIGTERM)
	exit := p.wait(60 * time.Second)
	exitAfter := since(term)
	a.Check(exit == 0 && exitAfter < 5*time.Second, "exit code %d %v after SIGTERM, drain_timeout 3s, with a stalled 2026 reader", exit, exitAfter)
	a.Figure("SIGTERM with the stalled reader", "exit code %d %v after (about 18 s before the fix)", exit, exitAfter)
	a.Result("the plugin, the other clients and the stop did not wait for the client that stopped reading: another call answered after %v, exit %v after SIGTERM", round(served), exitAfter)
}

// stall sends a 2026-07-28 tools/call with a progress token and returns
// once the answer's headers came, without reading its body.
func (a *A) stall(url string, params map[string]any) *http.Response {
	meta := defaultMeta()
	meta["progressToken"] = "stalled"
	params["_meta"] = meta
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	req, err := http.NewRequestWithContext(a.ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		a.Fatalf("the stalled request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v2026)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", params["name"].(string))
	tr := &http.Transport{}
	a.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		a.Fatalf("the stalled request: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		a.Fatalf("the stalled request: HTTP %d", resp.StatusCode)
	}
	return resp
}

// within runs do, and reports false if it has not returned after limit
// (do then runs on, to the end of the attack).
func (a *A) within(limit time.Duration, do func() a26) (a26, bool) {
	done := make(chan a26, 1)
	go func() { done <- do() }()
	ctx, cancel := context.WithTimeout(a.ctx, limit)
	defer cancel()
	select {
	case ans := <-done:
		return ans, true
	case <-ctx.Done():
		return a26{}, false
	}
}
