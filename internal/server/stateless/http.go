package stateless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Over Streamable HTTP, the edge sits in front of both eras' handlers.
// Takes tells a request of 2026-07-28 (its MCP-Protocol-Version header
// names 2026-07-28 or later, or its body's _meta names a protocol version)
// from the rest, which keep their sessions. ServeHTTP then answers it: GET
// and DELETE with 405, a POST once its _meta and headers pass the
// revision's checks (Mcp-Session-Id and Last-Event-ID are ignored, as the
// revision says). A retry whose requestState names another replica is
// forwarded there; a tools/call or resources/read of a tool or resource
// some plugin serves is the fast path's; the rest is the go-sdk's
// stateless handler's.

// maxBody is the go-sdk's limit on a POST's body; larger bodies are left
// to it, and it refuses them.
const maxBody = mcp.DefaultMaxRequestBodyBytes

// Header names of Streamable HTTP.
const (
	headerVersion = "Mcp-Protocol-Version"
	headerMethod  = "Mcp-Method"
	headerName    = "Mcp-Name"
	headerSession = "Mcp-Session-Id"
	headerLastID  = "Last-Event-Id"
)

// peeked is a request body the edge has read (httpcalls.ReadBody),
// with the message read from it: whoever reads the request next reads the
// body again from it.
type peeked struct {
	*httpcalls.Body
	body []byte
	err  error    // reading it
	msg  *message // nil if not read, or not a message
}

// peek reads r's body (up to one byte past maxBody), once, and leaves in
// r.Body a reader that replays it.
func peek(r *http.Request) *peeked {
	if p, ok := r.Body.(*peeked); ok {
		return p
	}
	p := &peeked{}
	p.body, p.err = httpcalls.ReadBody(r, maxBody)
	p.Body = r.Body.(*httpcalls.Body)
	r.Body = p
	return p
}

// Takes reports whether r is a request of 2026-07-28, for ServeHTTP. It
// may read a POST's body, which it leaves for the next reader.
func (e *Edge) Takes(r *http.Request) bool {
	if wire.AtLeast(r.Header.Get(headerVersion), Version) {
		return true
	}
	if r.Method != http.MethodPost {
		return false
	}
	p := peek(r)
	if p.err != nil || len(p.body) > maxBody || !bytes.Contains(p.body, []byte(wire.MetaProtocolVersion)) {
		return false
	}
	m, ok := readMessage(p.body)
	if !ok || len(m.meta) == 0 {
		return false
	}
	p.msg = m
	var fields map[string]json.RawMessage
	if json.Unmarshal(m.meta, &fields) != nil {
		return false
	}
	_, ok = fields[wire.MetaProtocolVersion]
	return ok
}

// ServeHTTP answers a request of 2026-07-28 (see Takes). The HTTP request
// must be tracked (Options.Requests): the go-sdk's handlers find its
// calls' ids there, and the fast path its scope.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// 2026-07-28 has no GET stream and no session to DELETE.
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, fmt.Sprintf("Method Not Allowed: MCP %s has no %s requests (no GET stream, no sessions); send each request as a POST", Version, r.Method), http.StatusMethodNotAllowed)
		return
	}
	// An answer may be a long event stream: proxies are told not to buffer
	// it (nginx reads this header).
	w.Header().Set("X-Accel-Buffering", "no")
	// What Streamable HTTP requires of any POST, checked as the go-sdk
	// does, with its words.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	if !acceptsBoth(r.Header.Values("Accept")) {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return
	}
	p := peek(r)
	if p.err != nil || len(p.body) > maxBody {
		e.sdkHTTP.ServeHTTP(w, r) // the go-sdk refuses it
		return
	}
	m := p.msg
	if m == nil {
		var ok bool
		if m, ok = readMessage(p.body); !ok {
			m = &message{refused: wire.RefuseID(p.body)} // an id too large to read (1e400)
			if m.refused == nil {
				writeError(w, http.StatusBadRequest, jsonrpc.ID{}, malformed(p.body))
				return
			}
		}
		p.msg = m
	}
	if m.refused != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(m.refused)
		return
	}
	if !m.id.IsValid() {
		// 2026-07-28 defines no notification from client to server over
		// Streamable HTTP: closing a request's stream cancels it.
		if m.method == "notifications/cancelled" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		writeError(w, http.StatusBadRequest, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("notification %q is not part of MCP %s over Streamable HTTP", m.method, Version)})
		return
	}
	rm, jerr := e.check(r.Header, m)
	if jerr != nil {
		writeError(w, http.StatusBadRequest, m.id, jerr)
		return
	}
	// The go-sdk reads the headers too: it is given only what 2026-07-28
	// defines, and Mcp-Name decoded (the go-sdk compares it undecoded).
	r.Header.Del(headerSession)
	r.Header.Del(headerLastID)
	if name, ok := headerValue(r.Header.Get(headerName)); ok && r.Header.Get(headerName) != "" {
		r.Header.Set(headerName, name)
	}
	hr, _ := e.requests.Lookup(r.Header)
	hr.Record([]httpcalls.CallRef{{Method: m.method, Key: m.key, ID: wire.IDString(m.id)}})

	if m.method == "subscriptions/listen" {
		e.serveListen(w, r, m)
		return
	}
	if taskMethod(m.method) && e.tasks != nil {
		e.serveTaskHTTP(w, r, p.body, m, rm)
		return
	}
	if m.state && mayNeedInput(m.method) && e.route(w, r, p.body, m) {
		return
	}
	if !e.fastOff && e.quick(m) {
		e.serveFast(w, r, m, rm)
		return
	}
	e.sdkHTTP.ServeHTTP(&sseGuard{ResponseWriter: w}, r)
}

