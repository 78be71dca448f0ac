package server_test

// The serving limits, seen from clients over HTTP on 127.0.0.1: a client
// that stops reading holds no plugin, a deleted session or a lost
// connection interrupts its calls, a reload loses no call, sessions are
// capped, and a stop drains calls instead of dropping them.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func floodPlugin(t *testing.T, name string, limits config.Limits) *plugin.Plugin {
	t.Helper()
	return loadPlugin(t, name, testutil.BuildPlugin(t, "./internal/testplugins/flood"), limits)
}

// serveHTTP serves s over HTTP on 127.0.0.1 and returns the MCP endpoint.
func serveHTTP(t *testing.T, s *server.Server, opts *server.HTTPOptions) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(s.HTTPHandler(opts))
	ts.Config.ReadHeaderTimeout = 10 * time.Second
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + server.Path
}

// httpClient connects a go-sdk client over HTTP.
func httpClient(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, sessionOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// rawClient speaks MCP over HTTP by hand, to behave as real clients may:
// stop reading, vanish, or delete its session mid-call.
type rawClient struct {
	t   *testing.T
	url string
	hc  *http.Client
	sid string
	seq atomic.Int64
}

func newRawClient(t *testing.T, url string) *rawClient {
	// A transport of its own: its connections are its own.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{t: t, url: url, hc: &http.Client{Transport: tr}}
}

// post sends one JSON-RPC message and returns the response, unread.
func (c *rawClient) post(ctx context.Context, method string, params any, notification bool) (*http.Response, error) {
	var id any
	if !notification {
		id = c.seq.Add(1)
	}
	return testutil.PostMCP(ctx, c.hc, c.url, c.sid, method, params, id)
}

// initialize opens a session and returns the HTTP status of the answer.
func (c *rawClient) initialize() (int, string) {
	c.t.Helper()
	resp, err := c.post(context.Background(), "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}, false)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(body)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	resp, err = c.post(context.Background(), "notifications/initialized", nil, true)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return http.StatusOK, string(body)
}

// call posts a request and reads its answer: the JSON-RPC response among
// the SSE events, or an error if the stream ended without one.
func (c *rawClient) call(ctx context.Context, method string, params any) (map[string]any, error) {
	m, _, err := c.callNotes(ctx, method, params)
	return m, err
}

// callNotes is call that also returns the notifications that came before
// the answer.
func (c *rawClient) callNotes(ctx context.Context, method string, params any) (map[string]any, []map[string]any, error) {
	resp, err := c.post(ctx, method, params, false)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp)
}

func readAnswer(resp *http.Response) (map[string]any, []map[string]any, error) {
	return testutil.ReadMCPAnswer(resp, nil)
}

func (c *rawClient) delete() int {
	req, _ := http.NewRequest("DELETE", c.url, nil)
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitIdle waits until p has no call in progress and returns how long that
// took, failing the test after limit.
func waitIdle(t *testing.T, p *plugin.Plugin, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if inUse, _ := p.Stats(); inUse == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("plugin %s still busy after %v", p.Name(), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitBusy waits until p has a call in progress.
func waitBusy(t *testing.T, p *plugin.Plugin) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if inUse, _ := p.Stats(); inUse > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin %s never got busy", p.Name())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStalledClientsDoNotHoldThePlugin: two clients flood themselves with
// log messages and progress notifications and never read them. The plugin
// (one instance, a call timeout of 10 minutes) finishes both calls as fast
// as it can send, and a third client is served. Before notifications were
// queued, each flood held the plugin for as long as its client did not read
// (here, to the end of the test). The bounds are far beyond the seconds this
// takes, for a busy machine, and below the call timeout, so that the
// timeout cannot be what frees the plugin.
func TestStalledClientsDoNotHoldThePlugin(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 1, CallTimeout: 10 * time.Minute})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, nil) // no write timeout: the queue alone must do

	start := time.Now()
	stop := make(chan struct{})
	var stalled sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		stalled.Wait()
	})
	for i, kind := range []string{"log", "progress"} {
		c := newRawClient(t, url)
		if code, body := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d %s", code, body)
		}
		if kind == "log" {
			if _, err := c.call(context.Background(), "logging/setLevel", map[string]any{"level": "debug"}); err != nil {
				t.Fatal(err)
			}
		}
		stalled.Add(1)
		go func() {
			defer stalled.Done()
			params := map[string]any{
				"name":      "flood",
				"arguments": map[string]any{"kind": kind, "n": 5000, "size": 4096},
				"_meta":     map[string]any{"progressToken": "tok" + strconv.Itoa(i)},
			}
			resp, err := c.post(context.Background(), "tools/call", params, false)
			if err != nil {
				return
			}
			// Never read: hold the response open until the test ends.
			<-stop
			resp.Body.Close()
		}()
	}
	time.Sleep(200 * time.Millisecond)
	held := waitIdle(t, p, 5*time.Minute)
	t.Logf("plugin free %v after the floods started (%v after waiting began)", time.Since(start).Round(time.Millisecond), held.Round(time.Millisecond))

	cs := httpClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "served"}})
	if err != nil {
		t.Fatalf("third client: %v", err)
	}
	if got := resultText(t, res); got != "served" {
		t.Fatalf("third client got %q", got)
	}
	t.Logf("third client served %v after the floods started", time.Since(start).Round(time.Millisecond))
}

