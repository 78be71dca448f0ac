package main

// Issue 15, the server's side: batches that open a session, subscriptions
// that outlive it, shadowing, label and span sizes, predictable server
// request ids, another user's DELETE, malformed stdio lines, roots
// notification floods, invalid tool names and ids that come back changed.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/auth/authtest"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func init() {
	register(
		&attack{
			id: "15.2b", name: "batch-initialize",
			attempt: "One POST holding [initialize, initialized, tools/call], as a plugin reaching another replica sent it; a batch in a 2025-06-18 session without Mcp-Protocol-Version; initialize in a batch over stdio",
			run:     batchInitialize,
		},
		&attack{
			id: "15.4", name: "subscription-leak",
			attempt: "3 rounds of 30 sessions that each subscribe to 1,000 resource URIs of 1 KiB and are deleted (30,000 subscriptions a round); one session asks for 1,001",
			run:     subscriptionLeak,
		},
		&attack{
			id: "15.5", name: "shadowing",
			attempt: "Plugin alpha claims at run time a template of beta's with a renamed variable, another template that sorts first, a resource beta's template serves, a name beta offers later, and a name and URI carrying plugin gamma's prefix; the claims are listed again 50 times",
			run:     shadowing,
		},
		&attack{
			id: "15.6", name: "metrics-names",
			attempt: "A plugin offers 220 tools with names of 60,000 characters; each is called once; /metrics is scraped",
			run:     metricsNames,
		},
		&attack{
			id: "15.7", name: "tracing-memory",
			attempt: "150 calls of unknown tools with names of 3.9 MB, with tracing on and a collector that never answers (300 took RSS to 1.1 GB before the fix)",
			limit:   5 * time.Minute,
			run:     tracingMemory,
		},
		&attack{
			id: "15.8b", name: "server-request-ids",
			attempt: "Three sessions each make a call that asks the client for sampling; the ids of the server's requests are compared",
			run:     serverRequestIDs,
		},
		&attack{
			id: "15.10", name: "foreign-delete",
			attempt: "Bob (OAuth, his own sub) sends DELETE for alice's session while her 2 s call runs",
			run:     foreignDelete,
		},
		&attack{
			id: "15.14", name: "stdio-malformed",
			attempt: "Over stdio: {}, 5, [], an object id, 1e400, \"method\": 5, \"jsonrpc\": \"1.0\", nesting of 1,001, not JSON, two values on a line, an unterminated string, each followed by a ping",
			run:     stdioMalformed,
		},
		&attack{
			id: "15.15", name: "roots-flood",
			attempt: "100,000 notifications/roots/list_changed over stdio to a plugin that exports on_roots_list_changed, then a call",
			run:     rootsFlood,
		},
		&attack{
			id: "15.16", name: "invalid-names-log",
			attempt: "A plugin offers a tool named \"has space\" and one of 200 characters, then lists its tools again 1,000 times",
			run:     invalidNamesLog,
		},
		&attack{
			id: "15.17", name: "ids-round-trip",
			attempt: "tools/call with ids 123456789012345678901234567890, 1.5 and 9007199254740993 (2^53+1), over HTTP and stdio; a second initialize",
			run:     idsRoundTrip,
		},
	)
}

// postBody posts a raw body (with the session of c, if any, at version, if
// not "") and returns the status, the session ID the answer names, and
// the text of the JSON-RPC answers: the body, or the data of the events of
// a stream that are answers (responses, or arrays of them), a line each.
func (c *raw) postBody(ctx context.Context, body, version string) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var answers []string
		for line := range strings.Lines(string(b)) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && !strings.Contains(data, `"method"`) {
				answers = append(answers, data)
			}
		}
		text = strings.Join(answers, "\n")
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), text, nil
}

// answerOf decodes a JSON-RPC answer's raw id and error code (0 for a
// result).
func answerOf(text string) (id string, code int64) {
	var m struct {
		ID    json.RawMessage
		Error *struct{ Code int64 }
	}
	json.Unmarshal([]byte(text), &m)
	if m.Error != nil {
		return string(m.ID), m.Error.Code
	}
	return string(m.ID), 0
}

// stdio is a hangar serving one session over stdio, spoken to by hand.
type stdio struct {
	a     *A
	p     *proc
	in    io.WriteCloser
	lines chan string
}

