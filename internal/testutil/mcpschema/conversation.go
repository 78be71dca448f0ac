package mcpschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A Conversation follows the messages of one client's connection to a
// server and validates, as Validate does, every message the server sends
// at 2026-07-28, with the rules that span messages:
//
//   - notifications/message only for a request whose _meta carries
//     io.modelcontextprotocol/logLevel; notifications/progress only with
//     the progressToken of a request in progress;
//   - on a subscriptions/listen stream, notifications/subscriptions/
//     acknowledged first, every notification tagged with the
//     subscription's id, and only the types the request asked for;
//     list-changed and resource-updated notifications nowhere else;
//   - over HTTP (RoundTripper): a response answers the request of its
//     exchange, the status codes the transport names for its errors
//     (400 for -32020, -32021 and -32022, 404 for -32601), no
//     Mcp-Session-Id, no SSE event ids.
//
// Messages of a connection that speaks an earlier revision (a request
// whose _meta, or HTTP header, does not name 2026-07-28, such as
// initialize) are counted (Legacy), not validated.
//
// A Conversation reports what is wrong with t.Errorf as it sees it, until
// the end of the test (a message read later is ignored). It is safe for
// concurrent use.
type Conversation struct {
	t testing.TB

	mu       sync.Mutex
	requests map[string]*request // stdio: the requests in progress, by id
	counts   map[string]int
	legacy   int
	errs     []string
	done     bool
}

// request is what a Conversation knows of a client's request.
type request struct {
	id, method    string
	modern        bool
	logLevel      bool
	progressToken string // as JSON, "" without one
	listen        *filter
	acked         bool
}

// filter is a subscriptions/listen request's notifications.
type filter struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
}

// NewConversation returns a Conversation reporting to t.
func NewConversation(t testing.TB) *Conversation {
	c := &Conversation{t: t, requests: map[string]*request{}, counts: map[string]int{}}
	t.Cleanup(func() {
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
	})
	return c
}

// Counts returns how many valid messages of each kind (Message.Label) the
// server sent.
func (c *Conversation) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Total returns how many messages of the server were validated.
func (c *Conversation) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Legacy returns how many exchanges or messages spoke an earlier revision
// and were not validated.
func (c *Conversation) Legacy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legacy
}

// Errors returns what was found wrong so far.
func (c *Conversation) Errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

// fail records and reports a problem; c.mu is held.
func (c *Conversation) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.errs = append(c.errs, msg)
	if !c.done {
		c.t.Errorf("mcpschema: %s", msg)
	}
}

