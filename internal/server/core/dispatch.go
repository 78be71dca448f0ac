package core

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// This file is the one place where a request is resolved to the plugin
// that serves it and run, whichever edge delivered it. What must apply to
// every edge (permissions, metrics, tracing, the adaptation of content to
// the protocol version) belongs here.

// A Request is a request the core serves, as the edge that delivered it
// describes it: who asks, at what protocol version, and how to reach the
// client while the request runs. Nothing in it is bound to a transport or a
// session; an edge without sessions fills it from each request alone.
type Request struct {
	// Principal is the caller's token, as the edge authenticated it; nil if
	// the request carried none (no authentication). Its grant says which
	// plugins the caller may use.
	Principal *sdkauth.TokenInfo
	// ID is the request's JSON-RPC id, as plugins see it; "" if unknown.
	ID string
	// Meta is the request's _meta, passed on to plugins.
	Meta mcp.Meta
	// MetaJSON, if set, is the request's _meta as plugins get it, encoded
	// (plugin.Call.MetaJSON), in place of Meta (then nil): an edge that
	// read the _meta without decoding it sets it, and Capabilities.
	MetaJSON json.RawMessage
	// Version is the protocol version the request is served at: content
	// a plugin returns that the version lacks is replaced (see versions.go).
	// "" means none is known, and nothing is replaced.
	Version string
	// Capabilities are what the client declared it can do; nil if it
	// declared nothing. The client sink checks them before it asks the
	// client anything.
	Capabilities *mcp.ClientCapabilities
	// Client reaches the client while the request runs: the host imports of
	// the plugin serving it (sampling, elicitation, roots, logging,
	// progress) go to it. Nil means there is none: host imports that need a
	// client fail. A Client that queues implements Flusher.
	Client plugin.Host
	// Scope, if set, is the longer-lived group the request belongs to, such
	// as its session: the call is cancelled when it ends.
	Scope *Scope
	// Carrier, if set, is the scope of what carried the request to the
	// edge, such as an HTTP request: the call is cancelled when it ends
	// (the connection is lost), and it counts the call while it runs.
	Carrier *Scope
	// Holder names the request to other callers that find its plugin busy
	// ("request 7 of session 3F2A9C1E..."; plugin.Call.Holder): no secret,
	// no token, no whole session ID. "" means "request ID".
	Holder string
	// Cancel, if set, cancels the context the request is served under
	// (the one the core's method is given, or one it derives from), which
	// the edge made for this request alone: the core cancels the call
	// with it (a scope ends, the drain timeout passes) instead of making
	// a context of its own, and leaves it to the edge to release.
	Cancel context.CancelCauseFunc
}

// HasTool reports whether some plugin offers the tool with the exposed
// name.
func (c *Core) HasTool(name string) bool {
	m, _ := c.lookupTool(name)
	return m != nil
}

// ToolMeta returns the _meta of the tool with the exposed name as its
// plugin offers it (nil if none, or no such tool): read only.
func (c *Core) ToolMeta(name string) mcp.Meta {
	_, t := c.lookupTool(name)
	if t == nil || t.tool == nil {
		return nil
	}
	return t.tool.Meta
}

// HasResource reports whether some plugin serves the exposed URI, as a
// resource or through a template.
func (c *Core) HasResource(uri string) bool {
	m, _ := c.lookupResource(uri)
	return m != nil
}

// lookupTool returns the plugin that offers the tool with the exposed name,
// and the tool.
func (c *Core) lookupTool(name string) (*mount, *toolEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.tools[name]
	if m == nil {
		return nil, nil
	}
	t := m.toolEntries[name]
	if t == nil {
		return nil, nil
	}
	return m, t
}

// lookupResource returns the plugin that serves the exposed URI, and the
// MIME type of the resource or template that matched: a resource of that
// URI first, else the first matching template, in the order of their
// claims and then of their URI templates (as the go-sdk orders them; see
// claims.go).
func (c *Core) lookupResource(uri string) (*mount, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.resources[uri]; m != nil {
		return m, m.mimeTypes[uri]
	}
	if m, key := c.matchingTemplate(uri); m != nil {
		return m, m.mimeTypes[key]
	}
	return nil, ""
}

