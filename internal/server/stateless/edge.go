package stateless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/forward"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// Core is what the 2026-07-28 edge needs of the dispatch core: lookups,
// the calls that may need the client's input (which the core holds
// between the client's requests, and may make tasks), the check of a
// listen's resources, and observation. *core.Core implements it.
type Core interface {
	HasTool(name string) bool
	HasResource(uri string) bool
	Admit(rq core.Request, method, key string) error
	ServeHeld(ctx context.Context, hc *core.HeldCall, run core.HeldRun) (*core.HeldOutcome, error)
	StartRequest(ctx context.Context, method, target string, meta map[string]any, carrier propagation.TextMapCarrier, session, id string) (context.Context, trace.Span)
	EndRequest(span trace.Span, method string, res mcp.Result, err error)
	Fingerprint(k plugin.ListKind, g *auth.Grant) string
}

// Options configure an Edge.
type Options struct {
	// Logger receives the diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// Version is reported to clients in serverInfo.
	Version string
	// Manager is the core's (core.Options.Manager), which holds the calls
	// that ask the client for input: the edge asks it only where a
	// retry's call is held (this replica, or another to forward it to),
	// over HTTP. Required by New; the calls go through the core.
	Manager *mrtr.Manager
	// Forwarder, if set, sends a retry whose requestState names another
	// replica there (HTTP only). Nil: such a retry is told to start again.
	Forwarder *forward.Forwarder
	// DisableFastPath leaves every request to the go-sdk: the edge still
	// checks each one, routes retries and serves parked calls.
	DisableFastPath bool
	// Requests keeps the HTTP requests in progress that carry calls (the
	// HTTP layer in front of the edge tracks them): the edge records there
	// the call each request carries, whose id the go-sdk's handlers then
	// find. Required by New: the go-sdk's sessions must be given the same
	// Tracker.
	Requests *httpcalls.Tracker
	// Tasks, if set, is the core's table of the tasks extension
	// (core.Options.Tasks, through which a tools/call whose request
	// declares it goes): server/discover offers the extension, and
	// tasks/get, tasks/update and tasks/cancel, and listens that follow
	// tasks, are served with it. Nil: the extension is not offered, and
	// those methods are unknown.
	Tasks *tasks.Table
}

// Edge is the edge of MCP 2026-07-28: it checks each request of that
// version, serves through the dispatch core the ones that may need the
// client's input (tools/call, prompts/get, resources/read; the core holds
// their calls), and leaves the rest to the go-sdk. It is a core.Listener: it
// refuses tools whose x-mcp-header annotations are invalid, and keeps the
// others' bindings.
type Edge struct {
	*calls
	sdkHTTP  http.Handler // the go-sdk's stateless Streamable HTTP
	requests *httpcalls.Tracker
	m        *mrtr.Manager // where a retry's call is held (route)
	fwd      *forward.Forwarder
	log      *slog.Logger
	fastOff  bool

	mu      sync.Mutex
	headers map[string][]binding // by exposed tool name, for tools with x-mcp-header parameters

	lmu       sync.Mutex
	listeners map[*listener]struct{} // subscriptions/listen streams (listen.go)
	stop      chan struct{}          // closed by Stop
	stopOnce  sync.Once
	listens   listenCaps // the caps on listen streams over HTTP (listen.go)
}

// calls serves the requests of 2026-07-28 that may need the client's
// input through the core, and the requests of the tasks extension: what
// the edge's fast path and the go-sdk's path (its middleware, in Hooks)
// share. It holds no state of its own (but the encoding of serverInfo,
// made once).
type calls struct {
	core  Core
	info  *mcp.Implementation
	tasks *tasks.Table // nil: the tasks extension is not offered

	metaOnce sync.Once
	metaJSON []byte // a plain result's _meta, encoded (plainMeta)
}