// serveStdio starts hangar serve --stdio with the configuration file cfg.
func (a *A) serveStdio(cfg string) *stdio {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := a.start(&procOpts{stdin: inR, stdout: outW}, "serve", "--stdio", "--cache-dir", a.env.compiled, "--config", cfg)
	s := &stdio{a: a, p: p, in: inW, lines: make(chan string, 1024)}
	go func() {
		<-p.done
		outW.Close()
		inR.Close()
	}()
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	a.Cleanup(func() { inW.Close() })
	return s
}

// send writes lines (each ends with a newline).
func (s *stdio) send(lines ...string) {
	for _, l := range lines {
		if _, err := io.WriteString(s.in, l+"\n"); err != nil {
			s.a.Fatalf("writing to hangar's stdin: %v (exited: %v)", err, s.p.exited())
		}
	}
}

// answer reads lines until the answer with the raw id, and returns it;
// "" if hangar's output ends first, or after limit.
func (s *stdio) answer(id string, limit time.Duration) string {
	timeout := time.After(limit)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return ""
			}
			if got, _ := answerOf(line); got == id && !strings.Contains(line, `"method"`) {
				return line
			}
		case <-timeout:
			return ""
		}
	}
}

// exchange sends a line and returns the answer with the raw id.
func (s *stdio) exchange(line, id string) string {
	s.send(line)
	return s.answer(id, 30*time.Second)
}

// initialize opens the session at version.
func (s *stdio) initialize(version string) {
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"attacker","version":"1"}}}`, version)
	if got := s.exchange(init, "1"); !strings.Contains(got, `"result"`) {
		s.a.Fatalf("initialize over stdio: %q\n%s", got, tail(s.p.log.String(), 10))
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// callLine is a tools/call message with a raw id.
func callLine(id, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// initLine is an initialize request at version.
func initLine(id, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`, id, version)
}

// testPlugin builds a test plugin of the repository for an attack.
func (a *A) testPlugin(pkg string) string {
	p, err := testutil.Build(pkg)
	if err != nil {
		a.Fatalf("building %s: %v", pkg, err)
	}
	return p
}