// acceptsBoth reports whether Accept headers list both JSON and event
// streams, as the go-sdk reads them.
func acceptsBoth(values []string) bool {
	var jsonOK, eventsOK bool
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t, _, _ = strings.Cut(t, ";")
			switch strings.ToLower(strings.TrimSpace(t)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				eventsOK = true
			case "*/*":
				jsonOK, eventsOK = true, true
			}
		}
	}
	return jsonOK && eventsOK
}

// mayNeedInput reports whether a request of method may be answered
// input_required, and retried with requestState.
func mayNeedInput(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// malformed is the error for a POST whose body is not one JSON-RPC
// request or notification.
func malformed(body []byte) *jsonrpc.Error {
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("JSON-RPC batches are not part of MCP %s: send each request as a POST of its own", Version)}
	}
	if !json.Valid(body) {
		return &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "the body is not valid JSON"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the body is not a JSON-RPC request"}
}

// check checks a request's headers and _meta, in the order the revision
// gives them weight: the body is the source of truth (a missing protocol
// version is invalid params), the headers must mirror it (HeaderMismatch),
// then the version must be one Hangar serves this way and the rest of
// _meta well formed.
func (e *Edge) check(h http.Header, m *message) (*reqMeta, *jsonrpc.Error) {
	rm, scanned := scanMeta(m)
	if scanned {
		if jerr := checkVersionHeader(h, rm.version); jerr != nil {
			return nil, jerr
		}
	} else {
		meta, jerr := decodeMessageMeta(m)
		if jerr != nil {
			return nil, jerr
		}
		if v, ok := meta[wire.MetaProtocolVersion].(string); ok && v != "" {
			if jerr := checkVersionHeader(h, v); jerr != nil {
				return nil, jerr
			}
		}
		if rm, jerr = checkFields(meta); jerr != nil {
			return nil, jerr
		}
	}
	if err := checkStandard(h, m); err != nil {
		return nil, err
	}
	if m.method == "tools/call" {
		if bs := e.bindings(m.key); len(bs) > 0 {
			if err := checkParamHeaders(h, bs, m.args); err != nil {
				return nil, mismatch("%v", err)
			}
		}
	}
	return rm, nil
}

// checkVersionHeader checks that the MCP-Protocol-Version header names v,
// the protocol version of the request's _meta.
func checkVersionHeader(h http.Header, v string) *jsonrpc.Error {
	hv, sent := h[headerVersion]
	switch {
	case !sent:
		return mismatch("missing MCP-Protocol-Version header: a request of MCP %s names its protocol version in the header too", Version)
	case len(hv) != 1 || hv[0] != v:
		return mismatch("Header mismatch: MCP-Protocol-Version header value %q does not match body value %q", strings.Join(hv, ", "), v)
	}
	return nil
}