func newCalls(c Core, opts *Options) (*calls, Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &calls{core: c, info: &mcp.Implementation{Name: "hangar", Version: o.Version}, tasks: o.Tasks}, o, nil
}

// Hooks are what the edge adds to the go-sdk server that serves the
// requests it leaves to the go-sdk (middleware.go). The composition root
// (package server) gives them to that server's maker (package sessions:
// its Options.Hooks).
type Hooks struct {
	// Versions are the protocol versions the edge serves: Version.
	Versions []string
	// Middleware is to be the go-sdk server's receiving middleware,
	// inside the middleware that observes its requests and adapts its
	// results.
	Middleware mcp.Middleware
	// SetCacheable sets the cache hints of 2026-07-28 results
	// (mcp.ServerOptions.SetCacheable).
	SetCacheable func(ctx context.Context, req mcp.Request, c *mcp.Cacheable)
	// Request describes for the core a call that a go-sdk handler serves
	// for Middleware, given the request as the handler knows it; it
	// reports false for any other call.
	Request func(ctx context.Context, rq core.Request) (core.Request, bool)
	// PluginMeta returns the _meta plugins get of a request of Version,
	// given the request's: without the keys that frame it, which the edge
	// consumes (pluginMeta).
	PluginMeta func(meta mcp.Meta) mcp.Meta
}

// NewHooks returns what the edge of c, with opts, adds to the go-sdk's
// server, whose stateless handler New then leaves requests to.
func NewHooks(c Core, opts *Options) (*Hooks, error) {
	k, _, err := newCalls(c, opts)
	if err != nil {
		return nil, err
	}
	return &Hooks{Versions: []string{Version}, Middleware: k.middleware, SetCacheable: setCacheable, Request: detachedRequest, PluginMeta: pluginMeta}, nil
}

// New returns the edge of c, which leaves to sdkHTTP, the go-sdk's
// Streamable HTTP handler in its stateless mode (whose server has the
// edge's Hooks, of the same c and opts), the requests it does not serve
// itself. Register it with c (core.Core.Listen) before the sessions, and
// before c's first plugins. It fails if Options.Manager or
// Options.Requests is nil.
func New(c Core, sdkHTTP http.Handler, opts *Options) (*Edge, error) {
	k, o, err := newCalls(c, opts)
	if err != nil {
		return nil, err
	}
	if o.Manager == nil {
		return nil, errors.New("stateless: Options.Manager is required: the core's, which says where a retry's call is held")
	}
	if sdkHTTP == nil {
		return nil, errors.New("stateless: New needs the go-sdk's stateless HTTP handler, whose server has the edge's Hooks")
	}
	if o.Requests == nil {
		return nil, errors.New("stateless: Options.Requests is required: the Tracker of the HTTP requests that carry calls, which the go-sdk's sessions are given too")
	}
	return &Edge{
		calls:     k,
		sdkHTTP:   sdkHTTP,
		requests:  o.Requests,
		m:         o.Manager,
		fwd:       o.Forwarder,
		log:       o.Logger,
		fastOff:   o.DisableFastPath,
		headers:   map[string][]binding{},
		listeners: map[*listener]struct{}{},
		stop:      make(chan struct{}),
	}, nil
}

