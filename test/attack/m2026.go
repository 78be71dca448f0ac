package main

// The tools of the MCP 2026-07-28 attacks (a_mcp2026.go): a raw client
// whose every request stands alone and can lose or contradict any part
// of its _meta and headers, the plugins' execution counts from /metrics,
// and a well-behaved 2026 client that runs beside each attack.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil/mcpschema"
)

const v2026 = mcpschema.Version

// c26 is a raw client of MCP 2026-07-28.
type c26 struct {
	a     *A
	url   string
	token string
	hc    *http.Client
	seq   atomic.Int64
}

func (a *A) raw26(url, token string) *c26 {
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	a.Cleanup(tr.CloseIdleConnections)
	return &c26{a: a, url: url, token: token, hc: &http.Client{Transport: tr}}
}

// r26 is a request: its method and params (without _meta), and what to
// do to the _meta and the headers a well-behaved client would send.
type r26 struct {
	method string
	params map[string]any
	// meta replaces the _meta a client sends (protocol version 2026-07-28,
	// every client capability, clientInfo); with noMeta, none is sent.
	meta   map[string]any
	noMeta bool
	// header sets (or, with "", removes) headers after the defaults
	// (MCP-Protocol-Version, Mcp-Method, Mcp-Name, the token).
	header map[string]string
	// httpMethod replaces POST.
	httpMethod string
	// ext says the request is the tasks extension's (a_tasks.go): its
	// results (a task, tasks/*) are the extension's, which the
	// revision's schema does not define; its errors are checked still.
	ext bool
}

// defaultMeta is the _meta of a well-behaved client's request.
func defaultMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    v2026,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "attacker", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "sampling": map[string]any{}, "roots": map[string]any{}},
	}
}

// a26 is an answer.
type a26 struct {
	status int
	header http.Header
	raw    []byte         // the JSON-RPC response
	msg    map[string]any // decoded
	notes  []map[string]any
	body   string // a body that is not JSON-RPC
	err    error
}

func (c *c26) do(r r26) a26 {
	body := map[string]any{"jsonrpc": "2.0", "id": c.seq.Add(1), "method": r.method}
	params := maps.Clone(r.params)
	if params == nil {
		params = map[string]any{}
	}
	switch {
	case r.noMeta:
	case r.meta != nil:
		params["_meta"] = r.meta
	default:
		params["_meta"] = defaultMeta()
	}
	body["params"] = params
	b, _ := json.Marshal(body)
	hm := r.httpMethod
	if hm == "" {
		hm = http.MethodPost
	}
	var rd io.Reader
	if hm == http.MethodPost {
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.a.ctx, hm, c.url, rd)
	if err != nil {
		return a26{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v2026)
	req.Header.Set("Mcp-Method", r.method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if uri, ok := params["uri"].(string); ok {
		req.Header.Set("Mcp-Name", uri)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return a26{err: err}
	}
	defer resp.Body.Close()
	ans := a26{status: resp.StatusCode, header: resp.Header}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		ans.body = string(rb)
		return ans
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			data = line
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &m); err != nil {
			ans.err = fmt.Errorf("an answer that is not JSON: %q", line)
			return ans
		}
		if _, isNote := m["method"]; isNote {
			ans.notes = append(ans.notes, m)
			continue
		}
		ans.raw, ans.msg = []byte(strings.TrimSpace(data)), m
		// Every answer is valid at 2026-07-28 (and an error has its
		// definition's shape).
		if _, isResult := m["result"]; r.ext && isResult {
			return ans
		}
		if _, err := mcpschema.Check(r.method, ans.raw); err != nil {
			ans.err = fmt.Errorf("the answer is not valid at %s: %v", v2026, err)
		}
		return ans
	}
	ans.err = fmt.Errorf("status %d: the stream ended without an answer", resp.StatusCode)
	return ans
}