// scrape returns the text of hangar's /metrics (beside /mcp) and its size.
func (a *A) scrape(p *proc) string {
	resp, err := http.Get(strings.TrimSuffix(p.url, "/mcp") + "/metrics")
	if err != nil {
		a.Fatalf("scraping /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.Fatalf("scraping /metrics: %v", err)
	}
	return string(b)
}

// metricValue is the value of a series of the metrics text whose line
// starts with series (name and labels), or -1.
func metricValue(text, series string) float64 {
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

func batchInitialize(a *A) {
	p := a.serve(nil, "--config", floodConfig(a, "{}", ""))
	echo := callLine("3", "echo", `{"text":"reached"}`)

	// One POST that opens a session and calls a tool.
	c := a.raw(p.url)
	batch := `[` + initLine("1", "2025-03-26") + `,{"jsonrpc":"2.0","method":"notifications/initialized"},` + echo + `]`
	code, sid, text, err := c.postBody(a.ctx, batch, "")
	if err != nil {
		a.Fatalf("%v", err)
	}
	a.Figure("[initialize, initialized, tools/call] in one POST", "HTTP %d, session %q: %s (before: HTTP 200, a session, the tool answered)", code, sid, firstN(text, 160))
	a.Check(code == http.StatusBadRequest && sid == "" && strings.Contains(text, "initialize must not be part of a JSON-RPC batch") && !strings.Contains(text, "reached"),
		"the batch with initialize: HTTP %d, session %q: %s", code, sid, text)

	// A 2025-06-18 session that leaves out Mcp-Protocol-Version, which the
	// go-sdk takes for 2025-03-26 and so allows batches.
	c = a.raw(p.url)
	c.mustInitialize(a)
	code, _, text, err = c.postBody(a.ctx, `[`+echo+`]`, "")
	if err != nil {
		a.Fatalf("%v", err)
	}
	a.Figure("a batch in a 2025-06-18 session, no Mcp-Protocol-Version", "HTTP %d: %s (before: HTTP 200, served)", code, firstN(text, 160))
	a.Check(code == http.StatusBadRequest && strings.Contains(text, `"code":-32600`), "a batch in a 2025-06-18 session: HTTP %d: %s", code, text)

	// Over stdio, at 2025-03-26, whose batches are served.
	s := a.serveStdio(floodConfig(a, "{}", ""))
	s.initialize("2025-03-26")
	got := s.exchange(`[`+initLine("4", "2025-03-26")+`]`, "null")
	a.Figure("initialize in a batch over stdio", "%s", firstN(got, 160))
	a.Check(strings.Contains(got, "initialize must not be part"), "initialize in a batch over stdio: %q", got)
	s.send(`[` + callLine("5", "echo", `{"text":"a"}`) + `,` + callLine("6", "echo", `{"text":"b"}`) + `]`)
	var batchAnswer string
	select {
	case batchAnswer = <-s.lines:
	case <-time.After(30 * time.Second):
	}
	a.Check(strings.HasPrefix(batchAnswer, "[") && strings.Count(batchAnswer, `"result"`) == 2, "a batch of two calls at 2025-03-26: %q", batchAnswer)
	a.Figure("a batch of two calls over stdio at 2025-03-26", "%d answers", strings.Count(batchAnswer, `"result"`))
	a.Result("initialize in a batch refused with -32600 (HTTP 400, no session); batches refused in sessions of versions without them; 2025-03-26 batches served")
}

// liveHeap estimates hangar's live heap, in MiB: the least heap_alloc of
// /metrics while requests of 2 MB make the collector run, which it reports
// just after a collection.
func (a *A) liveHeap(p *proc) float64 {
	c := a.raw(p.url)
	c.mustInitialize(a)
	pad := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("p", 2<<20) + `"}}}`
	least := -1.0
	for range 40 {
		c.postBody(a.ctx, pad, "2025-06-18")
		if h := metricValue(a.scrape(p), "go_memstats_heap_alloc_bytes") / (1 << 20); least < 0 || h < least {
			least = h
		}
	}
	c.delete(a.ctx)
	return least
}

func subscriptionLeak(a *A) {
	conf := a.testPlugin("./examples/conformance")
	p := a.serve(nil, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: conformance, path: "+conf+"}\n"))
	// URIs of 1 KiB, so that what the go-sdk keeps of them shows.
	pad := strings.Repeat("u", 1000)
	subscribe := func(c *raw, from, n int) (int, string) {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"test://template/%s%d/data"}}`, i+1, pad, from+i)
		}
		b.WriteString("]")
		code, _, text, err := c.postBody(a.ctx, b.String(), "2025-03-26")
		if err != nil {
			a.Fatalf("%v", err)
		}
		return code, text
	}
	open := func() *raw {
		c := a.raw(p.url)
		code, sid, text, err := c.postBody(a.ctx, initLine("0", "2025-03-26"), "")
		if err != nil || code != http.StatusOK {
			a.Fatalf("initialize: %d %s %v", code, text, err)
		}
		c.sid = sid
		c.postBody(a.ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "2025-03-26")
		return c
	}
	const rounds, sessions, each = 3, 30, 1000
	before := a.liveHeap(p)
	var heaps []string
	var last float64
	start := time.Now()
	for r := range rounds {
		var wg sync.WaitGroup
		var failed atomic.Int64
		var bad atomic.Value
		work := make(chan int)
		for range 4 {
			wg.Go(func() {
				for i := range work {
					c := open()
					if code, text := subscribe(c, (r*sessions+i)*each, each); code != http.StatusOK || strings.Count(text, `"result"`) != each {
						failed.Add(1)
						bad.CompareAndSwap(nil, fmt.Sprintf("HTTP %d, %d results: %s", code, strings.Count(text, `"result"`), firstN(text, 200)))
					}
					if code, err := c.delete(a.ctx); err != nil || code != http.StatusNoContent {
						failed.Add(1)
						bad.CompareAndSwap(nil, fmt.Sprintf("DELETE: %d %v", code, err))
					}
				}
			})
		}
		for i := range sessions {
			work <- i
		}
		close(work)
		wg.Wait()
		a.Check(failed.Load() == 0, "round %d: %d sessions failed to subscribe or be deleted: %v", r, failed.Load(), bad.Load())
		last = a.liveHeap(p)
		heaps = append(heaps, fmt.Sprintf("%.0f", last))
	}
	a.Figure("live heap", "%.0f MiB before, %s MiB after each round of %d subscriptions (URIs of 1 KiB) from %d deleted sessions (28, then 87, 138, 214 MiB before the fix)", before, strings.Join(heaps, ", "), sessions*each, sessions)
	a.Figure("rounds", "%d in %v", rounds, since(start))
	a.Check(last-before < 20, "the live heap grew by %.0f MiB over %d subscriptions of deleted sessions", last-before, rounds*sessions*each)

	// The cap of one session.
	c := open()
	subscribe(c, 0, 1000)
	_, text := subscribe(c, 5000, 1)
	a.Figure("subscription 1,001 of a session", "%s", firstN(text, 200))
	a.Check(strings.Contains(text, "too many subscriptions"), "subscription 1,001: %s", text)
	a.Result("the subscriptions of deleted sessions were freed: the live heap stayed at %.0f MiB; a session holds at most 1,000", last)
}

func shadowing(a *A) {
	claims := a.testPlugin("./internal/testplugins/claims")
	p := a.serve(nil, "--config", a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:0
plugins:
  - {name: alpha, path: %[1]s, config: {who: alpha, tools: "a."}}
  - {name: beta, path: %[1]s, config: {who: beta, tools: "b."}}
  - {name: gamma, path: %[1]s, prefix: g, config: {who: gamma}}
`, claims)))
	cs := a.client(p.url, nil)
	claim := func(tool, kind, name string) {
		if _, err := callText(a.ctx, cs, tool, map[string]any{"kind": kind, "name": name}); err != nil {
			a.Fatalf("%s %s %s: %v", tool, kind, name, err)
		}
	}
	read := func(uri string) string {
		res, err := cs.ReadResource(a.ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "error: " + err.Error()
		}
		if len(res.Contents) == 0 {
			return "nothing"
		}
		return res.Contents[0].Text
	}
	call := func(name string) string {
		text, err := callText(a.ctx, cs, name, map[string]any{})
		if err != nil {
			return "error: " + err.Error()
		}
		return text
	}

	claim("b.claim", "template", "weather://{day}")
	claim("a.claim", "template", "weather://{a}")     // beta's, a variable renamed: sorts first
	claim("a.claim", "template", "weather://t{rest}") // another shape that sorts first
	claim("a.claim", "resource", "weather://monday")  // served by beta's template
	claim("a.claim", "tool", "g_secret")              // gamma's prefix, before gamma offers it
	claim("a.claim", "resource", "g+file:///secret")
	claim("g_claim", "tool", "secret")
	claim("g_claim", "resource", "file:///secret")
	claim("a.claim", "tool", "search") // first to claim a plain name
	claim("b.claim", "tool", "search")
	for range 50 {
		callText(a.ctx, cs, "a.relist", map[string]any{})
		callText(a.ctx, cs, "b.relist", map[string]any{})
	}

	served := map[string]string{
		"read weather://friday": read("weather://friday"),
		"read weather://today":  read("weather://today"),
		"read weather://monday": read("weather://monday"),
		"read g+file:///secret": read("g+file:///secret"),
		"call g_secret":         call("g_secret"),
		"call search (alpha's)": call("search"),
	}
	want := map[string]string{
		"read weather://friday": "beta", "read weather://today": "beta", "read weather://monday": "beta",
		"read g+file:///secret": "gamma", "call g_secret": "gamma", "call search (alpha's)": "alpha",
	}
	var stolen []string
	for _, what := range []string{"read weather://friday", "read weather://today", "read weather://monday", "read g+file:///secret", "call g_secret", "call search (alpha's)"} {
		got := served[what]
		owner, _, _ := strings.Cut(got, " ")
		a.Figure(what, "served by %s (want %s; alpha before the fix)", owner, want[what])
		if owner != want[what] {
			stolen = append(stolen, what)
		}
	}
	a.Check(len(stolen) == 0, "served by another plugin than the owner: %v", stolen)
	logged := p.count("ignoring the plugin's")
	metrics := a.scrape(p)
	refusedA := metricValue(metrics, `hangar_plugin_refused_total{kind="resource template",plugin="alpha",reason="conflict"}`)
	refusedB := metricValue(metrics, `hangar_plugin_refused_total{kind="tool",plugin="beta",reason="conflict"}`)
	a.Figure("refusals", "%d log lines for 5 refused claims listed again 50 times; hangar_plugin_refused_total: alpha's template %v, beta's tool %v", logged, refusedA, refusedB)
	a.Check(logged == 5, "%d log lines of refused claims, want 5 (once each):\n%s", logged, tail(p.log.String(), 10))
	a.Check(refusedA >= 50 && refusedB >= 50, "refusals counted: alpha %v, beta %v", refusedA, refusedB)
	a.Result("every URI and name stayed with its owner; the 5 shadowing claims were refused, logged once each and counted")
}

