package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// What a server does for operators and for access control around each
// request and plugin call: the caller's grant (which plugins its token
// allows), a span per MCP request and per plugin call, and metrics.
//
// Two entry points carry it all, so that every way into a plugin goes
// through them:
//
//   - startRequest/endRequest wrap each MCP request (the receiving
//     middleware observeRequests calls them): its span, with the parent
//     taken from traceparent in _meta (or the HTTP header), and the request
//     counter;
//   - enter/observation.end wrap each call that reaches a plugin (every
//     handler calls them once it knows the plugin): the grant check, which
//     answers as if the name did not exist, the plugin call's span, and the
//     call metrics.

// tracerName names the tracer of Hangar's spans.
const tracerName = "github.com/hangar-mcp/hangar/internal/server"

// propagator reads W3C trace context (traceparent, tracestate) from _meta.
var propagator = propagation.TraceContext{}

// metaCarrier reads and writes trace context in a request's _meta.
type metaCarrier map[string]any

func (c metaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startRequest starts the span of an MCP request. Its parent is the trace
// context in the request's _meta (traceparent, tracestate), else in the
// HTTP request's headers, else none. target is the tool or prompt name, if
// any, which the span's name carries.
func (s *Server) startRequest(ctx context.Context, method, target string, meta map[string]any, header http.Header, session, id string) (context.Context, trace.Span) {
	if len(meta) > 0 && meta["traceparent"] != nil {
		ctx = propagator.Extract(ctx, metaCarrier(meta))
	} else if header != nil && header.Get("traceparent") != "" {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(header))
	}
	name := method
	if target != "" {
		name += " " + target
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	if session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", session))
	}
	if id != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", id))
	}
	return s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// endRequest ends the span of an MCP request and counts the request. A
// tool result with isError set marks the span as failed too.
func (s *Server) endRequest(span trace.Span, method string, res mcp.Result, err error) {
	failed := err != nil
	switch {
	case err != nil:
		kind := "error"
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			kind = fmt.Sprint(je.Code)
		}
		span.SetAttributes(attribute.String("error.type", kind))
		span.SetStatus(codes.Error, err.Error())
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			span.SetAttributes(attribute.String("error.type", "tool_error"))
			span.SetStatus(codes.Error, "the tool reported an error")
		}
	}
	span.End()
	if !strings.HasPrefix(method, "notifications/") {
		s.metrics.Request(method, failed)
	}
}

// observeRequests is receiving middleware: it gives each MCP request a
// span and counts it, and filters the lists a caller gets to the plugins
// its token allows.
func (s *Server) observeRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		var (
			meta        map[string]any
			header      http.Header
			target, key string // key: as sdkRequest wants it
		)
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			meta = p.GetMeta()
			switch p := p.(type) {
			case *mcp.CallToolParamsRaw:
				target, key = p.Name, p.Name
			case *mcp.GetPromptParams:
				target, key = p.Name, p.Name
			case *mcp.ReadResourceParams:
				key = p.URI
			case *mcp.CompleteParams:
				if p.Ref != nil {
					key = p.Ref.Name + p.Ref.URI
				}
			}
		}
		extra := req.GetExtra()
		var session string
		ss := serverSession(req)
		if ss != nil {
			session = ss.ID()
		}
		if extra != nil {
			header = extra.Header
			if extra.TokenInfo != nil {
				s.noteGrant(ss, auth.GrantOf(extra.TokenInfo))
			}
		}
		id := s.sdkRequest(ss, extra, nil, method, key).id
		ctx, span := s.startRequest(ctx, method, target, meta, header, session, id)
		res, err := next(ctx, method, req)
		if err == nil && res != nil {
			var g *auth.Grant
			if extra != nil {
				g = auth.GrantOf(extra.TokenInfo)
			}
			s.filterList(g, res)
		}
		s.endRequest(span, method, res, err)
		return res, err
	}
}

// filterList removes from a list result what belongs to plugins the grant
// does not allow.
func (s *Server) filterList(g *auth.Grant, res mcp.Result) {
	if g.All() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	allowed := func(owners map[string]*mount, key string) bool {
		m := owners[key]
		return m != nil && g.Allows(m.name)
	}
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		r.Tools = slices.DeleteFunc(r.Tools, func(t *mcp.Tool) bool { return !allowed(s.tools, t.Name) })
	case *mcp.ListPromptsResult:
		r.Prompts = slices.DeleteFunc(r.Prompts, func(p *mcp.Prompt) bool { return !allowed(s.prompts, p.Name) })
	case *mcp.ListResourcesResult:
		r.Resources = slices.DeleteFunc(r.Resources, func(x *mcp.Resource) bool { return !allowed(s.resources, x.URI) })
	case *mcp.ListResourceTemplatesResult:
		r.ResourceTemplates = slices.DeleteFunc(r.ResourceTemplates, func(x *mcp.ResourceTemplate) bool { return !allowed(s.templates, x.URITemplate) })
	}
}

// tokenOf returns the caller's token of a request the go-sdk delivered:
// nil if it carried none.
func tokenOf(extra *mcp.RequestExtra) *sdkauth.TokenInfo {
	if extra == nil {
		return nil
	}
	return extra.TokenInfo
}

// allows reports whether the caller of a request, with token (nil if
// none), may use m's plugin.
func allows(token *sdkauth.TokenInfo, m *mount) bool {
	return auth.GrantOf(token).Allows(m.name)
}

// observation is a plugin call being served.
type observation struct {
	s                    *Server
	plugin, method, name string
	start                time.Time
	span                 trace.Span
}

