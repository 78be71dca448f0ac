package fastpath

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Core is what the fast path needs of the dispatch core: lookups, the two
// requests it serves, and their observation. *core.Core implements it.
type Core interface {
	HasTool(name string) bool
	HasResource(uri string) bool
	CallTool(ctx context.Context, rq core.Request, name string, args json.RawMessage) (*mcp.CallToolResult, error)
	ReadResource(ctx context.Context, rq core.Request, uri string) (*mcp.ReadResourceResult, error)
	RootsListChanged(ctx context.Context, rq core.Request)
	StartRequest(ctx context.Context, method, target string, meta map[string]any, carrier propagation.TextMapCarrier, session, id string) (context.Context, trace.Span)
	EndRequest(span trace.Span, method string, res mcp.Result, err error)
}

// Options configure a Path. A nil *Options means defaults.
type Options struct {
	// Logger receives the diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// Disabled leaves every request to the go-sdk: the fast path only
	// passes the bytes on (and keeps the sessions' idle timeout over HTTP).
	Disabled bool
	// Stateless, if set, is the edge of MCP 2026-07-28 over stdio: it sees
	// each line first (stdio.go).
	Stateless StatelessLines
	// Requests keeps the HTTP requests in progress that carry calls (the
	// HTTP layer in front of the fast path tracks them): a call the fast
	// path serves over HTTP is ended with its request, and the go-sdk's
	// handlers find there the ids of the calls it leaves them. Required:
	// the go-sdk's sessions must be given the same Tracker.
	Requests *httpcalls.Tracker
}

// Sessions are what the fast path needs of the go-sdk's sessions it sits
// in front of (package sessions; the composition root, package server,
// gives them): the sessions themselves, and the state of each, which
// describes its calls for the core as the go-sdk's handlers do.
type Sessions interface {
	// Connect connects a session over t.
	Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error)
	// Session returns the session with the given ID, or nil.
	Session(id string) *mcp.ServerSession
	// State returns the state of ss, creating it on first use.
	State(ss *mcp.ServerSession) SessionState
}

// SessionState is the state of one session, as the fast path uses it.
type SessionState interface {
	// Request describes, for the core, a request of the session with the
	// given JSON-RPC id, _meta and principal, carried by an HTTP request
	// whose scope is carrier (nil if none).
	Request(id string, meta mcp.Meta, principal *auth.TokenInfo, carrier *core.Scope) core.Request
	// Notification describes, for the core, a notification of the
	// session (notifications/roots/list_changed).
	Notification(meta mcp.Meta, principal *auth.TokenInfo) core.Request
}

// StatelessLines is the edge of MCP 2026-07-28 over a stream (package
// stateless), whose requests have no session: the fast path shows it each
// line before it reads the line itself.
type StatelessLines interface {
	// Line looks at a line, body (without its line end); fast reports
	// whether the fast path may serve it. A zero wire.LineClaim leaves the
	// line to the fast path and the go-sdk. body is the stream's buffer,
	// which its next read reuses: a Serve that runs later reads a copy.
	Line(body []byte, fast bool) wire.LineClaim
}

// Path is the fast path in front of the go-sdk's sessions of one core.
type Path struct {
	core      Core
	sdk       Sessions
	requests  *httpcalls.Tracker
	log       *slog.Logger
	disabled  bool
	stateless StatelessLines // nil: none
}