// checkStandard checks Mcp-Method (every request) and Mcp-Name (tools/call,
// prompts/get, resources/read) against the body.
func checkStandard(h http.Header, m *message) *jsonrpc.Error {
	hv, sent := h[headerMethod]
	switch {
	case !sent:
		return mismatch("missing Mcp-Method header: a request of MCP %s names its method in the header too", Version)
	case len(hv) != 1:
		return mismatch("Mcp-Method header is sent %d times", len(hv))
	case hv[0] != m.method:
		return mismatch("Header mismatch: Mcp-Method header value %q does not match body value %q", hv[0], m.method)
	}
	key := m.key
	switch {
	case taskMethod(m.method):
		key = taskID(m.params)
	case !mayNeedInput(m.method):
		return nil
	}
	hv, sent = h[headerName]
	switch {
	case !sent:
		return mismatch("missing Mcp-Name header: a %s request names its %s in the header too", m.method, nameOf(m.method))
	case len(hv) != 1:
		return mismatch("Mcp-Name header is sent %d times", len(hv))
	}
	name, ok := headerValue(hv[0])
	switch {
	case !ok:
		return mismatch("Mcp-Name header contains invalid characters or an invalid Base64 value")
	case name != key:
		return mismatch("Header mismatch: Mcp-Name header value %q does not match body value %q", hv[0], key)
	}
	return nil
}

func nameOf(method string) string {
	if method == "resources/read" {
		return "params.uri"
	}
	if taskMethod(method) {
		return "params.taskId"
	}
	return "params.name"
}

func mismatch(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf(format, args...)}
}

// route routes a retry: one whose requestState names another replica is
// forwarded there, and answered; route reports whether it answered. A
// state that fails authentication is refused here, before anything else
// reads it.
func (e *Edge) route(w http.ResponseWriter, r *http.Request, body []byte, m *message) bool {
	state, err := mrtr.RequestState(m.params)
	if err == nil && state == "" {
		return false
	}
	var replica string
	if err == nil {
		replica, err = e.m.Locate(state)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, m.id, rpcError(err))
		return true
	}
	if replica == e.m.Replica() || e.fwd == nil {
		return false // served here; elsewhere: Serve says where it is held
	}
	// One forward per state at a time, and none of a state used already:
	// retries that race or repeat open no connection to the replica.
	end, err := e.m.BeginForward(state)
	if err != nil {
		writeError(w, http.StatusBadRequest, m.id, rpcError(err))
		return true
	}
	id, _ := json.Marshal(m.id.Raw())
	used, _ := e.fwd.ForwardRetry(w, r, body, replica, id, state)
	end(used)
	return true
}

// serveFast serves a tools/call or resources/read on the fast path
// (serveQuick) and answers on an event stream as the go-sdk does.
func (e *Edge) serveFast(w http.ResponseWriter, r *http.Request, m *message, rm *reqMeta) {
	st := newEventStream(w)
	sink := &streamSink{emit: st.event, level: rm.logLevel}
	b, jerr, ended := e.serveQuick(r.Context(), nil, m, rm, sdkauth.TokenInfoFromContext(r.Context()), propagation.HeaderCarrier(r.Header), sink)
	switch {
	case ended:
		return // the client went away
	case jerr != nil:
		st.fail(m.id, jerr)
	default:
		st.final(b)
	}
}

// quick reports whether serveQuick serves m: a plain tools/call or
// resources/read of a tool or resource some plugin serves. The go-sdk
// answers the others (an unknown name with its own error).
func (e *Edge) quick(m *message) bool {
	switch {
	case !m.plain:
		return false
	case m.method == "tools/call":
		return e.core.HasTool(m.key)
	case m.method == "resources/read":
		return e.core.HasResource(m.key)
	}
	return false
}

// serveQuick serves a tools/call or resources/read of a tool or resource
// some plugin serves in front of the go-sdk, over either transport:
// through the core, which holds the call (a call that asks its client for
// input is answered input_required) and runs it with its own CallTool or
// ReadResource, with the request's span, its notifications to sink.
// It returns the answer encoded as the go-sdk writes it, or the error to
// answer with; ended reports that the request ended (its client went
// away, or cancelled it) while its call ran.
func (e *Edge) serveQuick(ctx context.Context, cancel context.CancelCauseFunc, m *message, rm *reqMeta, principal *sdkauth.TokenInfo, carrier propagation.TextMapCarrier, sink mrtr.Sink) (answer []byte, jerr *jsonrpc.Error, ended bool) {
	wire.ServedFast()
	hc := &core.HeldCall{
		Request:   core.Request{Principal: principal, ID: wire.IDString(m.id), Meta: rm.meta, MetaJSON: rm.metaJSON, Version: Version, Capabilities: rm.caps},
		Method:    m.method,
		Key:       m.key,
		Params:    m.params,
		Args:      m.args,
		Retry:     m.state,
		Bare:      m.bare(rm),
		Sink:      sink,
		ClientKey: clientKey(ctx),
		Cancel:    cancel,
	}
	target := ""
	if m.method == "tools/call" {
		target = m.key
	}
	ctx, span := e.core.StartRequest(ctx, m.method, target, rm.meta, carrier, "", hc.Request.ID)
	out, err := e.serve(ctx, hc, nil)
	var res mcp.Result
	if out != nil {
		res = out.Result
	}
	e.core.EndRequest(span, m.method, res, err)
	var b []byte
	switch {
	case err != nil:
		return nil, rpcError(err), errors.Is(err, mrtr.ErrRequestEnded)
	case out.Input != nil:
		b, err = e.encodeInput(m.id, out.Input)
	case out.Task != nil:
		b, err = e.encodeTask(m.id, out.Task, "task")
	default:
		b, err = e.encodeResult(m.id, out.Result)
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("encoding the result of %s: %v", m.method, err)}, false
	}
	return b, nil, false
}