// TestNotificationsArriveBeforeTheAnswer: with a reading client, queued
// notifications still reach it, in order, before the call's answer.
func TestNotificationsArriveBeforeTheAnswer(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 2})
	s := newServer(t, nil, server.Mount{Plugin: p})
	c := newRawClient(t, serveHTTP(t, s, nil))
	if code, body := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	for range 3 {
		answer, notes, err := c.callNotes(context.Background(), "tools/call", map[string]any{
			"name": "flood", "arguments": map[string]any{"kind": "progress", "n": 40},
			"_meta": map[string]any{"progressToken": "p"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if answer["error"] != nil {
			t.Fatalf("answer: %v", answer)
		}
		if len(notes) != 40 {
			t.Fatalf("%d notifications before the answer, want 40", len(notes))
		}
		for i, n := range notes {
			params, _ := n["params"].(map[string]any)
			if n["method"] != "notifications/progress" || params["progress"] != float64(i+1) || params["progressToken"] != "p" {
				t.Fatalf("notification %d = %v", i, n)
			}
		}
	}
}

// TestDeleteCancelsTheSessionsCalls: a client deletes its session while a
// call runs. The plugin is interrupted at once, and the pending request is
// answered with a JSON-RPC error instead of an empty 200.
func TestDeleteCancelsTheSessionsCalls(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 2, CallTimeout: time.Minute})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, nil)
	c := newRawClient(t, url)
	if code, body := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	type answer struct {
		msg map[string]any
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		m, err := c.call(context.Background(), "tools/call", map[string]any{"name": "sleep_ms", "arguments": map[string]any{"ms": 50000}})
		answers <- answer{m, err}
	}()
	waitBusy(t, p)
	start := time.Now()
	if code := c.delete(); code != http.StatusNoContent {
		t.Errorf("DELETE: status %d", code)
	}
	waitIdle(t, p, 10*time.Second)
	interrupted := time.Since(start)
	t.Logf("plugin interrupted %v after DELETE was sent", interrupted.Round(time.Millisecond))
	if interrupted > 5*time.Second {
		t.Errorf("plugin interrupted only %v after DELETE", interrupted)
	}
	select {
	case a := <-answers:
		if a.err != nil {
			t.Fatalf("pending request: %v", a.err)
		}
		e, _ := a.msg["error"].(map[string]any)
		if e == nil || !strings.Contains(fmt.Sprint(e["message"]), "cancelled") {
			t.Fatalf("pending request answered %v, want a cancellation error", a.msg)
		}
		t.Logf("pending request answered %v after DELETE: %v", time.Since(start).Round(time.Millisecond), e)
	case <-time.After(10 * time.Second):
		t.Fatal("pending request not answered")
	}
}