// New returns the fast path of c in front of sdk, whose go-sdk server must
// have Send as its innermost sending middleware (package sessions:
// Options.Send). It fails if Options.Requests is nil.
func New(c Core, sdk Sessions, opts *Options) (*Path, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Requests == nil {
		return nil, errors.New("fastpath: Options.Requests is required: the Tracker of the HTTP requests that carry calls, which the go-sdk's sessions are given too")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Path{core: c, sdk: sdk, requests: o.Requests, log: o.Logger, disabled: o.Disabled, stateless: o.Stateless}, nil
}

// fastSession is the fast path's state for one MCP session.
type fastSession struct {
	p  *Path
	ss atomic.Pointer[mcp.ServerSession] // nil until the go-sdk connected it
	st atomic.Pointer[sessionState]      // the session's state, once a call needed it

	mu      sync.Mutex
	calls   map[jsonrpc.ID]context.CancelCauseFunc // the fast path's calls in progress
	open    map[jsonrpc.ID]bool                    // (stdio) those that run until cancelled
	sdk     map[jsonrpc.ID]int                     // requests given to the go-sdk, not yet answered
	pending map[jsonrpc.ID]chan *jsonrpc.Response  // (HTTP) server requests waiting for the client
	seq     int64                                  // (HTTP) the id of the last server request (serverRequestStart)
	running sync.WaitGroup                         // the fast path's calls in progress
	closing bool                                   // (stdio) the stream closes: no more calls
}

func newFastSession(p *Path) *fastSession {
	return &fastSession{
		p:       p,
		calls:   map[jsonrpc.ID]context.CancelCauseFunc{},
		sdk:     map[jsonrpc.ID]int{},
		pending: map[jsonrpc.ID]chan *jsonrpc.Response{},
	}
}

// ready returns the session if the fast path may serve its calls: it is
// initialized, at a protocol version before 2026-07-28 (whose per-request
// metadata and result types the go-sdk handles).
func (fs *fastSession) ready() *mcp.ServerSession {
	ss := fs.ss.Load()
	if ss == nil || fs.p.disabled {
		return nil
	}
	p := ss.InitializeParams()
	if p == nil || wire.AtLeast(p.ProtocolVersion, core.Version20260728) {
		return nil
	}
	return ss
}

// takes reports whether the fast path serves m: a call to a tool or a
// resource some plugin serves. Unknown names and URIs are the go-sdk's to
// refuse.
func (p *Path) takes(m *message) bool {
	if m.kind != msgCall {
		return false
	}
	if m.method == "tools/call" {
		return p.core.HasTool(m.key)
	}
	return p.core.HasResource(m.key)
}

// start registers a call the fast path takes, and returns its context and
// the function that cancels it (notifications/cancelled, and the core:
// core.Request.Cancel), or false if a request
// with its id is in progress (on either path). The caller calls release
// when the call is answered and then running.Done.
func (fs *fastSession) start(ctx context.Context, id jsonrpc.ID) (context.Context, context.CancelCauseFunc, bool) {
	return fs.startCall(ctx, id, false)
}

// startCall is start; open marks a call that runs until cancelled, which
// close cancels.
func (fs *fastSession) startCall(ctx context.Context, id jsonrpc.ID, open bool) (context.Context, context.CancelCauseFunc, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, busy := fs.calls[id]; busy {
		return nil, nil, false
	}
	if fs.sdk[id] > 0 || fs.closing {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	fs.calls[id] = cancel
	if open {
		if fs.open == nil {
			fs.open = map[jsonrpc.ID]bool{}
		}
		fs.open[id] = true
	}
	fs.running.Add(1)
	return ctx, cancel, true
}

// close stops the fast path taking calls, before running is waited on,
// and cancels those that run until cancelled.
func (fs *fastSession) close() {
	fs.mu.Lock()
	fs.closing = true
	for id := range fs.open {
		if c := fs.calls[id]; c != nil {
			c(errServerClosing)
		}
	}
	fs.mu.Unlock()
}

// release frees the id of a call start registered.
func (fs *fastSession) release(id jsonrpc.ID) {
	fs.mu.Lock()
	cancel := fs.calls[id]
	delete(fs.calls, id)
	delete(fs.open, id)
	fs.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

// inUse reports whether a request with this id is in progress, on either
// path.
func (fs *fastSession) inUse(id jsonrpc.ID) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, busy := fs.calls[id]
	return busy || fs.sdk[id] > 0
}

// busy reports whether the fast path has a call with this id in progress.
func (fs *fastSession) busy(id jsonrpc.ID) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, ok := fs.calls[id]
	return ok
}

// cancel cancels the fast path's call with the given id, if any.
func (fs *fastSession) cancel(id jsonrpc.ID, cause error) {
	fs.mu.Lock()
	c := fs.calls[id]
	fs.mu.Unlock()
	if c != nil {
		c(cause)
	}
}

// cancelAll cancels every call of the fast path.
func (fs *fastSession) cancelAll(cause error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, c := range fs.calls {
		c(cause)
	}
}

// sdkStarted and sdkDone count a request given to the go-sdk, so that the
// fast path does not take another with its id meanwhile.
func (fs *fastSession) sdkStarted(id jsonrpc.ID) {
	fs.mu.Lock()
	fs.sdk[id]++
	fs.mu.Unlock()
}

func (fs *fastSession) sdkDone(id jsonrpc.ID) {
	fs.mu.Lock()
	if n := fs.sdk[id]; n <= 1 {
		delete(fs.sdk, id)
	} else {
		fs.sdk[id] = n - 1
	}
	fs.mu.Unlock()
}

// serve runs a call the fast path took and returns the JSON-RPC response
// to send, as the go-sdk would have written it (nil if the result cannot be
// marshaled: the go-sdk then sends nothing). header is the HTTP request's,
// if any; ctx carries the caller's token, if any (auth.TokenInfoFromContext).
// As the go-sdk's receiving middleware does for its requests (sessions),
// the request gets its span and is counted.
func (fs *fastSession) serve(ctx context.Context, cancel context.CancelCauseFunc, ss *mcp.ServerSession, m *message, hr *httpcalls.Request, header http.Header) []byte {
	wire.ServedFast()
	var meta mcp.Meta
	if m.meta != nil {
		meta = decodeMeta(m.meta)
	}
	var carrier *core.Scope
	if hr != nil {
		carrier = hr.Scope
	}
	rq := fs.state(ss).Request(wire.IDString(m.id), meta, auth.TokenInfoFromContext(ctx), carrier)
	rq.Cancel = cancel
	target := ""
	if m.method == "tools/call" {
		target = m.key
	}
	var tc propagation.TextMapCarrier
	if header != nil {
		tc = propagation.HeaderCarrier(header)
	}
	ctx, span := fs.p.core.StartRequest(ctx, m.method, target, rq.Meta, tc, ss.ID(), rq.ID)
	var (
		res mcp.Result
		err error
	)
	if m.method == "tools/call" {
		var r *mcp.CallToolResult
		if r, err = fs.p.core.CallTool(ctx, rq, m.key, m.args); err == nil {
			if r.Content == nil {
				r.Content = []mcp.Content{} // as the go-sdk does
			}
			res = r
		}
	} else {
		var r *mcp.ReadResourceResult
		if r, err = fs.p.core.ReadResource(ctx, rq, m.key); err == nil {
			res = wire.WithoutCacheHints(r) // as the go-sdk's sessions send it
		}
	}
	fs.p.core.EndRequest(span, m.method, res, err)
	if err != nil {
		return wire.EncodeError(m.id, err)
	}
	b, err := encodeResult(m.id, res)
	if err != nil {
		fs.p.log.Error("the result of "+m.method+" cannot be marshaled", "error", err)
		return nil
	}
	return b
}

// decodeMeta decodes a request's _meta, a valid object (parseMessage): it
// cannot fail. (Decoded in serve, the Meta would be allocated for every
// call, with a _meta or without.)
func decodeMeta(b []byte) mcp.Meta {
	var meta mcp.Meta
	json.Unmarshal(b, &meta)
	return meta
}

// sessionState holds a SessionState, for an atomic.Pointer.
type sessionState struct{ SessionState }

// state returns the state of the session ss, the fast session's.
func (fs *fastSession) state(ss *mcp.ServerSession) SessionState {
	if st := fs.st.Load(); st != nil {
		return st.SessionState
	}
	st := fs.p.sdk.State(ss)
	fs.st.Store(&sessionState{st})
	return st
}

// bufs holds the buffers responses are encoded in.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeResult encodes a result response as the go-sdk does: the result
// marshaled without HTML escaping, in a {"jsonrpc","id","result"} object.
func encodeResult(id jsonrpc.ID, res mcp.Result) ([]byte, error) {
	b := bufs.Get().(*bytes.Buffer)
	defer bufs.Put(b)
	b.Reset()
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	if n, ok := id.Raw().(int64); ok {
		b.Write(strconv.AppendInt(b.AvailableBuffer(), n, 10)) // as json.Marshal writes it
	} else if err := marshalTo(b, id.Raw()); err != nil {
		return nil, err
	}
	b.WriteString(`,"result":`)
	if tr, ok := res.(*mcp.CallToolResult); !ok || !appendPlainResult(b, tr) {
		if err := marshalTo(b, res); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return bytes.Clone(b.Bytes()), nil
}

// appendPlainResult appends a tool result made only of plain text blocks
// as the go-sdk marshals it (through json.Marshal, so with HTML escaping),
// and reports whether it did; marshalTo takes any other result.
// FuzzPlainResult checks the two write alike.
func appendPlainResult(b *bytes.Buffer, r *mcp.CallToolResult) bool {
	if !wire.TextOnly(r) {
		return false
	}
	b.WriteString(`{"content":[`)
	for i, c := range r.Content {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":`)
		appendJSONString(b, c.(*mcp.TextContent).Text)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	if r.IsError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteByte('}')
	return true
}

// appendJSONString appends s as json.Marshal encodes it: directly if it is
// printable ASCII that needs no escape, else through json.Marshal.
func appendJSONString(b *bytes.Buffer, s string) {
	if !wire.Unescaped(s) {
		q, _ := json.Marshal(s) // a string cannot fail
		b.Write(q)
		return
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// marshalTo appends v as JSON without HTML escaping, as the go-sdk
// marshals results.
func marshalTo(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}