func metricsNames(a *A) {
	claims := a.testPlugin("./internal/testplugins/claims")
	p := a.serve(nil, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: claims, path: "+claims+"}\n"))
	before := len(a.scrape(p))
	cs := a.client(p.url, nil)
	ctx, cancel := context.WithTimeout(a.ctx, 2*time.Minute)
	defer cancel()
	if _, err := callText(ctx, cs, "claim_tools", map[string]any{"prefix": "t", "count": 220, "length": 60000}); err != nil {
		a.Fatalf("claim_tools: %v", err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		a.Fatalf("tools/list: %v", err)
	}
	called, unknown := 0, 0
	for i := range 220 {
		name := fmt.Sprintf("t%d", i)
		name += strings.Repeat("x", 60000-len(name))
		if _, err := callText(ctx, cs, name, map[string]any{}); err != nil {
			unknown++
		} else {
			called++
		}
	}
	text := a.scrape(p)
	longest := 0
	for _, m := range regexp.MustCompile(`="([^"]*)"`).FindAllStringSubmatch(text, -1) {
		longest = max(longest, len(m[1]))
	}
	a.Figure("tools listed", "%d of 220 offered (names of 60,000 characters; MCP allows 128)", len(tools.Tools)-3)
	a.Figure("calls", "%d served, %d refused as unknown tools", called, unknown)
	a.Figure("/metrics", "%d bytes before, %d after the calls; longest label value %d bytes (264,441,818 bytes and labels of 60,000 before the fix)", before, len(text), longest)
	a.Check(len(tools.Tools) == 3 && called == 0, "%d tools listed, %d calls served", len(tools.Tools), called)
	a.Check(len(text) < 200<<10 && longest <= 128, "/metrics is %d bytes, its longest label %d", len(text), longest)
	logged, quiet := p.count("MCP allows 1 to 128"), p.count("counted (hangar_plugin_refused_total), not logged")
	a.Figure("log", "%d lines name a refused tool, then one says the rest are counted, not logged", logged)
	a.Check(logged == 100 && quiet == 1, "%d log lines for 220 names too long (%d of the rest), want 100 and 1", logged, quiet)
	a.Result("the 220 names were refused at registration; /metrics stayed at %d KB", len(text)/1000)
}

func tracingMemory(a *A) {
	// A collector that takes the connection and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Fatalf("%v", err)
	}
	a.Cleanup(func() { ln.Close() })
	var conns sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Lock()
			held = append(held, c)
			conns.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	a.Cleanup(func() {
		conns.Lock()
		defer conns.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	p := a.serve(nil, "--config", a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:0\ntracing:\n  endpoint: http://%s/v1/traces\nplugins:\n  - {name: flood, path: %s}\n", ln.Addr(), a.env.flood)))
	// The plugin compiles into the cache in the background after the
	// start; its garbage is not the spans', so the measure begins after.
	p.waitLog("msg=ready", 1, 2*time.Minute)
	rssBefore := p.rss()
	const calls, size = 150, 3_900_000
	name := strings.Repeat("n", size)
	var wg sync.WaitGroup
	var refused, other atomic.Int64
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if r := int64(p.rss()); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	work := make(chan int)
	start := time.Now()
	for range 4 {
		c := a.raw(p.url)
		c.mustInitialize(a)
		wg.Go(func() {
			for i := range work {
				_, _, text, err := c.postBody(a.ctx, callLine(strconv.Itoa(i+2), name, `{}`), "2025-06-18")
				if err == nil && strings.Contains(text, "unknown tool") {
					refused.Add(1)
				} else {
					other.Add(1)
				}
			}
		})
	}
	for i := range calls {
		work <- i
	}
	close(work)
	wg.Wait()
	took := since(start)
	a.Sleep(2 * time.Second)
	close(stop)
	rssAfter := p.rss()
	a.Figure("calls", "%d of %d names of 3.9 MB refused as unknown tools in %v", refused.Load(), calls, took)
	a.Figure("RSS", "%.0f MiB before, at most %d MiB during, %.0f MiB after (killed at 2 GiB after 80 calls before the fix)", rssBefore, peak.Load(), rssAfter)
	a.Check(other.Load() == 0, "%d calls got another answer", other.Load())
	// The names the calls carried come to 585 MB: spans that kept them
	// would hold at least that. What the server holds otherwise is the
	// requests in flight and garbage, which the runtime gives back to the
	// system when it will (RSS two seconds after the calls read 135 to
	// 204 MiB in runs of the same build): the peak is the measure.
	a.Check(float64(peak.Load())-rssBefore < 400, "RSS grew by %.0f MiB at the peak while the collector did not answer: the spans hold the names", float64(peak.Load())-rssBefore)
	a.Result("the spans held no tool name: RSS %.0f MiB after %d calls with names of 3.9 MB", rssAfter, calls)
}

var sampleIDRE = regexp.MustCompile(`"id":(\d+),"method":"sampling/createMessage"`)

func serverRequestIDs(a *A) {
	conf := a.testPlugin("./examples/conformance")
	p := a.serve(nil, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: conformance, path: "+conf+"}\n"))
	var ids []string
	for range 3 {
		c := a.raw(p.url)
		code, sid, text, err := c.postBody(a.ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"attacker","version":"1"}}}`, "")
		if err != nil || code != http.StatusOK {
			a.Fatalf("initialize: %d %s %v", code, text, err)
		}
		c.sid = sid
		c.postBody(a.ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "2025-06-18")
		req, _ := http.NewRequestWithContext(a.ctx, "POST", c.url, strings.NewReader(callLine("2", "test_sampling", `{"prompt":"who?"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := c.hc.Do(req)
		if err != nil {
			a.Fatalf("%v", err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		answered := false
		for sc.Scan() {
			line := sc.Text()
			if m := sampleIDRE.FindStringSubmatch(line); m != nil {
				ids = append(ids, m[1])
				answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"me"}}}`, m[1])
				go c.postBody(a.ctx, answer, "2025-06-18")
			}
			if strings.Contains(line, `"id":2,"result"`) {
				answered = strings.Contains(line, "me")
				break
			}
		}
		resp.Body.Close()
		a.Check(answered, "the sampling call was not answered with the client's answer")
	}
	a.Figure("server request ids of three sessions", "%s (1000000001 in every session before the fix)", strings.Join(ids, ", "))
	distinct := map[string]bool{}
	for _, id := range ids {
		n, _ := strconv.ParseInt(id, 10, 64)
		a.Check(n > 1<<32 && n <= 1<<53, "id %s out of (2^32, 2^53]", id)
		distinct[id] = true
	}
	a.Check(len(ids) == 3 && len(distinct) == 3, "ids %v", ids)
	a.Result("each session's server requests start at a random id below 2^53")
}

func foreignDelete(a *A) {
	is := a.issuer()
	p := a.serveOAuth(is, is.JWKSURL)
	alice := a.rawWith(p.url, a.mint(is, authtest.Claims{Subject: "alice", Scope: "plugin:*"}))
	alice.mustInitialize(a)
	bob := a.rawWith(p.url, a.mint(is, authtest.Claims{Subject: "bob", Scope: "plugin:*"}))
	type result struct {
		text string
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		answer, _, err := alice.call(a.ctx, "tools/call", toolCall("sleep_ms", map[string]any{"ms": 2000}, ""))
		text, _ := resultText(answer)
		if msg := errorMessage(answer); msg != "" {
			text = "error: " + msg
		}
		done <- result{text, err, time.Since(start)}
	}()
	a.Sleep(500 * time.Millisecond) // the call runs
	del := a.status(bob, http.MethodDelete, alice.sid)
	r := <-done
	a.Figure("bob's DELETE of alice's session", "HTTP %d", del)
	a.Figure("alice's call", "%q after %v (\"request cancelled\" at once before the fix)", r.text, round(r.took))
	a.Check(del == http.StatusForbidden, "bob's DELETE: HTTP %d, want 403", del)
	a.Check(r.err == nil && r.text == "slept 2000ms", "alice's call: %q %v", r.text, r.err)
	n := len(a.tools(alice))
	a.Figure("alice's tools/list afterwards", "%d tools", n)
	a.Check(n > 0, "alice's session lists no tool")
	a.Result("bob's DELETE was refused (403) and ended nothing: alice's call answered its result")
}

func stdioMalformed(a *A) {
	s := a.serveStdio(floodConfig(a, "{}", ""))
	s.initialize("2025-06-18")
	deep := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}}`
	cases := []struct{ name, line, id string }{
		{"{}", `{}`, "null"},
		{"5", `5`, "null"},
		{"[]", `[]`, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null"},
		{"1e400", `1e400`, "null"},
		{"method 5", `{"jsonrpc":"2.0","id":3,"method":5}`, "3"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":4,"method":"ping"}`, "4"},
		{"nesting 1001", deep, "null"},
		{"not JSON", `not json`, "null"},
		{"two values", `{"jsonrpc":"2.0","id":5,"method":"ping"}{"jsonrpc":"2.0","id":6,"method":"ping"}`, "null"},
		{"unterminated string", `"unterminated`, "null"},
	}
	var answers []string
	alive := 0
	for i, tc := range cases {
		got := s.exchange(tc.line, tc.id)
		_, code := answerOf(got)
		answers = append(answers, fmt.Sprintf("%s: %d", tc.name, code))
		a.Check(code == -32600 || code == -32700, "%s: answered %q", tc.name, got)
		ping := fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, i)
		if strings.Contains(s.exchange(ping, fmt.Sprintf(`"p%d"`, i)), `"result"`) {
			alive++
		} else {
			a.Fatalf("after %s, the ping got no answer; hangar exited: %v\n%s", tc.name, s.p.exited(), tail(s.p.log.String(), 10))
		}
	}
	text := s.exchange(callLine("99", "echo", `{"text":"still here"}`), "99")
	a.Figure("answers", "%s", strings.Join(answers, "; "))
	a.Figure("pings after each", "%d of %d answered (the first line ended the process before the fix)", alive, len(cases))
	a.Check(strings.Contains(text, "still here"), "a call after the malformed lines: %q", text)
	a.Result("each malformed line was answered with -32700 or -32600; the session went on")
}

func rootsFlood(a *A) {
	v1 := a.testPlugin("./internal/testplugins/v1full")
	s := a.serveStdio(a.config("http: {}\nplugins:\n  - {name: v1full, path: " + v1 + "}\n"))
	s.initialize("2025-06-18")
	if got := s.exchange(callLine("100", "echo_context", `{}`), "100"); !strings.Contains(got, `"result"`) {
		a.Fatalf("a call before the flood: %q", got)
	}
	rssBefore := s.p.rss()
	const n = 100000
	note := `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}` + "\n"
	start := time.Now()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		io.WriteString(s.in, strings.Repeat(note, n))
	}()
	<-sent
	wrote := time.Since(start)
	got := s.exchange(callLine("2", "echo_context", `{}`), "2")
	answered := time.Since(start)
	a.Check(strings.Contains(got, `"result"`), "the call after the flood: %q", got)
	peak := float64(s.p.status("VmHWM")) / 1024
	a.Sleep(2 * time.Second)
	runs := s.exchange(callLine("3", "roots_changed_count", `{}`), "3")
	var res struct {
		Result struct{ Content []struct{ Text string } }
	}
	json.Unmarshal([]byte(runs), &res)
	count := "?"
	if len(res.Result.Content) > 0 {
		count = res.Result.Content[0].Text
	}
	a.Figure("the flood", "%d notifications written in %v; a call after them answered %v after the first (21.8 s before the fix)", n, round(wrote), round(answered))
	a.Figure("on_roots_list_changed", "ran %s times (100,000 before the fix)", count)
	a.Figure("RSS", "%.0f MiB before, peak %.0f MiB (the peak since start; doubled before the fix)", rssBefore, peak)
	c, _ := strconv.Atoi(count)
	a.Check(c >= 1 && c <= 20, "on_roots_list_changed ran %s times for %d notifications", count, n)
	a.Check(answered < 5*time.Second, "the call after the flood answered after %v", answered)
	a.Result("the notifications were coalesced into %s runs; a call after them answered in %v", count, round(answered))
}

func invalidNamesLog(a *A) {
	claims := a.testPlugin("./internal/testplugins/claims")
	p := a.serve(nil, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: claims, path: "+claims+"}\n"))
	cs := a.client(p.url, nil)
	long := strings.Repeat("n", 200)
	for _, name := range []string{"has space", long} {
		if _, err := callText(a.ctx, cs, "claim", map[string]any{"kind": "tool", "name": name}); err != nil {
			a.Fatalf("claim %s: %v", name, err)
		}
	}
	logBefore := p.log.Len()
	const relists = 1000
	start := time.Now()
	for range relists {
		if _, err := callText(a.ctx, cs, "relist", map[string]any{}); err != nil {
			a.Fatalf("relist: %v", err)
		}
	}
	took := since(start)
	a.Sleep(500 * time.Millisecond)
	spaceLines, longLines := p.count("has space"), p.count(long[:150])
	grew := p.log.Len() - logBefore
	text, err := callText(a.ctx, cs, "has space", map[string]any{})
	a.Figure("log lines", "%d for \"has space\", %d for the name of 200 characters, over %d listings in %v (1,002 and 1,001 before the fix)", spaceLines, longLines, relists, took)
	a.Figure("log growth during the listings", "%d bytes (482,347 before the fix)", grew)
	a.Figure("\"has space\"", "%q %v (offered: MCP's naming rules say should)", text, err)
	a.Check(spaceLines == 1 && longLines == 1, "the names were logged %d and %d times", spaceLines, longLines)
	a.Check(grew < 10<<10, "the log grew by %d bytes", grew)
	a.Result("each invalid name logged once; the log grew by %d bytes over %d listings", grew, relists)
}

func idsRoundTrip(a *A) {
	ids := []string{"123456789012345678901234567890", "1.5", "9007199254740993"}
	p := a.serve(nil, "--config", floodConfig(a, "{}", ""))
	c := a.raw(p.url)
	c.mustInitialize(a)
	s := a.serveStdio(floodConfig(a, "{}", ""))
	s.initialize("2025-06-18")
	var httpGot, stdioGot []string
	for _, id := range ids {
		_, _, text, err := c.postBody(a.ctx, callLine(id, "echo", `{"text":"x"}`), "2025-06-18")
		if err != nil {
			a.Fatalf("%v", err)
		}
		gotID, code := answerOf(text)
		httpGot = append(httpGot, fmt.Sprintf("%s -> %s (%d)", id, gotID, code))
		a.Check(gotID == id, "HTTP: id %s came back as %s", id, gotID)
		got := s.exchange(callLine(id, "echo", `{"text":"x"}`), id)
		gotID, code = answerOf(got)
		stdioGot = append(stdioGot, fmt.Sprintf("%s -> %s (%d)", id, gotID, code))
		a.Check(gotID == id, "stdio: id %s came back as %q", id, got)
	}
	_, _, text, _ := c.postBody(a.ctx, initLine("7", "2025-06-18"), "2025-06-18")
	_, httpCode := answerOf(text)
	_, stdioCode := answerOf(s.exchange(initLine("8", "2025-06-18"), "8"))
	a.Figure("over HTTP", "%s", strings.Join(httpGot, "; "))
	a.Figure("over stdio", "%s", strings.Join(stdioGot, "; "))
	a.Figure("a second initialize", "code %d over HTTP, %d over stdio (0 before the fix)", httpCode, stdioCode)
	a.Check(httpCode == -32600 && stdioCode == -32600, "a second initialize: codes %d and %d", httpCode, stdioCode)
	a.Result("each id came back byte for byte (refused with -32600: the go-sdk would have changed it); a second initialize is -32600")
}
