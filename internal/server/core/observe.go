package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// What the core does for operators and for access control around each
// request and plugin call: the caller's grant (which plugins its token
// allows), a span per MCP request and per plugin call, and metrics.
//
// Two entry points carry it all, so that every way into a plugin goes
// through them:
//
//   - StartRequest/EndRequest wrap each MCP request (the edges call them,
//     whether or not the request reaches the core otherwise): its span,
//     with the parent taken from traceparent in _meta (or the HTTP header),
//     and the request counter;
//   - enter/observation.end wrap each call that reaches a plugin (every
//     request the core serves calls them once it knows the plugin): the
//     grant check, which answers as if the name did not exist, the plugin
//     call's span, and the call metrics.

// tracerName names the tracer of Hangar's spans (the package's path
// before the core had a package of its own).
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

// noSpan is the span of every request and call when tracing is off.
var noSpan = trace.SpanFromContext(context.Background())

// tracerOf is tp's tracer for Hangar's spans, or nil without tp.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(tracerName)
}

// StartRequest starts the span of an MCP request; EndRequest ends it.
// Its parent is the trace context in the request's _meta (traceparent,
// tracestate), else in carrier (such as the HTTP request's headers,
// propagation.HeaderCarrier; nil if none), else none. target is the tool
// or prompt name, if any; session and id, if not "", are the session's ID
// and the request's JSON-RPC id.
//
// What a client sends is bounded before a span keeps it, since spans wait
// in memory for the collector: the span is named by the method, a tool or
// prompt name is an attribute only if some plugin offers it (so at most
// MaxNameLength bytes for a tool), and the id is cut to maxAttribute bytes.
func (c *Core) StartRequest(ctx context.Context, method, target string, meta map[string]any, carrier propagation.TextMapCarrier, session, id string) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, noSpan
	}
	if len(meta) > 0 && meta["traceparent"] != nil {
		ctx = propagator.Extract(ctx, metaCarrier(meta))
	} else if carrier != nil && carrier.Get("traceparent") != "" {
		ctx = propagator.Extract(ctx, carrier)
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	if target != "" && len(target) <= maxAttribute {
		switch {
		case method == "tools/call" && c.HasTool(target):
			attrs = append(attrs, attribute.String("gen_ai.tool.name", target))
		case method == "prompts/get" && c.hasPrompt(target):
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", target))
		}
	}
	if session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", bound(session)))
	}
	if id != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", bound(id)))
	}
	return c.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// maxAttribute bounds the strings of a client's request, and the error
// messages, that a span keeps.
const maxAttribute = 256

// bound cuts s to at most maxAttribute bytes, on a character boundary.
func bound(s string) string {
	if len(s) <= maxAttribute {
		return s
	}
	cut := maxAttribute
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// hasPrompt reports whether some plugin offers the prompt with the
// exposed name.
func (c *Core) hasPrompt(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prompts[name] != nil
}

// EndRequest ends the span of an MCP request and counts the request. A
// tool result with isError set marks the span as failed too.
func (c *Core) EndRequest(span trace.Span, method string, res mcp.Result, err error) {
	failed := err != nil
	switch {
	case err != nil:
		kind := "error"
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			kind = fmt.Sprint(je.Code)
		}
		span.SetAttributes(attribute.String("error.type", kind))
		span.SetStatus(codes.Error, bound(err.Error()))
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			span.SetAttributes(attribute.String("error.type", "tool_error"))
			span.SetStatus(codes.Error, "the tool reported an error")
		}
	}
	span.End()
	if !strings.HasPrefix(method, "notifications/") {
		c.metrics.Request(method, failed)
	}
}