// TestLostConnectionCancelsTheCall: a client that vanishes mid-call frees
// the plugin.
func TestLostConnectionCancelsTheCall(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 2, CallTimeout: time.Minute})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, nil)
	c := newRawClient(t, url)
	if code, body := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.call(ctx, "tools/call", map[string]any{"name": "sleep_ms", "arguments": map[string]any{"ms": 50000}})
	}()
	waitBusy(t, p)
	start := time.Now()
	cancel() // closes the connection; no notifications/cancelled is sent
	<-done
	waitIdle(t, p, 10*time.Second)
	interrupted := time.Since(start)
	t.Logf("plugin interrupted %v after the connection closed", interrupted.Round(time.Millisecond))
	if interrupted > 5*time.Second {
		t.Errorf("plugin interrupted only %v after the connection closed", interrupted)
	}
}

// rss is the resident set size of this process in KiB (0 if unknown).
func rss() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// TestSessionCap: a flood of new sessions beyond the cap gets HTTP 503
// with a JSON-RPC error; the sessions already open keep working. Idle
// sessions expire, and new ones open in their places. (The flood's server
// has an idle timeout no flood can outlast, even on a busy machine: a
// session expiring mid-flood would open another place.)
func TestSessionCap(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 2})
	s := newServer(t, nil, server.Mount{Plugin: p})
	const maxSessions = 200
	url := serveHTTP(t, s, &server.HTTPOptions{MaxSessions: maxSessions, SessionTimeout: time.Hour})

	first := httpClient(t, url)
	before := rss()
	const attempts = 1500
	var opened, refused, other atomic.Int64
	var wg sync.WaitGroup
	work := make(chan struct{})
	var bad atomic.Value
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newRawClient(t, url)
			for range work {
				c.sid = ""
				code, body := c.initialize()
				switch {
				case code == http.StatusOK:
					opened.Add(1)
				case code == http.StatusServiceUnavailable && strings.Contains(body, `"error"`) && strings.Contains(body, "too many sessions"):
					refused.Add(1)
				default:
					other.Add(1)
					bad.Store(fmt.Sprintf("%d %s", code, body))
				}
			}
		}()
	}
	for range attempts {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	t.Logf("%d new sessions tried: %d opened, %d refused with 503; RSS %d KiB before, %d KiB after", attempts, opened.Load(), refused.Load(), before, rss())
	if other.Load() > 0 {
		t.Errorf("%d answers neither 200 nor 503: %v", other.Load(), bad.Load())
	}
	if opened.Load() != maxSessions-1 {
		t.Errorf("opened %d sessions beside the first, want %d", opened.Load(), maxSessions-1)
	}
	if got := resultText(t, callTool(t, first, "echo", map[string]any{"text": "still here"})); got != "still here" {
		t.Errorf("existing session: %q", got)
	}
	held := 0
	for range s.MCP().Sessions() {
		held++
	}
	if held > maxSessions {
		t.Errorf("%d sessions held, cap %d", held, maxSessions)
	}

	// Idle sessions expire, and new ones open in their places.
	s = newServer(t, nil, server.Mount{Plugin: p})
	url = serveHTTP(t, s, &server.HTTPOptions{MaxSessions: 5, SessionTimeout: 2 * time.Second})
	for range 5 {
		if code, body := newRawClient(t, url).initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d %s", code, body)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		held = 0
		for range s.MCP().Sessions() {
			held++
		}
		if held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still held 2 minutes after their idle timeout of 2s", held)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 5 {
		if code, body := newRawClient(t, url).initialize(); code != http.StatusOK {
			t.Fatalf("after expiry: initialize: %d %s", code, body)
		}
	}
}