// compiledTemplate is a registered URI template and its regular expression
// (nil if it does not compile).
type compiledTemplate struct {
	key   string
	order uint64 // of its claim
	re    *regexp.Regexp
}

// compileTemplates lists the registered templates in order: those claimed
// first first, and those claimed together by their URI templates. c.mu
// must be held.
func (c *Core) compileTemplates() []compiledTemplate {
	out := make([]compiledTemplate, 0, len(c.templates))
	for key := range c.templates {
		t := compiledTemplate{key: key, order: c.claims.order[key]}
		if tmpl, err := uritemplate.New(key); err == nil {
			t.re = tmpl.Regexp()
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b compiledTemplate) int {
		if a.order != b.order {
			return cmp.Compare(a.order, b.order)
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

// CallTool serves a tools/call of the tool with the exposed name. A
// failure of the tool is a result with isError set; an error is the
// request's.
func (c *Core) CallTool(ctx context.Context, rq Request, name string, args json.RawMessage) (res *mcp.CallToolResult, err error) {
	defer c.recovered("tools/call", &err)
	m, t := c.lookupTool(name)
	if m == nil || t.appOnly && !UIHost(rq.Capabilities) {
		return nil, unknownTool(name)
	}
	ctx, obs, err := c.enter(ctx, m, "tools/call", t.tool.Name, rq.Principal, func() error { return unknownTool(name) }) // observe.go
	if err != nil {
		return nil, err
	}
	var failure error
	defer func() { obs.end(failure) }()
	schema, simple := t.schema, t.simple
	if t.expected {
		// Listed before the plugin loaded: the arguments are checked
		// against the schema the plugin gives once loaded (loading.go).
		var msg string
		if schema, simple, msg = m.checkLoaded(ctx, t); msg != "" {
			if ctx.Err() != nil {
				return nil, cancelled(ctx)
			}
			return errorResult("%s", msg), nil
		}
	}
	if !simple.valid(args) {
		if msg := validateArguments(schema, args); msg != "" {
			failure = errInvalidArguments
			return errorResult("invalid arguments for tool %q: %s", name, msg), nil
		}
	}
	ctx, cl, err := c.begin(ctx, &rq)
	if err != nil {
		failure = err
		return nil, err
	}
	defer cl.end()
	res, err = onCurrent(ctx, m, func(p *plugin.Plugin, m *mount) (*mcp.CallToolResult, error) {
		return p.CallTool(ctx, &cl.pc, t.tool.Name, args)
	})
	failure = err
	if err != nil {
		if ctx.Err() != nil {
			return nil, cancelled(ctx)
		}
		c.logCallError(m.name, err)
		return errorResult("%s", toolError(err)), nil
	}
	// Hangar does not speak multi-round-trip results: what a plugin
	// returns is a complete result, whatever fields it sets.
	// The result is the call's own (plugin.Plugin.CallTool makes it).
	*res = mcp.CallToolResult{Meta: res.Meta, Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}
	m.exposeContent(res.Content)
	res.Content = Content(rq.Version, res.Content)
	return res, nil
}

// ReadResource serves a resources/read of the exposed URI. The result is
// complete as the go-sdk would send it: contents without a URI or MIME type
// get the URI read and the MIME type of the resource or template.
func (c *Core) ReadResource(ctx context.Context, rq Request, uri string) (res *mcp.ReadResourceResult, err error) {
	defer c.recovered("resources/read", &err)
	m, mimeType := c.lookupResource(uri)
	if m == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ctx, obs, err := c.enter(ctx, m, "resources/read", "", rq.Principal, func() error { return mcp.ResourceNotFoundError(uri) }) // observe.go
	if err != nil {
		return nil, err
	}
	var failure error
	defer func() { obs.end(failure) }()
	ctx, cl, err := c.begin(ctx, &rq)
	if err != nil {
		failure = err
		return nil, err
	}
	defer cl.end()
	res, err = onCurrent(ctx, m, func(p *plugin.Plugin, m *mount) (*mcp.ReadResourceResult, error) {
		return p.ReadResource(ctx, &cl.pc, m.pluginURI(uri))
	})
	failure = err
	if err != nil {
		return nil, requestError(err)
	}
	for _, c := range res.Contents {
		if c == nil {
			return nil, requestError(fmt.Errorf("%w: null entry in contents", plugin.ErrBadOutput))
		}
	}
	// A complete result (see CallTool), with the go-sdk's defaults filled
	// in.
	res = &mcp.ReadResourceResult{Meta: res.Meta, Cacheable: res.Cacheable, Contents: res.Contents}
	if res.CacheScope == "" {
		res.CacheScope = "public"
	}
	for _, c := range res.Contents {
		if c.MIMEType == "" {
			c.MIMEType = mimeType
		}
		if isView(c) {
			if err := m.checkView(cmp.Or(c.URI, m.pluginURI(uri)), c); err != nil { // apps.go
				failure = err
				return nil, requestError(err)
			}
		}
		m.exposeContents(c)
		if c.URI == "" {
			c.URI = uri
		}
	}
	return res, nil
}

// GetPrompt serves a prompts/get of the prompt with the exposed name.
func (c *Core) GetPrompt(ctx context.Context, rq Request, name string, args map[string]string) (res *mcp.GetPromptResult, err error) {
	defer c.recovered("prompts/get", &err)
	c.mu.Lock()
	m := c.prompts[name]
	c.mu.Unlock()
	if m == nil {
		return nil, unknownPrompt(name)
	}
	pname := m.pluginName(name)
	ctx, obs, err := c.enter(ctx, m, "prompts/get", pname, rq.Principal, func() error { return unknownPrompt(name) }) // observe.go
	if err != nil {
		return nil, err
	}
	var failure error
	defer func() { obs.end(failure) }()
	ctx, cl, err := c.begin(ctx, &rq)
	if err != nil {
		failure = err
		return nil, err
	}
	defer cl.end()
	res, err = onCurrent(ctx, m, func(p *plugin.Plugin, m *mount) (*mcp.GetPromptResult, error) {
		return p.GetPrompt(ctx, &cl.pc, pname, args)
	})
	failure = err
	if err != nil {
		return nil, requestError(err)
	}
	for _, msg := range res.Messages {
		if msg != nil && msg.Content != nil {
			m.exposeContent([]mcp.Content{msg.Content})
			msg.Content = Content(rq.Version, []mcp.Content{msg.Content})[0]
		}
	}
	return res, nil
}

// Complete serves a completion/complete, by the plugin that owns the prompt
// or resource template referred to.
func (c *Core) Complete(ctx context.Context, rq Request, params *mcp.CompleteParams) (res *mcp.CompleteResult, err error) {
	defer c.recovered("completion/complete", &err)
	ref := params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing ref"}
	}
	var m *mount
	p := *params
	r := *ref
	c.mu.Lock()
	switch ref.Type {
	case "ref/prompt":
		m = c.prompts[ref.Name]
		if m != nil {
			r.Name = m.pluginName(ref.Name)
		}
	case "ref/resource":
		if m = c.templates[ref.URI]; m == nil {
			m = c.resources[ref.URI]
		}
		if m != nil {
			r.URI = m.pluginURI(ref.URI)
		}
	}
	c.mu.Unlock()
	unknown := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown %s %q", ref.Type, ref.Name+ref.URI)}
	if m == nil {
		return nil, unknown
	}
	if !allows(rq.Principal, m) { // observe.go
		return nil, unknown
	}
	p.Ref = &r
	ctx, obs, err := c.enter(ctx, m, "completion/complete", "", rq.Principal, func() error { return unknown })
	if err != nil {
		return nil, err
	}
	var failure error
	defer func() { obs.end(failure) }()
	ctx, cl, err := c.begin(ctx, &rq)
	if err != nil {
		failure = err
		return nil, err
	}
	defer cl.end()
	res, err = onCurrent(ctx, m, func(pl *plugin.Plugin, m *mount) (*mcp.CompleteResult, error) {
		if !pl.Has("complete") {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		}
		return pl.Complete(ctx, &cl.pc, &p)
	})
	failure = err
	if err != nil {
		return nil, requestError(err)
	}
	return res, nil
}

// Subscribe accepts a subscription to the exposed URI if some plugin the
// caller may use serves it; the edge keeps the subscription. Plugins report
// updates with notify_resource_updated (Listener.ResourceUpdated).
func (c *Core) Subscribe(rq Request, uri string) (err error) {
	defer c.recovered("resources/subscribe", &err)
	if m, _ := c.lookupResource(uri); m != nil && allows(rq.Principal, m) {
		return nil
	}
	return mcp.ResourceNotFoundError(uri)
}

// RootsListChanged tells every v1 plugin the caller may use that asked (by
// exporting on_roots_list_changed) that the client's roots changed. The
// plugins run in the background, each bounded by its call timeout (and,
// while it loads, by the wait for it); rq has no id, as a notification.
// Notifications are coalesced per plugin and client (rq.Scope): while a
// plugin runs for one, and for RootsInterval after it started, those that
// arrive meanwhile make it run once more, with the last of them, so that a
// client sending them in a loop holds neither goroutines nor the plugin.
func (c *Core) RootsListChanged(ctx context.Context, rq Request) {
	var err error
	defer c.recovered("notifications/roots/list_changed", &err)
	c.mu.Lock()
	mounts := c.mounts
	c.mu.Unlock()
	for _, m := range mounts {
		if (m.Loading == nil && !m.Plugin.Has("on_roots_list_changed")) || !allows(rq.Principal, m) {
			continue
		}
		call := &plugin.Call{Meta: rq.Meta, MetaJSON: rq.MetaJSON, Host: rq.Client}
		if !c.roots.start(m, rq.Scope, call) {
			continue // coalesced with the run in progress
		}
		go func() {
			for call != nil {
				start := time.Now()
				p, err := m.plugin(context.WithoutCancel(ctx))
				if err == nil && p.Has("on_roots_list_changed") {
					if err := p.RootsListChanged(context.WithoutCancel(ctx), call); err != nil {
						c.log.Warn("on_roots_list_changed failed", "plugin", m.name, "error", err)
					}
				}
				if wait := RootsInterval - time.Since(start); wait > 0 && c.roots.waiting(m, rq.Scope) {
					// The pause ends with the server: the notification
					// waiting then runs at once (and its call is refused).
					t := time.NewTimer(wait)
					select {
					case <-t.C:
					case <-c.calls.stopping:
						t.Stop()
					}
				}
				call = c.roots.next(m, rq.Scope)
			}
		}()
	}
}

// exposeContent puts the mount's prefix before every resource URI in
// content a plugin returned (resource links, embedded resources, and the
// content nested in a tool result), so that a client can read what it is
// given: resources/read strips the prefix again before the plugin sees the
// URI. Every URI gets the prefix, even one that already seems to carry it,
// so that the round trip gives the plugin back exactly what it returned.
func (m *mount) exposeContent(content []mcp.Content) {
	if m.Prefix == "" {
		return
	}
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.ResourceLink:
			if c.URI != "" {
				c.URI = m.exposedURI(c.URI)
			}
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				m.exposeContents(c.Resource)
			}
		case *mcp.ToolResultContent:
			m.exposeContent(c.Content)
		}
	}
}

// exposeContents puts the mount's prefix before the URI of resource
// contents a plugin returned, and tells a view the prefix of its tools'
// names.
func (m *mount) exposeContents(c *mcp.ResourceContents) {
	if c.URI != "" {
		c.URI = m.exposedURI(c.URI)
	}
	m.withToolPrefix(c) // apps.go
}
