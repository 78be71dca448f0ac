package main

// Issue 24, finding 4: subscriptions/listen streams were bounded only by
// http.max_connections. A listen holds its connection for as long as its
// client keeps it (keep-alive comments keep it open), so a client that
// opens listens and never reads them took every connection, and another
// client's call waited to be accepted.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(&attack{
		id: "24.4", name: "listen-flood",
		attempt: "max_connections 300: one anonymous client (127.0.0.1) opens 2,000 subscriptions/listen streams and never reads them, then 20 others (127.0.1.x) 20 each; then another client (127.0.0.2) calls a tool and opens a listen",
		run:     listenFlood,
	})
}

// from returns an HTTP client whose connections come from the local
// address ip (127.0.0.x): another client, as far as Hangar can tell.
func (a *A) from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}
	a.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func listenFlood(a *A) {
	p := a.serve26("  max_connections: 300\n", "", "{max_instances: 4}")
	addr := strings.TrimPrefix(strings.TrimSuffix(p.url, "/mcp"), "http://")
	params := map[string]any{"_meta": defaultMeta(), "notifications": map[string]any{"toolsListChanged": true, "resourcesListChanged": true}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params})
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", addr, v2026, len(body), body)

	// The attacker: 2,000 connections, each sends its listen and never
	// reads a byte of the answer.
	var mu sync.Mutex
	var conns []net.Conn
	a.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	var sent, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	open := func(from string) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
			c, err := d.DialContext(a.ctx, "tcp", addr)
			if err != nil {
				failed.Add(1)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write([]byte(req)); err != nil {
				failed.Add(1)
				return
			}
			sent.Add(1)
		})
	}
	for range 2000 {
		open("127.0.0.1")
	}
	wg.Wait()
	flood := since(start)
	a.Sleep(time.Second) // the server takes what it accepted
	one := a.metric(p, "hangar_listen_streams")
	// Then from 20 addresses (as many clients), 20 each: 400 listens,
	// more than max_listens.
	for i := range 400 {
		open(fmt.Sprintf("127.0.1.%d", 1+i%20))
	}
	wg.Wait()
	a.Sleep(time.Second) // the server takes what it accepted

	// Another client: a call, and a listen of its own.
	victim := a.raw26(p.url, "")
	victim.hc = a.from("127.0.0.2")
	victim.hc.Timeout = 30 * time.Second
	t0 := time.Now()
	ans := victim.do(r26{method: "tools/call", params: callArgs("count", nil)})
	callTook := since(t0)
	listenStatus := "not tried"
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	lr, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url, strings.NewReader(string(body)))
	lr.Header.Set("Content-Type", "application/json")
	lr.Header.Set("Accept", "application/json, text/event-stream")
	lr.Header.Set("Mcp-Protocol-Version", v2026)
	lr.Header.Set("Mcp-Method", "subscriptions/listen")
	if resp, err := a.from("127.0.0.2").Do(lr); err != nil {
		listenStatus = err.Error()
	} else {
		listenStatus = fmt.Sprintf("HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		resp.Body.Close()
	}
	streams := a.metric(p, "hangar_listen_streams")
	refusedClient := a.metric(p, "hangar_listen_refusals_total", `cap="client"`)
	refusedServer := a.metric(p, "hangar_listen_refusals_total", `cap="server"`)
	evicted := a.metric(p, "hangar_listen_evicted_total")
	a.Figure("the flood", "2,000 listens from one client in %v, then 400 from 20 others; %d sent (%d failed), none read", flood, sent.Load(), failed.Load())
	a.Figure("listen streams held", "%.0f for the one client, %.0f in all at the end (hangar_listen_streams); refused: %.0f at the limit per client (16), %.0f at the limit in all (max_listens 150: half of max_connections 300); %.0f ended for a client holding fewer", one, streams, refusedClient, refusedServer, evicted)
	a.Figure("another client's tools/call", "answered in %v: %s (no answer within 30 s before the fix: every connection held by a listen)", callTook, firstN(ans.String(), 120))
	a.Figure("another client's listen", "%s", listenStatus)
	a.Check(ans.err == nil && ans.resultType() == "complete", "another client's tools/call during the flood: %v after %v; want it answered", ans, callTook)
	a.Check(callTook < 15*time.Second, "another client's tools/call took %v", callTook)
	a.Check(strings.HasPrefix(listenStatus, "HTTP 200 text/event-stream"), "another client's listen: %s; want a stream", listenStatus)
	a.Check(one <= 16, "%.0f listen streams held for one client; want at most max_listens_per_client (16)", one)
	a.Check(streams <= 151, "%.0f listen streams held in all; want at most max_listens (150), and the victim's", streams)
	a.Result("one client held %.0f listen streams of the 2,000 it opened, 21 clients %.0f; another client's call was answered in %v, its listen served", one, streams, callTook)
}
