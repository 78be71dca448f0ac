package main

// Section 3: the HTTP side is bounded.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	register(
		&attack{
			id: "3.1", name: "session-flood",
			attempt: "3,000 new sessions at 16 at a time against the default limits (46.7k sessions took RSS to 1.1 GB before the fix)",
			run:     sessionFlood,
		},
		&attack{
			id: "3.2", name: "session-expiry",
			attempt: "Fill max_sessions (20) with sessions that then stay idle, with session_idle_timeout 2s",
			run:     sessionExpiry,
		},
		&attack{
			id: "3.3", name: "connection-flood",
			attempt: "2,000 TCP connections that send nothing, against hangar with an open-file limit of 1,024 (about 20k connections exhausted descriptors before the fix)",
			run:     connectionFlood,
		},
		&attack{
			id: "3.4", name: "slow-connections",
			attempt: "A header sent a line every 0.5 s; a body that never comes; an idle kept-alive connection; a client that stops reading a 20 MB log flood (read_header_timeout 2s, read_timeout 3s, idle_timeout 3s, write_timeout 3s)",
			run:     slowConnections,
		},
		&attack{
			id: "3.5", name: "list-changed-flood",
			attempt: "One call sends notify_tool_list_changed 100,000 times",
			run:     listChangedFlood,
		},
		&attack{
			id: "3.6", name: "output-flood",
			attempt: "One call writes 100,000 lines of 100 bytes to stdout and as many to stderr (20 MB)",
			run:     outputFlood,
		},
	)
}

func sessionFlood(a *A) {
	p := a.serve(nil, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: flood, path: "+a.env.flood+"}\n"))
	const maxSessions = 1000 // the default
	if !strings.Contains(p.log.String(), "max_sessions="+strconv.Itoa(maxSessions)) {
		a.Fatalf("the default max_sessions is not %d:\n%s", maxSessions, p.log.String())
	}
	first := a.client(p.url, nil)
	spare := a.raw(p.url)
	spare.mustInitialize(a)
	rssBefore := p.rss()

	const attempts, workers = 3000, 16
	var opened, refused, other atomic.Int64
	var bad atomic.Value
	work := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		c := a.raw(p.url)
		wg.Go(func() {
			for range work {
				code, body, err := c.initialize(a.ctx)
				switch {
				case err == nil && code == http.StatusOK:
					opened.Add(1)
				case err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, `"error"`) && strings.Contains(body, "too many sessions"):
					refused.Add(1)
				default:
					other.Add(1)
					bad.CompareAndSwap(nil, fmt.Sprintf("%d %s %v", code, body, err))
				}
			}
		})
	}
	for range attempts {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	held := 2 + opened.Load()
	rssAfter := p.rss()
	a.Figure("sessions held", "%d of %d asked for (max_sessions %d); %d refused with HTTP 503 and a JSON-RPC error, in %v", held, attempts+2, maxSessions, refused.Load(), round(took))
	a.Figure("RSS", "%.0f MiB before, %.0f MiB with %d sessions", rssBefore, rssAfter, held)
	a.Check(other.Load() == 0, "%d answers neither 200 nor 503: %v", other.Load(), bad.Load())
	a.Check(held == maxSessions, "%d sessions open, want the cap %d", held, maxSessions)
	a.Check(rssAfter-rssBefore < 300, "RSS grew by %.0f MiB", rssAfter-rssBefore)
	a.echo(first, 30*time.Second)

	// Ending a session frees its place.
	c := a.raw(p.url)
	if code, _, _ := c.initialize(a.ctx); code != http.StatusServiceUnavailable {
		a.Errorf("a session beyond the cap: HTTP %d", code)
	}
	if code, err := spare.delete(a.ctx); err != nil || code != http.StatusNoContent {
		a.Errorf("DELETE: %d %v", code, err)
	}
	if code, body, err := c.initialize(a.ctx); code != http.StatusOK {
		a.Errorf("a session after one was deleted: %d %s %v", code, body, err)
	}
	a.Result("%d sessions opened, the rest refused with 503; open sessions kept working; a deleted session's place was reused", held)
}

