package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// This file is the one place where a tools/call or a resources/read is
// resolved to the plugin that serves it and run, whichever path delivered
// it: the go-sdk's handlers (handlers.go) or the fast path (fastpath.go).
// What must apply to both paths (per-session permissions, metrics,
// tracing) belongs here.

// request is a request being served, as the server sees it whichever path
// delivered it.
type request struct {
	ss    *mcp.ServerSession // the session; nil if none
	id    string             // the JSON-RPC id, as plugins see it; "" if unknown
	hr    *httpRequest       // the HTTP request that carried it, if any
	meta  mcp.Meta           // the request's _meta
	token *auth.TokenInfo    // the caller's token, if the request carried one
}

// sdkRequest describes a request the go-sdk delivered to a handler. The
// JSON-RPC id comes from the transport: Hangar's connections put it in the
// request's Extra (idHeader), and over Streamable HTTP the HTTP request
// that carried the call recorded it (requestHeader).
func (s *Server) sdkRequest(ss *mcp.ServerSession, extra *mcp.RequestExtra, meta mcp.Meta, method, key string) request {
	rq := request{ss: ss, meta: meta, token: tokenOf(extra)}
	if extra == nil || extra.Header == nil {
		return rq
	}
	if tok := extra.Header.Get(requestHeader); tok != "" {
		if rq.hr = s.calls.request(tok); rq.hr != nil {
			rq.id = rq.hr.idFor(method, key)
		}
		return rq
	}
	rq.id = extra.Header.Get(idHeader)
	return rq
}

// idHeader carries, in a request's Extra, the JSON-RPC id of a request read
// by one of Hangar's connections (idConn). Clients cannot set it: over HTTP,
// where Extra holds the request's headers, the HTTP handler removes it.
const idHeader = "Hangar-Internal-Id"

// idConn passes the JSON-RPC id of each request read from a connection to
// the handlers, in the request's Extra.
type idConn struct{ mcp.Connection }

func (c idConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Extra == nil {
		req.Extra = &mcp.RequestExtra{Header: http.Header{idHeader: {idString(req.ID)}}}
	}
	return msg, err
}

// idString is a JSON-RPC id as plugins see it.
func idString(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	default:
		return fmt.Sprint(v)
	}
}

// lookupTool returns the plugin that offers the tool with the exposed name,
// and the tool.
func (s *Server) lookupTool(name string) (*mount, *toolEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.tools[name]
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
// MIME type of the resource or template that matched, as the go-sdk finds
// them: a resource of that URI first, else the first matching template in
// the order of their URI templates.
func (s *Server) lookupResource(uri string) (*mount, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.resources[uri]; m != nil {
		return m, m.mimeTypes[uri]
	}
	if s.templateOrder == nil {
		s.templateOrder = s.compileTemplates()
	}
	for _, t := range s.templateOrder {
		if t.re != nil && t.re.MatchString(uri) {
			m := s.templates[t.key]
			return m, m.mimeTypes[t.key]
		}
	}
	return nil, ""
}

// compiledTemplate is a registered URI template and its regular expression
// (nil if it does not compile).
type compiledTemplate struct {
	key string
	re  *regexp.Regexp
}

// compileTemplates lists the registered templates in order. s.mu must be
// held.
func (s *Server) compileTemplates() []compiledTemplate {
	out := make([]compiledTemplate, 0, len(s.templates))
	for key := range s.templates {
		t := compiledTemplate{key: key}
		if tmpl, err := uritemplate.New(key); err == nil {
			t.re = tmpl.Regexp()
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b compiledTemplate) int { return strings.Compare(a.key, b.key) })
	return out
}

// callTool serves a tools/call of the tool with the exposed name.
func (s *Server) callTool(ctx context.Context, rq request, name string, args json.RawMessage) (res *mcp.CallToolResult, err error) {
	defer s.recovered("tools/call", &err)
	m, t := s.lookupTool(name)
	if m == nil {
		return nil, unknownTool(name)
	}
	ctx, obs, err := s.enter(ctx, m, "tools/call", t.tool.Name, rq.token, unknownTool(name)) // observe.go
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
		if schema, msg = m.checkLoaded(ctx, t); msg != "" {
			if ctx.Err() != nil {
				return nil, cancelled(ctx)
			}
			return errorResult("%s", msg), nil
		}
		simple = nil
	}
	if !simple.valid(args) {
		if msg := validateArguments(schema, args); msg != "" {
			failure = errInvalidArguments
			return errorResult("invalid arguments for tool %q: %s", name, msg), nil
		}
	}
	ctx, c, end, err := s.begin(ctx, rq)
	if err != nil {
		failure = err
		return nil, err
	}
	defer end()
	res, err = onCurrent(ctx, m, func(p *plugin.Plugin, m *mount) (*mcp.CallToolResult, error) {
		return p.CallTool(ctx, c, t.tool.Name, args)
	})
	failure = err
	if err != nil {
		if ctx.Err() != nil {
			return nil, cancelled(ctx)
		}
		s.logCallError(m.name, err)
		return errorResult("%s", toolError(err)), nil
	}
	// Hangar does not speak multi-round-trip results: what a plugin
	// returns is a complete result, whatever fields it sets.
	res = &mcp.CallToolResult{Meta: res.Meta, Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}
	m.exposeContent(res.Content)
	return res, nil
}

// readResource serves a resources/read of the exposed URI. The result is
// complete as the go-sdk would send it: contents without a URI or MIME type
// get the URI read and the MIME type of the resource or template.
func (s *Server) readResource(ctx context.Context, rq request, uri string) (res *mcp.ReadResourceResult, err error) {
	defer s.recovered("resources/read", &err)
	m, mimeType := s.lookupResource(uri)
	if m == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ctx, obs, err := s.enter(ctx, m, "resources/read", "", rq.token, mcp.ResourceNotFoundError(uri)) // observe.go
	if err != nil {
		return nil, err
	}
	var failure error
	defer func() { obs.end(failure) }()
	ctx, c, end, err := s.begin(ctx, rq)
	if err != nil {
		failure = err
		return nil, err
	}
	defer end()
	res, err = onCurrent(ctx, m, func(p *plugin.Plugin, m *mount) (*mcp.ReadResourceResult, error) {
		return p.ReadResource(ctx, c, m.pluginURI(uri))
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
	// A complete result (see callTool), with the go-sdk's defaults filled
	// in.
	res = &mcp.ReadResourceResult{Meta: res.Meta, Cacheable: res.Cacheable, Contents: res.Contents}
	if res.CacheScope == "" {
		res.CacheScope = "public"
	}
	for _, c := range res.Contents {
		m.exposeContents(c)
		if c.URI == "" {
			c.URI = uri
		}
		if c.MIMEType == "" {
			c.MIMEType = mimeType
		}
	}
	return res, nil
}