// Offer implements core.Listener: a tool whose x-mcp-header annotations
// are invalid is refused (and the core logs why); a valid tool's
// bindings are kept, to check its calls' Mcp-Param headers.
func (e *Edge) Offer(item any) error {
	t, ok := item.(*mcp.Tool)
	if !ok {
		return nil
	}
	bs, err := headerBindings(t.InputSchema)
	if err != nil {
		return fmt.Errorf("invalid x-mcp-header annotation (MCP 2026-07-28 clients must drop the tool): %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(bs) > 0 {
		e.headers[t.Name] = bs
	} else {
		delete(e.headers, t.Name)
	}
	return nil
}

// Withdraw implements core.Listener.
func (e *Edge) Withdraw(kind core.Kind, keys ...string) {
	if kind != core.Tools {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		delete(e.headers, k)
	}
}

// bindings returns the x-mcp-header bindings of the tool with the exposed
// name, nil if it has none.
func (e *Edge) bindings(name string) []binding {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.headers[name]
}

// The cache hints of 2026-07-28 (server/utilities/caching). Lists change
// when the plugins are reloaded and whenever a plugin says its list
// changed, which a plugin may do in any call (a notes plugin adds a
// resource per note): a client that listens (subscriptions/listen) is told
// at once, but one that does not would keep a list it cached for as long
// as its TTL, its own call's change included. So lists are stale at once
// (ListTTL 0): asking again costs Hangar a list it holds in memory. What
// server/discover says changes only with Hangar's own version. A read's
// content is the plugin's: the hints are those it gave, 0 (stale at once)
// if none.
const (
	ListTTL     time.Duration = 0
	DiscoverTTL               = time.Hour
)

// setCacheable sets the cache hints of a 2026-07-28 result: the go-sdk's
// ServerOptions.SetCacheable. A result is "private" when the request was
// authenticated, since what a caller sees then depends on its token
// (lists are filtered by its grant, and a shared cache must not hand one
// caller's answer to another), and "public" otherwise.
func setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if !wire.VersionInMeta(req) {
		return // older versions are sent none (wire.WithoutCacheHints)
	}
	var principal *sdkauth.TokenInfo
	if x := req.GetExtra(); x != nil {
		principal = x.TokenInfo
	}
	switch req.GetParams().(type) {
	case *mcp.DiscoverParams:
		c.TTLMs, c.CacheScope = int(DiscoverTTL.Milliseconds()), "public"
	case *mcp.ReadResourceParams:
		readHints(c, principal != nil)
	default:
		c.TTLMs, c.CacheScope = int(ListTTL.Milliseconds()), scope(principal != nil)
	}
}

// readHints settles a read's hints: the plugin's TTL (never negative) and
// scope, "private" if the request was authenticated.
func readHints(c *mcp.Cacheable, authenticated bool) {
	c.TTLMs = max(c.TTLMs, 0)
	c.CacheScope = scope(authenticated || c.CacheScope == "private")
}

func scope(private bool) string {
	if private {
		return "private"
	}
	return "public"
}

// serve serves hc through the core (core.Core.ServeHeld, with run: nil
// for the core's own dispatch), and settles the cache hints of a read's
// result, which the wire carries: the go-sdk's readResource sets them
// (setCacheable) on its path, and a read that a retry completed depends
// on the answers, which are not part of the request a cache would key it
// by.
func (e *calls) serve(ctx context.Context, hc *core.HeldCall, run core.HeldRun) (*core.HeldOutcome, error) {
	out, err := e.core.ServeHeld(ctx, hc, run)
	if err != nil {
		return nil, err
	}
	if r, ok := out.Result.(*mcp.ReadResourceResult); ok {
		readHints(&r.Cacheable, hc.Request.Principal != nil)
		if hc.Retry {
			r.TTLMs, r.CacheScope = 0, "private"
		}
	}
	return out, nil
}