// FilterList removes from a list result what belongs to plugins the
// caller, with principal (nil if none), may not use, and, unless caps (the
// client's capabilities, nil if none) make it a UI host, the tools meant
// only for views (apps.go).
func (c *Core) FilterList(principal *sdkauth.TokenInfo, caps *mcp.ClientCapabilities, res mcp.Result) {
	g := auth.GrantOf(principal)
	ui := UIHost(caps)
	if g.All() {
		if _, tools := res.(*mcp.ListToolsResult); ui || !tools {
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	allowed := func(owners map[string]*mount, key string) bool {
		m := owners[key]
		return m != nil && g.Allows(m.name)
	}
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		r.Tools = slices.DeleteFunc(r.Tools, func(t *mcp.Tool) bool {
			if !g.All() && !allowed(c.tools, t.Name) {
				return true
			}
			m := c.tools[t.Name]
			if ui || m == nil {
				return false
			}
			e := m.toolEntries[t.Name]
			return e != nil && e.appOnly
		})
	case *mcp.ListPromptsResult:
		r.Prompts = slices.DeleteFunc(r.Prompts, func(p *mcp.Prompt) bool { return !allowed(c.prompts, p.Name) })
	case *mcp.ListResourcesResult:
		r.Resources = slices.DeleteFunc(r.Resources, func(x *mcp.Resource) bool { return !allowed(c.resources, x.URI) })
	case *mcp.ListResourceTemplatesResult:
		r.ResourceTemplates = slices.DeleteFunc(r.ResourceTemplates, func(x *mcp.ResourceTemplate) bool { return !allowed(c.templates, x.URITemplate) })
	}
}

// allows reports whether the caller of a request, with principal (nil if
// none), may use m's plugin.
func allows(principal *sdkauth.TokenInfo, m *mount) bool {
	return auth.GrantOf(principal).Allows(m.name)
}

// observation is a plugin call being served.
type observation struct {
	c                    *Core
	plugin, method, name string
	start                time.Time
	span                 trace.Span
}

// errInvalidArguments marks a call refused for arguments that do not match
// the tool's input schema.
var errInvalidArguments = errors.New("invalid arguments")

// enter admits a call to m's plugin for method (and name, the tool or
// prompt name as the plugin lists it, or ""). If the caller's token does
// not allow the plugin, it returns notFound(), the error the caller would
// get if nothing had that name (made only then), so that no plugin it may
// not use can be seen. Otherwise it starts the call's span and clock: end
// must be called with the call's outcome.
func (c *Core) enter(ctx context.Context, m *mount, method, name string, principal *sdkauth.TokenInfo, notFound func() error) (context.Context, *observation, error) {
	if !allows(principal, m) {
		c.metrics.Call(m.name, method, name, 0, metrics.KindForbidden)
		return ctx, nil, notFound()
	}
	if c.tracer == nil {
		return ctx, &observation{c: c, plugin: m.name, method: method, name: name, start: time.Now(), span: noSpan}, nil
	}
	attrs := []attribute.KeyValue{attribute.String("hangar.plugin", m.name), attribute.String("mcp.method.name", method)}
	if name != "" {
		attrs = append(attrs, attribute.String("hangar.plugin.name", bound(name)))
	}
	ctx, span := c.tracer.Start(ctx, "plugin "+m.name+" "+method, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, &observation{c: c, plugin: m.name, method: method, name: name, start: time.Now(), span: span}, nil
}

// end records the outcome of the call: err is what the plugin call
// returned (nil when it succeeded), or errInvalidArguments.
func (o *observation) end(err error) {
	kind := errorKind(err)
	if kind != "" {
		o.span.SetAttributes(attribute.String("error.type", kind))
		o.span.SetStatus(codes.Error, bound(err.Error()))
	}
	o.span.End()
	o.c.metrics.Call(o.plugin, o.method, o.name, time.Since(o.start), kind)
}

// errorKind classifies a failed plugin call for metrics and spans.
func errorKind(err error) string {
	if err == nil {
		return "" // before pe, which errors.As makes escape
	}
	var pe *plugin.PluginError
	switch {
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

// PluginStats reports the current plugins' state, for the metrics
// (metrics.Metrics.SetPlugins).
func (c *Core) PluginStats() []metrics.Plugin {
	c.mu.Lock()
	mounts := c.mounts
	c.mu.Unlock()
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

			ProgressDropped: p.ProgressDropped(),
		})
	}
	return out
}

// Fingerprint identifies the state of one kind of list of the plugins g
// allows: the mounts, and the reading of their list that is offered. An
// edge that tells a caller of list changes compares it with the one the
// caller was last told of: a caller whose grant does not allow every
// plugin is told a list changed only when what it may see of it changed,
// since a change in another plugin's list would tell it, by its timing, of
// activity it cannot see.
func (c *Core) Fingerprint(k plugin.ListKind, g *auth.Grant) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, m := range c.mounts {
		if g.Allows(m.name) {
			fmt.Fprintf(&b, "%p:%d,", m, m.seq[k])
		}
	}
	return b.String()
}