func sessionExpiry(a *A) {
	p := a.serve(nil, "--config", floodConfig(a, "{}", "  session_idle_timeout: 2s\n  max_sessions: 20\n"))
	var sessions []*raw
	for range 20 {
		c := a.raw(p.url)
		c.mustInitialize(a)
		sessions = append(sessions, c)
	}
	filled := time.Now()
	if code, _, _ := a.raw(p.url).initialize(a.ctx); code != http.StatusServiceUnavailable {
		a.Errorf("the 21st session: HTTP %d, want 503", code)
	}
	c := a.raw(p.url)
	a.Until(30*time.Second, "a new session after the idle ones expire", func() bool {
		code, _, _ := c.initialize(a.ctx)
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			a.Fatalf("initialize: HTTP %d", code)
		}
		if code != http.StatusOK {
			time.Sleep(200 * time.Millisecond)
		}
		return code == http.StatusOK
	})
	expired := time.Since(filled)
	resp, err := sessions[0].post(a.ctx, "tools/list", nil, false)
	if err != nil {
		a.Fatalf("%v", err)
	}
	resp.Body.Close()
	a.Figure("sessions released", "all 20 after %v idle (session_idle_timeout 2s)", round(expired))
	a.Figure("an expired session's next request", "HTTP %d", resp.StatusCode)
	a.Check(resp.StatusCode == http.StatusNotFound, "an expired session's request: HTTP %d, want 404", resp.StatusCode)
	a.Check(expired < 15*time.Second, "the idle sessions were held %v", expired)
	a.Result("idle sessions were closed after the timeout and their places reused")
}

var maxConnRE = regexp.MustCompile(`max_connections=(\d+)`)