// rpcError is the JSON-RPC error a 2026-07-28 request is answered with for
// err: a request that ended while its call ran as a cancelled one, the
// Manager's errors as package mrtr maps them, the core's as they
// are but for resource not found, which 2026-07-28 answers with invalid
// params (the go-sdk already does, unless MCPGODEBUG restores -32002),
// and anything else as an internal error.
func rpcError(err error) *jsonrpc.Error {
	if errors.Is(err, mrtr.ErrRequestEnded) {
		// The client cancelled it (or went away, and reads nothing), or
		// the core did, and said why (a drain, a scope that ended).
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == core.CodeRequestCancelled {
			return je
		}
		return &jsonrpc.Error{Code: core.CodeRequestCancelled, Message: "request cancelled"}
	}
	if e := mrtr.RPCError(err); e != nil {
		return e
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		if je.Code == -32002 {
			c := *je
			c.Code = jsonrpc.CodeInvalidParams
			return &c
		}
		return je
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// withServerInfo adds serverInfo to res's _meta, as the go-sdk does for
// every result of 2026-07-28.
func (e *calls) withServerInfo(meta mcp.Meta) mcp.Meta {
	if meta == nil {
		meta = mcp.Meta{}
	}
	if _, ok := meta[wire.MetaServerInfo]; !ok {
		meta[wire.MetaServerInfo] = e.info
	}
	return meta
}

// marshalInput encodes an InputRequiredResult with its _meta, the same
// way on both paths.
func marshalInput(in *mrtr.InputRequiredResult, meta mcp.Meta) ([]byte, error) {
	out := *in
	out.Meta = meta
	return json.Marshal(&out)
}

// inputRequired is the go-sdk path's answer to a request whose call needs
// input: the request's result type (for the go-sdk, which adds serverInfo
// to its _meta), marshaled as an InputRequiredResult and nothing else.
type inputRequired struct {
	mcp.Result
	in *mrtr.InputRequiredResult
}

func (r *inputRequired) MarshalJSON() ([]byte, error) { return marshalInput(r.in, r.GetMeta()) }

// encodeResult encodes the answer to a 2026-07-28 request, id, with a
// complete result, as the go-sdk writes it: serverInfo in _meta, and
// resultType "complete" (the go-sdk's results that keep it unexported
// write it last, after what they marshal).
func (e *calls) encodeResult(id jsonrpc.ID, res mcp.Result) ([]byte, error) {
	if r, ok := res.(*mcp.CallToolResult); ok {
		if b, ok := e.appendPlainAnswer(nil, id, r); ok {
			return b, nil
		}
	}
	return e.marshalResult(id, res)
}

// marshalResult is encodeResult of any result, by json.Marshal.
func (e *calls) marshalResult(id jsonrpc.ID, res mcp.Result) ([]byte, error) {
	res.SetMeta(e.withServerInfo(res.GetMeta()))
	if r, ok := res.(*mcp.CallToolResult); ok && r.Content == nil {
		r.Content = []mcp.Content{} // as the go-sdk does
	}
	body, err := wire.MarshalPlain(res)
	if err != nil {
		return nil, err
	}
	if bytes.HasSuffix(body, []byte("}")) {
		if len(body) > 2 {
			body = append(body[:len(body)-1], `,"resultType":"complete"}`...)
		} else {
			body = []byte(`{"resultType":"complete"}`)
		}
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: body})
}

// encodeInput encodes the answer to a request, id, whose call needs input.
func (e *calls) encodeInput(id jsonrpc.ID, in *mrtr.InputRequiredResult) ([]byte, error) {
	body, err := marshalInput(in, e.withServerInfo(nil))
	if err != nil {
		return nil, err
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: body})
}

// streamSink is a fast-path request's Sink: it encodes the call's
// notifications and hands them to emit (an SSE event, or a line over
// stdio). Log messages go only at or above the level the request's _meta
// asked for, and none if it asked for none.
type streamSink struct {
	emit  func([]byte) error
	line  func([]byte) // over stdio, instead of emit: a write that cannot fail
	level mcp.LoggingLevel
}

// send hands b to emit, or to line.
func (s *streamSink) send(b []byte) error {
	if s.line != nil {
		s.line(b)
		return nil
	}
	return s.emit(b)
}

func (s *streamSink) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	if !logs(s.level, p.Level) {
		return nil
	}
	b, err := wire.EncodeNotification("notifications/message", p)
	if err != nil {
		return err
	}
	return s.send(b)
}

func (s *streamSink) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	b, err := wire.EncodeNotification("notifications/progress", p)
	if err != nil {
		return err
	}
	return s.send(b)
}