// code is the answer's JSON-RPC error code, 0 for a result.
func (ans a26) code() int {
	e, _ := ans.msg["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func (ans a26) message() string {
	e, _ := ans.msg["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func (ans a26) result() map[string]any {
	r, _ := ans.msg["result"].(map[string]any)
	return r
}

func (ans a26) resultType() string {
	t, _ := ans.result()["resultType"].(string)
	return t
}

func (ans a26) state() string {
	s, _ := ans.result()["requestState"].(string)
	return s
}

// keys is the keys of an input_required answer's inputRequests.
func (ans a26) keys() []string {
	ir, _ := ans.result()["inputRequests"].(map[string]any)
	var out []string
	for k := range ir {
		out = append(out, k)
	}
	return out
}

// text is the text of a result's first content block.
func (ans a26) text() string {
	content, _ := ans.result()["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	t, _ := c["text"].(string)
	return t
}

func (ans a26) String() string {
	switch {
	case ans.err != nil:
		return fmt.Sprintf("HTTP %d, %v", ans.status, ans.err)
	case ans.msg == nil:
		return fmt.Sprintf("HTTP %d %q", ans.status, firstN(ans.body, 200))
	case ans.code() != 0:
		return fmt.Sprintf("HTTP %d, %d %q", ans.status, ans.code(), ans.message())
	}
	return fmt.Sprintf("HTTP %d, %s", ans.status, firstN(string(ans.raw), 200))
}

// refused checks that ans is the JSON-RPC error code, with HTTP status
// 400 (or status for another), whose message contains each of want.
func (a *A) refused(what string, ans a26, code int, want ...string) bool {
	ok := ans.err == nil && ans.code() == code && ans.status == http.StatusBadRequest
	for _, w := range want {
		ok = ok && strings.Contains(ans.message(), w)
	}
	return a.Check(ok, "%s: %v; want HTTP 400 and error %d with %q", what, ans, code, want)
}

// callArgs is the params of a tools/call.
func callArgs(name string, args map[string]any) map[string]any {
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	return p
}

// accept is an elicitation's answer.
func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// parked is a call of the attacked plugin's ask tool waiting for its
// retry.
type parked struct {
	args     map[string]any
	state    string
	key      string // of its one input request
	question string // the elicitation's message: "MESSAGE NONCE"
}

// park calls the ask tool with message and returns the call, parked.
func (c *c26) park(message string) *parked {
	args := map[string]any{"message": message}
	ans := c.do(r26{method: "tools/call", params: callArgs("ask", args)})
	if ans.err != nil || ans.resultType() != "input_required" || ans.state() == "" || len(ans.keys()) != 1 {
		c.a.Fatalf("ask: %v; want an input_required result with one input request and a requestState", ans)
	}
	p := &parked{args: args, state: ans.state(), key: ans.keys()[0]}
	p.question = ans.question(p.key)
	return p
}

// question is the message of an input_required answer's elicitation key.
func (ans a26) question(key string) string {
	ir, _ := ans.result()["inputRequests"].(map[string]any)
	r, _ := ir[key].(map[string]any)
	params, _ := r["params"].(map[string]any)
	m, _ := params["message"].(string)
	return m
}

// retry is a retry of the parked call with state and the answers.
func (p *parked) retry(state string, responses map[string]any) r26 {
	params := callArgs("ask", p.args)
	params["requestState"] = state
	if responses != nil {
		params["inputResponses"] = responses
	}
	return r26{method: "tools/call", params: params}
}

// answer is the retry a well-behaved client sends: the state and name.
func (p *parked) answer(name string) r26 {
	return p.retry(p.state, map[string]any{p.key: accept(map[string]any{"name": name})})
}

// askAnswer is what the ask tool answers.
type askAnswer struct {
	Nonce   string         `json:"nonce"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

// completed checks that ans completes the parked call with name, in the
// execution that asked (the nonce of its question).
func (p *parked) completed(a *A, what string, ans a26, name string) bool {
	var out askAnswer
	ok := ans.err == nil && ans.resultType() == "complete" && json.Unmarshal([]byte(ans.text()), &out) == nil &&
		out.Content["name"] == name && out.Nonce != "" && strings.HasSuffix(p.question, " "+out.Nonce)
	return a.Check(ok, "%s: %v; want the parked call (%q) completed with name %q", what, ans, p.question, name)
}

// finish sends the well-behaved retry and checks the call completes.
func (c *c26) finish(p *parked, name string) {
	p.completed(c.a, "the legitimate retry", c.do(p.answer(name)), name)
}

// metricsRE finds the operations listener in a log.
var metricsRE = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/metrics`)

// metric sums the samples of a metric whose labels contain each of
// labels (`plugin="mrtr"`), from the server's /metrics.
func (a *A) metric(p *proc, name string, labels ...string) float64 {
	sum, _ := metricSum(a.opsMetrics(p), name, labels...)
	return sum
}

// opsMetrics returns the text of /metrics on the server's operations
// listener (metrics.addr), which its log names.
func (a *A) opsMetrics(p *proc) string {
	m := metricsRE.FindStringSubmatch(p.log.String())
	if m == nil {
		a.Fatalf("no metrics listener in the log")
	}
	resp, err := http.Get(m[1] + "/metrics")
	if err != nil {
		a.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricSum sums the samples in the metrics text of the metric name whose
// labels contain each of labels, and reports whether there was any.
func metricSum(text, name string, labels ...string) (sum float64, found bool) {
	for line := range strings.Lines(text) {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// seen is what the attacked plugin (mrtr) has seen, from /metrics: its
// calls that ended (hangar_plugin_calls_total counts a call when it
// ends), the questions its calls asked (input_required answers) and the
// answers delivered into its parked calls. The last two are counted for
// every plugin: the bystander's share is taken out.
type seen struct{ ended, asked, answered float64 }

func (s seen) String() string {
	return fmt.Sprintf("%.0f calls ended, %.0f questions asked, %.0f answers delivered", s.ended, s.asked, s.answered)
}

// seen reads what the attacked plugin has seen, the bystander paused.
func (a *A) seen(p *proc, by *bystander) seen {
	by.gate.Lock()
	defer by.gate.Unlock()
	mrtr := by.mrtr.Load()
	return seen{
		ended:    a.metric(p, "hangar_plugin_calls_total", `plugin="mrtr"`),
		asked:    a.metric(p, "hangar_mrtr_input_requests_total") - float64(mrtr),
		answered: a.metric(p, "hangar_mrtr_resumed_total") - float64(mrtr),
	}
}

// nothingRan checks that the attacked plugin saw nothing since before.
func (a *A) nothingRan(p *proc, by *bystander, before seen, what string) {
	after := a.seen(p, by)
	d := seen{after.ended - before.ended, after.asked - before.asked, after.answered - before.answered}
	a.Figure("the attacked plugin saw", "%v during %s", d, what)
	a.Check(d == seen{}, "%s: the attacked plugin saw %v", what, d)
}

// bystander is a well-behaved 2026 client (the go-sdk's) that calls, in a
// loop, a tool that elicits (through MRTR, on a plugin of its own) and a
// plain one, while an attack runs.
type bystander struct {
	a        *A
	stop     context.CancelFunc
	done     chan struct{}
	gate     sync.Mutex // held for each round of calls; seen holds it to pause the bystander
	ok, fail atomic.Int64
	mrtr     atomic.Int64 // its calls through MRTR that completed
	mu       sync.Mutex
	errs     []string
}

func (a *A) bystander(url, token string) *bystander {
	ctx, cancel := context.WithCancel(a.ctx)
	b := &bystander{a: a, stop: cancel, done: make(chan struct{})}
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token, http.DefaultTransport}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bystander", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "bystander"}}, nil
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		a.Fatalf("the bystander's connection: %v", err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != v2026 {
		a.Fatalf("the bystander negotiated %s, want %s", v, v2026)
	}
	go func() {
		defer close(b.done)
		defer cs.Close()
		for ctx.Err() == nil {
			b.gate.Lock()
			for _, call := range []struct {
				tool string
				args map[string]any
				want string
			}{{"g_ask", map[string]any{"message": "?"}, `"name":"bystander"`}, {"echo", map[string]any{"text": "by"}, "by"}} {
				cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
				text, err := callText(cctx, cs, call.tool, call.args)
				ccancel()
				switch {
				case ctx.Err() != nil:
				case err != nil || !strings.Contains(text, call.want):
					b.fail.Add(1)
					b.mu.Lock()
					b.errs = append(b.errs, fmt.Sprintf("%s: %q %v", call.tool, text, err))
					b.mu.Unlock()
				default:
					b.ok.Add(1)
					if call.tool == "g_ask" {
						b.mrtr.Add(1)
					}
				}
			}
			b.gate.Unlock()
		}
	}()
	a.Cleanup(func() { cancel(); <-b.done })
	return b
}

// finish stops the bystander, once it has made a few rounds, and checks
// that it lost nothing.
func (b *bystander) finish() {
	b.a.Until(time.Minute, "the well-behaved client's first rounds", func() bool { return b.ok.Load()+b.fail.Load() >= 4 })
	b.stop()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	b.a.Figure("a well-behaved 2026 client meanwhile", "%d calls (half through MRTR) succeeded, %d failed", b.ok.Load(), b.fail.Load())
	b.a.Check(b.fail.Load() == 0 && b.ok.Load() > 0, "the well-behaved client: %d ok, %d failed: %v", b.ok.Load(), b.fail.Load(), b.errs)
}

// tamper returns state with the character at i (from the end when
// negative) changed to another, whose six bits all differ.
func tamper(state string, i int) string {
	b := []byte(state)
	if i < 0 {
		i += len(b)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if v := strings.IndexByte(alphabet, b[i]); v >= 0 {
		b[i] = alphabet[v^0x3f]
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// paddingBits returns state with the unused low bits of its last
// character set (a state is unpadded base64url: when its length is not a
// multiple of 4, its last character encodes 2 or 4 bits that belong to no
// byte): a different text for the same bytes, or "" when there are none.
func paddingBits(state string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	unused := map[int]int{2: 4, 3: 2}[len(state)%4]
	v := strings.IndexByte(alphabet, state[len(state)-1])
	if unused == 0 || v < 0 {
		return ""
	}
	return state[:len(state)-1] + string(alphabet[v^1]) // bit 0 is one of them
}

// b64 is a header value in the Base64 sentinel form.
func b64(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