// parseRequest reads a message a client sent; nil for what is not a
// request (a notification, a response, not JSON).
func parseRequest(msg []byte) *request {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta          map[string]json.RawMessage `json:"_meta"`
			Notifications *filter                    `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == "" || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	r := &request{id: compact(m.ID), method: m.Method}
	var version string
	json.Unmarshal(m.Params.Meta["io.modelcontextprotocol/protocolVersion"], &version)
	r.modern = version == Version
	_, r.logLevel = m.Params.Meta["io.modelcontextprotocol/logLevel"]
	if tok, ok := m.Params.Meta["progressToken"]; ok {
		r.progressToken = compact(tok)
	}
	if m.Method == "subscriptions/listen" {
		r.listen = m.Params.Notifications
		if r.listen == nil {
			r.listen = &filter{}
		}
	}
	return r
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// Client records a message the client sent on a connection that carries
// one message a line (stdio).
func (c *Conversation) Client(msg []byte) {
	r := parseRequest(msg)
	if r == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[r.id] = r
}

// Server validates a message the server sent on a connection that carries
// one message a line (stdio).
func (c *Conversation) Server(msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.server(msg, nil)
}

// exchange is the HTTP request a response stream answers.
type exchange struct {
	req    *request
	status int
	sse    bool
}

// server validates msg; ex is the HTTP exchange it came in, nil on stdio.
// c.mu is held.
func (c *Conversation) server(msg []byte, ex *exchange) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return
	}
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(msg, &probe)
	id := ""
	if len(probe.ID) > 0 {
		id = compact(probe.ID)
	}
	var req *request
	switch {
	case ex != nil:
		req = ex.req
		if probe.Method == "" && req != nil && id != req.id && id != "null" {
			c.fail("%s: a response with id %s in the exchange of request %s", clip(msg), id, req.id)
		}
	case probe.Method == "" && id != "":
		req = c.requests[id]
	}
	if req != nil && !req.modern || ex == nil && req == nil && c.anyLegacy() {
		c.legacy++
		return
	}
	method := ""
	if probe.Method == "" && req != nil {
		method = req.method
	}
	m, err := validate(method, msg)
	if err != nil {
		c.fail("%s", err)
		return
	}
	c.counts[m.Label()]++
	switch m.Kind {
	case "result", "error":
		if ex != nil {
			c.checkStatus(m, ex)
		} else if req != nil {
			delete(c.requests, req.id)
		}
		if req != nil && req.listen != nil && m.Kind == "result" {
			if sub := m.Meta["io.modelcontextprotocol/subscriptionId"]; jsonText(sub) != req.id {
				c.fail("%s: the end of subscription %s carries subscriptionId %v", clip(msg), req.id, sub)
			}
		}
	case "notification":
		c.checkNotification(m, msg, ex)
	}
}

// anyLegacy reports whether a request in progress speaks an earlier
// revision: then the connection does. c.mu is held.
func (c *Conversation) anyLegacy() bool {
	for _, r := range c.requests {
		if !r.modern {
			return true
		}
	}
	return false
}

func jsonText(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// checkStatus checks the HTTP status of a response. c.mu is held.
func (c *Conversation) checkStatus(m *Message, ex *exchange) {
	want := 0
	switch {
	case m.Kind == "result" && !ex.sse:
		want = http.StatusOK
	case m.Kind == "error" && !ex.sse:
		switch m.Code {
		case -32020, -32021, -32022:
			want = http.StatusBadRequest
		case -32601:
			want = http.StatusNotFound
		}
	case m.Kind == "error":
		switch m.Code {
		case -32020, -32022, -32601:
			c.fail("error %d on an event stream: the transport sends it with an HTTP status (%s)", m.Code, m.Label())
		}
	}
	if want != 0 && ex.status != want {
		c.fail("%s answered with HTTP status %d, want %d", m.Label(), ex.status, want)
	}
}

// checkNotification applies the rules of notifications. c.mu is held.
func (c *Conversation) checkNotification(m *Message, msg []byte, ex *exchange) {
	sub, tagged := m.Meta["io.modelcontextprotocol/subscriptionId"]
	params, _ := m.Value["params"].(map[string]any)
	var scope *request // the request the notification belongs to
	switch {
	case tagged && ex != nil:
		scope = ex.req
		if scope == nil || scope.listen == nil || jsonText(sub) != scope.id {
			c.fail("%s: tagged with subscription %s on the stream of another request", clip(msg), jsonText(sub))
			return
		}
	case tagged:
		scope = c.requests[jsonText(sub)]
		if scope == nil || scope.listen == nil {
			c.fail("%s: tagged with subscription %s, which is not open", clip(msg), jsonText(sub))
			return
		}
	}
	switch m.Method {
	case "notifications/subscriptions/acknowledged":
		if scope == nil {
			c.fail("%s: an acknowledgment without the subscription's id", clip(msg))
		} else if scope.acked {
			c.fail("%s: subscription %s acknowledged twice", clip(msg), scope.id)
		} else {
			scope.acked = true
		}
		return
	case "notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated":
		if scope == nil {
			c.fail("%s: a change notification outside a subscriptions/listen stream (or without its subscriptionId)", clip(msg))
			return
		}
		if !scope.acked {
			c.fail("%s: a notification on subscription %s before its acknowledgment", clip(msg), scope.id)
		}
		f := scope.listen
		asked := map[string]bool{
			"notifications/tools/list_changed":     f.ToolsListChanged,
			"notifications/prompts/list_changed":   f.PromptsListChanged,
			"notifications/resources/list_changed": f.ResourcesListChanged,
		}[m.Method]
		if m.Method == "notifications/resources/updated" {
			uri, _ := params["uri"].(string)
			asked = slices.Contains(f.ResourceSubscriptions, uri)
		}
		if !asked {
			c.fail("%s: subscription %s did not ask for it", clip(msg), scope.id)
		}
		return
	case "notifications/cancelled":
		// Only on stdio, to end a subscription.
		rid := jsonText(params["requestId"])
		if r := c.requests[rid]; ex != nil || r == nil || r.listen == nil {
			c.fail("%s: a server cancels only a subscriptions/listen stream, on stdio", clip(msg))
		} else {
			delete(c.requests, rid)
		}
		return
	}
	// Request-scoped: progress and log messages.
	if scope != nil {
		c.fail("%s: a request-scoped notification on subscription %s", clip(msg), scope.id)
		return
	}
	var candidates []*request
	if ex != nil {
		if ex.req != nil {
			candidates = []*request{ex.req}
		}
	} else {
		for _, r := range c.requests {
			candidates = append(candidates, r)
		}
	}
	switch m.Method {
	case "notifications/message":
		if !slices.ContainsFunc(candidates, func(r *request) bool { return r.logLevel && r.listen == nil }) {
			c.fail("%s: a log message for a request without io.modelcontextprotocol/logLevel", clip(msg))
		}
	case "notifications/progress":
		tok := jsonText(params["progressToken"])
		if !slices.ContainsFunc(candidates, func(r *request) bool { return r.progressToken == tok && r.listen == nil }) {
			c.fail("%s: progress with token %s, which no request in progress sent", clip(msg), tok)
		}
	}
}

// Stdio wraps a server process's stdin and stdout: what the client writes
// to the returned writer and what it reads from the returned reader pass
// through unchanged, and each line is recorded (Client) or validated
// (Server).
func (c *Conversation) Stdio(stdin io.WriteCloser, stdout io.ReadCloser) (io.WriteCloser, io.ReadCloser) {
	return &lineTap{WriteCloser: stdin, line: c.Client}, &readTap{ReadCloser: stdout, line: c.Server}
}

type lineTap struct {
	io.WriteCloser
	mu   sync.Mutex
	buf  []byte
	line func([]byte)
}

func (w *lineTap) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = splitLines(append(w.buf, p...), w.line)
	w.mu.Unlock()
	return w.WriteCloser.Write(p)
}

type readTap struct {
	io.ReadCloser
	buf  []byte
	line func([]byte)
}

func (r *readTap) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.buf = splitLines(append(r.buf, p[:n]...), r.line)
	return n, err
}

// splitLines calls line for each complete line of buf and returns the
// rest.
func splitLines(buf []byte, line func([]byte)) []byte {
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		line(bytes.TrimSuffix(buf[:i], []byte("\r")))
		buf = buf[i+1:]
	}
}

// RoundTripper returns an http.RoundTripper that sends requests with base
// (http.DefaultTransport when nil) and validates the answers to the POSTs
// that speak 2026-07-28 (by their MCP-Protocol-Version header or their
// body's _meta), JSON bodies and event streams alike; the client reads the
// answers unchanged.
func (c *Conversation) RoundTripper(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &roundTripper{c: c, base: base}
}

type roundTripper struct {
	c    *Conversation
	base http.RoundTripper
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	r := parseRequest(body)
	var meta struct {
		Params struct {
			Meta struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	json.Unmarshal(body, &meta)
	c := rt.c
	if req.Header.Get("Mcp-Protocol-Version") != Version && meta.Params.Meta.Version != Version {
		c.mu.Lock()
		c.legacy++
		c.mu.Unlock()
		return resp, nil
	}
	if r != nil {
		r.modern = true // the header names 2026-07-28: validate its answer as such
	}
	ex := &exchange{req: r, status: resp.StatusCode}
	c.mu.Lock()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.fail("a %s answer carries Mcp-Session-Id %q", Version, sid)
	}
	c.mu.Unlock()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "application/json":
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if err != nil {
			return resp, nil // the client reads the short body and fails
		}
		c.mu.Lock()
		c.server(b, ex)
		c.mu.Unlock()
	case mt == "text/event-stream":
		ex.sse = true
		resp.Body = &sseTap{ReadCloser: resp.Body, c: c, ex: ex}
	case r == nil && resp.StatusCode == http.StatusAccepted:
	case resp.StatusCode == http.StatusOK:
		c.mu.Lock()
		c.fail("a %s answer with status 200 and Content-Type %q", Version, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, nil
}

// sseTap validates the events of an event stream as the client reads
// them.
type sseTap struct {
	io.ReadCloser
	c    *Conversation
	ex   *exchange
	buf  []byte
	data []byte
	has  bool
}

func (s *sseTap) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.buf = splitLines(append(s.buf, p[:n]...), s.line)
	return n, err
}

func (s *sseTap) line(l []byte) {
	if len(l) == 0 {
		if s.has {
			s.c.mu.Lock()
			s.c.server(bytes.TrimSuffix(s.data, []byte("\n")), s.ex)
			s.c.mu.Unlock()
		}
		s.data, s.has = s.data[:0], false
		return
	}
	if l[0] == ':' {
		return // a comment: a keep-alive
	}
	field, value, _ := strings.Cut(string(l), ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "data":
		s.data = append(append(s.data, value...), '\n')
		s.has = true
	case "id":
		s.c.mu.Lock()
		s.c.fail("an SSE event id (%q) on a %s stream: the revision removed them", value, Version)
		s.c.mu.Unlock()
	}
}