// TestSessionDeleteFreesPlace: a DELETE is answered once the session's
// place under max_sessions is free, so the client's next session opens at
// once (CI's attack 3.1 was refused 503 when the place was given back a
// moment after the answer).
func TestSessionDeleteFreesPlace(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 1})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, &server.HTTPOptions{MaxSessions: 2, SessionTimeout: time.Hour})
	if code, body := newRawClient(t, url).initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	c := newRawClient(t, url)
	for i := range 200 {
		c.sid = ""
		if code, body := c.initialize(); code != http.StatusOK {
			t.Fatalf("session %d, opened after %d were deleted: %d %s", i+1, i, code, body)
		}
		if code := c.delete(); code != http.StatusNoContent {
			t.Fatalf("DELETE %d: HTTP %d", i+1, code)
		}
	}
}

// TestReloadLosesNoCall: 5,000 calls from 16 clients while the plugin set
// is reloaded 30 times, some reloads refused (a conflict, or a module that
// does not load). Every call succeeds.
func TestReloadLosesNoCall(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/flood")
	limits := config.Limits{MaxInstances: 2}
	load := func(name string) *plugin.Plugin {
		b, err := os.ReadFile(wasm)
		if err != nil {
			t.Fatal(err)
		}
		p, err := sharedEngine(t).Load(context.Background(), b, plugin.Options{Name: name, Limits: limits, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cur := load("flood")
	s := newServer(t, nil, server.Mount{Plugin: cur})
	url := serveHTTP(t, s, nil)
	defer func() { cur.Close(context.Background()) }()

	const calls, clients, reloads = 5000, 16, 30
	var next, failed, done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range clients {
		cs := httpClient(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > calls {
					return
				}
				text := "c" + strconv.FormatInt(i, 10)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				cancel()
				switch {
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				case res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text:
					failed.Add(1)
					b, _ := json.Marshal(res)
					firstErr.CompareAndSwap(nil, string(b))
				}
				done.Add(1)
			}
		}()
	}

	ok, refused := 0, 0
	for r := range reloads {
		// Spread the reloads over the calls.
		for done.Load() < int64((r+1)*calls/(reloads+2)) {
			time.Sleep(2 * time.Millisecond)
		}
		switch r % 5 {
		case 3: // a conflicting set: refused, the current one stays
			a, b := load("flood"), load("flood2")
			if err := s.Reload(context.Background(), []server.Mount{{Plugin: a}, {Plugin: b}}); err == nil {
				t.Fatal("conflicting reload accepted")
			}
			a.Close(context.Background())
			b.Close(context.Background())
			refused++
		case 4: // a module that does not load: no reload at all
			if _, err := sharedEngine(t).Load(context.Background(), []byte("\x00asm garbage"), plugin.Options{Name: "flood"}); err == nil {
				t.Fatal("garbage module loaded")
			}
			refused++
		default:
			p := load("flood")
			if err := s.Reload(context.Background(), []server.Mount{{Plugin: p}}); err != nil {
				t.Fatal(err)
			}
			cur.Close(context.Background()) // calls queued on it move to p
			cur = p
			ok++
		}
	}
	wg.Wait()
	t.Logf("%d calls by %d clients across %d reloads (%d applied, %d refused): %d failed", calls, clients, reloads, ok, refused, failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d calls failed; first: %v", failed.Load(), firstErr.Load())
	}
}

// TestDrain: a stopping server lets calls in progress finish, refuses new
// ones with a JSON-RPC error, and answers calls still running after the
// drain timeout with a JSON-RPC error.
func TestDrain(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 8, CallTimeout: time.Minute})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, nil)

	type result struct {
		text string
		err  error
	}
	call := func(cs *mcp.ClientSession, ms int) result {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep_ms", Arguments: map[string]any{"ms": ms}})
		if err != nil {
			return result{err: err}
		}
		return result{text: resultText(t, res)}
	}
	var sessions []*mcp.ClientSession
	for range 5 {
		sessions = append(sessions, httpClient(t, url))
	}
	late := httpClient(t, url)

	// Four short calls finish within the drain timeout; one long one does not.
	results := make(chan result, 5)
	for i, cs := range sessions {
		ms := 1500
		if i == 4 {
			ms = 50000
		}
		go func() { results <- call(cs, ms) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if inUse, _ := p.Stats(); inUse == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the calls did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	drained := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	start := time.Now()
	go func() { drained <- s.Drain(ctx) }()
	time.Sleep(100 * time.Millisecond)

	// A call during the drain: a clear error.
	if r := call(late, 10); r.err == nil || !strings.Contains(r.err.Error(), "shutting down") {
		t.Errorf("call during drain: %+v, want a shutting-down error", r)
	}
	// A new session during the drain: 503.
	if code, body := newRawClient(t, url).initialize(); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("new session during drain: %d %s", code, body)
	}

	finished, cancelled := 0, 0
	for range 5 {
		select {
		case r := <-results:
			switch {
			case r.err == nil && r.text == "slept 1500ms":
				finished++
			case r.err != nil && strings.Contains(r.err.Error(), "drain timeout"):
				cancelled++
			default:
				t.Errorf("call: %+v", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a call got no answer")
		}
	}
	n := <-drained
	t.Logf("drain: %d calls finished, %d cancelled with an error after the timeout; Drain returned %d after %v", finished, cancelled, n, time.Since(start).Round(time.Millisecond))
	if finished != 4 || cancelled != 1 || n != 1 {
		t.Errorf("finished %d, cancelled %d, Drain reported %d; want 4, 1, 1", finished, cancelled, n)
	}
}

// TestSlowBodyIsCut: a client that sends a request's header and then
// dribbles its body loses the connection after the read timeout.
func TestSlowBodyIsCut(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 1})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, &server.HTTPOptions{ReadTimeout: 500 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(url, server.Path), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", server.Path)
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, _ := io.ReadAll(conn) // until the server closes
	if time.Since(start) > 15*time.Second {
		t.Fatalf("connection held %v with a body that never came", time.Since(start))
	}
	t.Logf("slow body cut after %v: %q", time.Since(start).Round(time.Millisecond), firstLine(string(resp)))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// TestStalledClientLosesItsConnection: with a write timeout, a client that
// stops reading has its connection closed: the stream it stalled on ends
// without the answer, and the server holds nothing for it.
func TestStalledClientLosesItsConnection(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 1, CallTimeout: 2 * time.Minute})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, &server.HTTPOptions{WriteTimeout: time.Second})
	c := newRawClient(t, url)
	if code, body := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	if _, err := c.call(context.Background(), "logging/setLevel", map[string]any{"level": "debug"}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.post(context.Background(), "tools/call", map[string]any{
		"name": "flood", "arguments": map[string]any{"kind": "log", "n": 5000, "size": 4096},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waitIdle(t, p, time.Minute)
	time.Sleep(3 * time.Second) // stalled for longer than the write timeout
	start := time.Now()
	answer, notes, err := readAnswer(resp)
	if err == nil {
		t.Fatalf("the stalled stream still carried the answer %v after %d notifications", answer, len(notes))
	}
	t.Logf("after the stall: %d notifications read, then %v (%v)", len(notes), err, time.Since(start).Round(time.Millisecond))
}

// TestWriteTimeoutSparesIdleKeepAlive: the write timeout bounds writes, not
// the idle time of a kept-alive connection before its next request.
func TestWriteTimeoutSparesIdleKeepAlive(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 1})
	s := newServer(t, nil, server.Mount{Plugin: p})
	c := newRawClient(t, serveHTTP(t, s, &server.HTTPOptions{WriteTimeout: 300 * time.Millisecond}))
	if code, body := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	for range 2 {
		time.Sleep(time.Second) // idle on the kept-alive connection
		resp, err := c.post(context.Background(), "notifications/roots/list_changed", nil, true)
		if err != nil {
			t.Fatalf("notification after idling: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notification after idling: status %d", resp.StatusCode)
		}
		time.Sleep(time.Second)
		answer, err := c.call(context.Background(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
		if err != nil || answer["result"] == nil {
			t.Fatalf("call after idling: %v %v", answer, err)
		}
	}
}