func connectionFlood(a *A) {
	dir := a.TempDir()
	cfg := dir + "/hangar.yaml"
	conf := func(gen int) string {
		return fmt.Sprintf("http:\n  addr: 127.0.0.1:0\n  read_header_timeout: 3s\nplugins:\n  - name: flood\n    path: %s\n    config: {generation: \"%d\"}\n", a.env.flood, gen)
	}
	a.writeFile(cfg, conf(0))
	const nofile, conns = 1024, 2000
	p := a.serve(&procOpts{nofile: nofile}, "--config", cfg)
	m := maxConnRE.FindStringSubmatch(p.log.String())
	if m == nil {
		a.Fatalf("no max_connections in the log:\n%s", p.log.String())
	}
	capacity, _ := strconv.Atoi(m[1])
	existing := a.client(p.url, nil)
	a.echo(existing, 30*time.Second)
	fdsBefore := p.fds()

	// The flood: connections that send nothing, held open.
	var mu sync.Mutex
	var held []net.Conn
	a.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	var failed atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan struct{})
	start := time.Now()
	for range 64 {
		wg.Go(func() {
			for range jobs {
				c, err := net.DialTimeout("tcp", p.addr(), 5*time.Second)
				if err != nil {
					failed.Add(1)
					continue
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	for range conns {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	maxFDs := 0
	for range 10 {
		maxFDs = max(maxFDs, p.fds())
		a.Sleep(50 * time.Millisecond)
	}
	a.Logf("%d connections opened in %v, %d failed; hangar holds %d descriptors", len(held), since(start), failed.Load(), maxFDs)

	// While the flood holds every place: a reload opens files, and the
	// session already open goes on.
	before := p.count("msg=reloaded")
	a.writeFile(cfg, conf(1))
	p.signal(syscall.SIGHUP)
	p.waitLog("msg=reloaded", before+1, time.Minute)
	reloaded := !strings.Contains(lastLine(p.log.String(), "msg=reloaded", "reload failed"), "reload failed")
	existingCall := a.echo(existing, 60*time.Second)

	// A new client gets in once the server has cut the silent ones.
	t0 := time.Now()
	c := a.raw(p.url)
	c.hc.Timeout = 2 * time.Minute
	code, body, err := c.initialize(a.ctx)
	newClient := time.Since(t0)
	a.Figure("connections", "%d opened by the attacker (%d failed); max_connections %d from the open-file limit %d", len(held), failed.Load(), capacity, nofile)
	a.Figure("hangar's descriptors", "%d before, at most %d during the flood", fdsBefore, maxFDs)
	a.Figure("during the flood", "reload %v; the open session's call answered in %v; a new client served after %v", map[bool]string{true: "succeeded", false: "FAILED"}[reloaded], round(existingCall), round(newClient))
	a.Check(code == http.StatusOK, "a new client during the flood: %d %s %v", code, body, err)
	a.Check(reloaded, "the reload during the flood failed: %s", lastLine(p.log.String(), "reload failed"))
	a.Check(maxFDs < nofile, "hangar holds %d descriptors, its limit is %d", maxFDs, nofile)
	a.Check(!strings.Contains(p.log.String(), "too many open files"), "hangar ran out of descriptors:\n%s", lastLine(p.log.String(), "too many open files"))
	a.Check(!p.exited(), "hangar exited: %v", p.state)
	a.Result("hangar kept %d descriptors for itself: it reloaded, served the open session, and a new client within %v", nofile-capacity, round(newClient))
}

func slowConnections(a *A) {
	p := a.serve(nil, "--config", floodConfig(a, "{max_instances: 1, call_timeout: 2m}", "  read_header_timeout: 2s\n  read_timeout: 3s\n  idle_timeout: 3s\n  write_timeout: 3s\n"))
	other := a.client(p.url, nil)
	// cut measures how long the server keeps a connection that behaves as
	// feed makes it, until it closes it.
	cut := func(what string, limit time.Duration, feed func(c net.Conn, stop <-chan struct{})) time.Duration {
		c, err := net.Dial("tcp", p.addr())
		if err != nil {
			a.Fatalf("%v", err)
		}
		defer c.Close()
		start := time.Now()
		stop := make(chan struct{})
		go feed(c, stop)
		c.SetReadDeadline(time.Now().Add(limit))
		_, err = io.Copy(io.Discard, c) // until the server closes
		close(stop)
		took := time.Since(start)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			a.Errorf("%s: the server still held the connection after %v", what, limit)
		}
		return took
	}
	header := cut("slow header", 20*time.Second, func(c net.Conn, stop <-chan struct{}) {
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
				if _, err := fmt.Fprintf(c, "X-Slow: 1\r\n"); err != nil {
					return
				}
			}
		}
	})
	body := cut("slow body", 20*time.Second, func(c net.Conn, stop <-chan struct{}) {
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	})
	idle := cut("idle keep-alive", 20*time.Second, func(c net.Conn, stop <-chan struct{}) {
		fmt.Fprintf(c, "GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n")
	})

	// A client that stops reading a flood loses its connection, not the
	// server its memory: the stream ends without the answer.
	r := a.raw(p.url)
	r.mustInitialize(a)
	if answer, _, err := r.call(a.ctx, "logging/setLevel", map[string]any{"level": "debug"}); err != nil || answer["error"] != nil {
		a.Fatalf("logging/setLevel: %v %v", answer, err)
	}
	resp, err := r.post(a.ctx, "tools/call", toolCall("flood", map[string]any{"kind": "log", "n": 5000, "size": 4096}, ""), false)
	if err != nil {
		a.Fatalf("%v", err)
	}
	defer resp.Body.Close()
	a.echo(other, 2*time.Minute) // served once the flood's call has ended
	a.Sleep(6 * time.Second)     // stalled for longer than the write timeout
	answer, notes, err := readAnswer(resp, nil)
	a.Check(err != nil, "the stalled stream still carried the answer %v after %d notifications", answer, len(notes))

	a.Figure("slow header", "cut after %v (read_header_timeout 2s)", round(header))
	a.Figure("slow body", "cut after %v (read_timeout 3s)", round(body))
	a.Figure("idle keep-alive", "closed after %v (idle_timeout 3s)", round(idle))
	a.Figure("stalled reader", "connection cut after %d of 5,000 notifications: %v", len(notes), err)
	for what, d := range map[string]time.Duration{"slow header": header, "slow body": body, "idle keep-alive": idle} {
		a.Check(d < 15*time.Second, "%s: held %v", what, d)
	}
	a.echo(other, 30*time.Second)
	a.Result("each connection was closed at its timeout; the server went on serving")
}

func listChangedFlood(a *A) {
	p := a.serve(nil, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: register, path: "+a.env.register+"}\n"))
	var changed atomic.Int64
	cs := a.client(p.url, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
	})
	rssBefore := p.rss()
	start := time.Now()
	ctx, cancel := context.WithTimeout(a.ctx, 2*time.Minute)
	defer cancel()
	text, err := callText(ctx, cs, "flood", map[string]any{"count": 100000})
	took := time.Since(start)
	if err != nil || text != "dyn_1" {
		a.Fatalf("flood: %q, %v", text, err)
	}
	a.Sleep(time.Second) // any late notifications
	rssAfter := p.rss()
	tools, err := cs.ListTools(a.ctx, nil)
	if err != nil {
		a.Fatalf("tools/list: %v", err)
	}
	found := false
	for _, t := range tools.Tools {
		found = found || t.Name == "dyn_1"
	}
	a.Figure("the call", "took %v", round(took))
	a.Figure("tools/list_changed sent to the client", "%d", changed.Load())
	a.Figure("RSS", "%.0f MiB before, %.0f MiB after (300 to 667 MB before the fix)", rssBefore, rssAfter)
	a.Check(found, "dyn_1 is not listed after the call")
	a.Check(changed.Load() >= 1 && changed.Load() <= 3, "%d list_changed notifications, want 1 to 3", changed.Load())
	a.Check(rssAfter-rssBefore < 64, "RSS grew by %.0f MiB", rssAfter-rssBefore)
	a.Result("100,000 notifications merged into %d re-list(s); the new tool was listed", changed.Load())
}

var droppedRE = regexp.MustCompile(`dropped=(\d+)`)

func outputFlood(a *A) {
	p := a.serve(nil, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: egress, path: "+a.env.egress+"}\n"))
	cs := a.client(p.url, nil)
	logBefore := p.log.Len()
	const lines, size = 100000, 100
	start := time.Now()
	ctx, cancel := context.WithTimeout(a.ctx, 2*time.Minute)
	defer cancel()
	text, err := callText(ctx, cs, "flood", map[string]any{"lines": lines, "size": size})
	took := time.Since(start)
	if err != nil || text != "flooded" {
		a.Fatalf("flood: %q, %v", text, err)
	}
	a.Sleep(2 * time.Second) // the drop report comes at most once a second
	logged := strings.Count(p.log.String()[logBefore:], "stream=std")
	dropped := 0
	for _, m := range droppedRE.FindAllStringSubmatch(p.log.String()[logBefore:], -1) {
		n, _ := strconv.Atoi(m[1])
		dropped += n
	}
	written := 2 * lines * (size + 1)
	logBytes := p.log.Len() - logBefore
	a.Figure("written by the plugin", "%.1f MB in %v", float64(written)/1e6, round(took))
	a.Figure("hangar's log", "%d lines (%d KB) logged, %d counted as dropped (17 MB a second before the fix)", logged, logBytes/1000, dropped)
	limit := 500 + 100*int(took.Seconds()+3)
	a.Check(logged <= limit, "%d lines logged in %v, more than %d", logged, took, limit)
	a.Check(logged+dropped == 2*lines, "%d logged + %d dropped, want %d", logged, dropped, 2*lines)
	a.Result("the log took %d of %d lines; the rest were counted and dropped; the call succeeded", logged, 2*lines)
}