// errInvalidArguments marks a call refused for arguments that do not match
// the tool's input schema.
var errInvalidArguments = errors.New("invalid arguments")

// enter admits a call to m's plugin for method (and name, the tool or
// prompt name as the plugin lists it, or ""). If the caller's token does
// not allow the plugin, it returns notFound, the error the caller would get
// if nothing had that name, so that no plugin it may not use can be seen.
// Otherwise it starts the call's span and clock: end must be called with
// the call's outcome.
func (s *Server) enter(ctx context.Context, m *mount, method, name string, token *sdkauth.TokenInfo, notFound error) (context.Context, *observation, error) {
	if !allows(token, m) {
		s.metrics.Call(m.name, method, name, 0, metrics.KindForbidden)
		return ctx, nil, notFound
	}
	attrs := []attribute.KeyValue{attribute.String("hangar.plugin", m.name), attribute.String("mcp.method.name", method)}
	if name != "" {
		attrs = append(attrs, attribute.String("hangar.plugin.name", name))
	}
	ctx, span := s.tracer.Start(ctx, "plugin "+m.name+" "+method, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, &observation{s: s, plugin: m.name, method: method, name: name, start: time.Now(), span: span}, nil
}

// end records the outcome of the call: err is what the plugin call
// returned (nil when it succeeded), or errInvalidArguments.
func (o *observation) end(err error) {
	kind := errorKind(err)
	if kind != "" {
		o.span.SetAttributes(attribute.String("error.type", kind))
		o.span.SetStatus(codes.Error, err.Error())
	}
	o.span.End()
	o.s.metrics.Call(o.plugin, o.method, o.name, time.Since(o.start), kind)
}

// errorKind classifies a failed plugin call for metrics and spans.
func errorKind(err error) string {
	var pe *plugin.PluginError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errInvalidArguments):
		return metrics.KindInvalidArguments
	case errors.Is(err, plugin.ErrTimeout):
		return metrics.KindTimeout
	case errors.Is(err, plugin.ErrBusy):
		return metrics.KindBusy
	case errors.Is(err, plugin.ErrHostDenied):
		return metrics.KindDenied
	case errors.Is(err, plugin.ErrTrap):
		return metrics.KindTrap
	case errors.Is(err, plugin.ErrOutputTooLarge), errors.Is(err, plugin.ErrBadOutput):
		return metrics.KindOutput
	case errors.As(err, &pe):
		return metrics.KindPlugin
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), err == errCancelled:
		return metrics.KindCancelled
	}
	return metrics.KindOther
}

// pluginStats reports the current plugins' state, for the metrics.
func (s *Server) pluginStats() []metrics.Plugin {
	s.mu.Lock()
	mounts := s.mounts
	s.mu.Unlock()
	out := make([]metrics.Plugin, 0, len(mounts))
	for _, m := range mounts {
		p := m.loadedPlugin()
		if p == nil {
			continue // still loading, or failed: /readyz says which
		}
		busy, idle := p.Stats()
		out = append(out, metrics.Plugin{
			Name: m.name, Busy: busy, Idle: idle,
			GuestMemory: p.GuestMemory(),
			Compile:     p.CompileTime(),
		})
	}
	return out
}

// The errors a caller gets for a name no plugin it may use offers: the
// SDK's own, word for word.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}

// Sessions whose token does not allow every plugin are told a list changed
// only when what they may see of it changed: a change in another plugin's
// list would otherwise tell them, by its timing, of activity they cannot
// see. grantView is what such a session saw when it was last told.
type grantView struct {
	grant *auth.Grant
	mu    sync.Mutex
	seen  map[plugin.ListKind]string // the list's fingerprint, by kind
}

// listKinds maps list-changed notifications to the plugin lists they are
// about.
var listKinds = map[string]plugin.ListKind{
	"notifications/tools/list_changed":     plugin.ToolList,
	"notifications/prompts/list_changed":   plugin.PromptList,
	"notifications/resources/list_changed": plugin.ResourceList,
}

// noteGrant records the grant of a session's requests, if it does not allow
// every plugin; it is forgotten when the session ends.
func (s *Server) noteGrant(ss *mcp.ServerSession, g *auth.Grant) {
	if ss == nil || g.All() {
		return
	}
	if _, ok := s.grants.Load(ss); ok {
		return
	}
	v := &grantView{grant: g, seen: map[plugin.ListKind]string{}}
	for _, k := range listKinds {
		v.seen[k] = s.fingerprint(k, g)
	}
	if _, loaded := s.grants.LoadOrStore(ss, v); !loaded {
		go func() {
			ss.Wait()
			s.grants.Delete(ss)
		}()
	}
}

// fingerprint identifies the state of one kind of list of the plugins g
// allows: the mounts, and the reading of their list that is offered.
func (s *Server) fingerprint(k plugin.ListKind, g *auth.Grant) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, m := range s.mounts {
		if g.Allows(m.name) {
			fmt.Fprintf(&b, "%p:%d,", m, m.seq[k])
		}
	}
	return b.String()
}

// hideListChanges is sending middleware: it drops a list-changed
// notification to a session with a limited grant when nothing it may see
// of that list changed.
func (s *Server) hideListChanges(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		k, ok := listKinds[method]
		if !ok {
			return next(ctx, method, req)
		}
		ss := serverSession(req)
		val, ok := s.grants.Load(ss)
		if ss == nil || !ok {
			return next(ctx, method, req)
		}
		v := val.(*grantView)
		fp := s.fingerprint(k, v.grant)
		v.mu.Lock()
		same := v.seen[k] == fp
		v.seen[k] = fp
		v.mu.Unlock()
		if same {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}