// writeError answers with a JSON-RPC error as the go-sdk does.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(wire.EncodeError(id, e))
}

// errorStatus is the HTTP status the go-sdk answers a 2026-07-28 request
// with when its answer is only an error (0: the event stream's 200).
func errorStatus(e *jsonrpc.Error) int {
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, CodeUnsupportedProtocolVersion, CodeMissingRequiredClientCapability:
		return http.StatusBadRequest
	}
	return 0
}

// eventStream answers a fast-path request as the go-sdk answers a POST:
// an event stream with the call's notifications and its answer, or, when
// the answer is an error the revision gives an HTTP status and nothing was
// sent before it, that error as JSON with the status. The request's
// goroutine owns it: the call's notifications reach it through the
// Manager's queue (mrtr.Sink), so no lock is held while it writes to the
// client.
type eventStream struct {
	w  http.ResponseWriter
	rc http.ResponseController // a value: one allocation less a call

	started bool // an event was written
	done    bool // the answer was written
}

func newEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	return &eventStream{w: w, rc: *http.NewResponseController(w)}
}

var errStreamDone = errors.New("the request was answered: its stream takes nothing more")

// event writes a message event, as the go-sdk does (flushed).
func (s *eventStream) event(data []byte) error {
	if s.done {
		return errStreamDone
	}
	return s.write(data, true)
}

// write writes a message event, and flushes it if flush is set. The
// answer is not flushed: the handler returns once it is written, and the
// server then writes the response whole, in one write with its headers
// (with a Content-Length, if it is short) rather than a chunk now and the
// last chunk after the handler, two writes on each side.
func (s *eventStream) write(data []byte, flush bool) error {
	s.started = true
	b := make([]byte, 0, len(data)+len("event: message\ndata: \n\n"))
	b = append(append(append(b, "event: message\ndata: "...), data...), "\n\n"...)
	_, err := s.w.Write(b)
	if flush {
		s.rc.Flush()
	}
	return err
}

// ping writes an SSE comment, which keeps a quiet stream open.
func (s *eventStream) ping() error {
	if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

// final writes the answer, the stream's last event: the handler returns
// once it is written (see write).
func (s *eventStream) final(data []byte) {
	if !s.done {
		s.done = true
		s.write(data, false)
	}
}

// fail writes an error answer, the stream's last event, as final does.
func (s *eventStream) fail(id jsonrpc.ID, e *jsonrpc.Error) {
	if s.done {
		return
	}
	s.done = true
	if status := errorStatus(e); status != 0 && !s.started {
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(status)
		s.w.Write(wire.EncodeError(id, e))
		return
	}
	s.write(wire.EncodeError(id, e), false)
}

// sseGuard is the go-sdk's writer of a 2026-07-28 answer. The go-sdk
// answers an error the revision gives an HTTP status (invalid params,
// method not found, missing capability, unsupported version) as JSON with
// that status, even after it has written events of the request's stream:
// the guard then writes the error as one more event, as the fast path
// does, instead of a second status and bare JSON in the stream.
type sseGuard struct {
	http.ResponseWriter
	wrote bool // the status is written
	frame bool // the next Write is the error to frame as an event
}

func (g *sseGuard) WriteHeader(code int) {
	if g.wrote {
		g.frame = true
		return
	}
	g.wrote = true
	g.ResponseWriter.WriteHeader(code)
}

func (g *sseGuard) Write(b []byte) (int, error) {
	if g.frame {
		g.frame = false
		ev := append(append([]byte("event: message\ndata: "), b...), "\n\n"...)
		if _, err := g.ResponseWriter.Write(ev); err != nil {
			return 0, err
		}
		http.NewResponseController(g.ResponseWriter).Flush()
		return len(b), nil
	}
	g.wrote = true
	return g.ResponseWriter.Write(b)
}

func (g *sseGuard) Flush() {
	g.wrote = true
	http.NewResponseController(g.ResponseWriter).Flush()
}

func (g *sseGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }
