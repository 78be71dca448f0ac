package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// recovered turns a panic in a handler into an error, so that a bug hit by
// one request does not take the server down.
func (s *Server) recovered(method string, err *error) {
	if r := recover(); r != nil {
		s.log.Error("panic in handler", "method", method, "panic", r, "stack", string(debug.Stack()))
		*err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error in %s", method)}
	}
}

// toolHandler is the go-sdk's handler of every tool: the call is served by
// callTool (dispatch.go), as the fast path's calls are.
func (s *Server) toolHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	return s.callTool(ctx, s.sdkRequest(req.Session, req.Extra, p.Meta, "tools/call", p.Name), p.Name, p.Arguments)
}

// resourceHandler is the go-sdk's handler of every resource and resource
// template: the read is served by readResource (dispatch.go), as the fast
// path's reads are.
func (s *Server) resourceHandler(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	p := req.Params
	return s.readResource(ctx, s.sdkRequest(req.Session, req.Extra, p.Meta, "resources/read", p.URI), p.URI)
}

// validateArguments checks tool arguments against the tool's input schema
// and returns what is wrong, or "".
func validateArguments(schema *jsonschema.Resolved, raw json.RawMessage) string {
	var args any = map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return "arguments are not valid JSON: " + err.Error()
		}
	}
	if _, ok := args.(map[string]any); !ok {
		return "arguments must be a JSON object"
	}
	if err := schema.Validate(args); err != nil {
		return err.Error()
	}
	return ""
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}},
	}
}

// toolError is the text a failed tool call shows the model: the plugin's
// own message when it reported one, else what went wrong with the plugin.
func toolError(err error) string {
	var pe *plugin.PluginError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// logCallError logs a failed tool call: at debug level when the plugin
// reported the error itself, as a warning when the plugin failed.
func (s *Server) logCallError(name string, err error) {
	var pe *plugin.PluginError
	if errors.As(err, &pe) {
		s.log.Debug("tool call failed", "plugin", name, "error", err)
		return
	}
	s.log.Warn("tool call failed", "plugin", name, "error", err)
}

func (m *mount) promptHandler(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
		defer m.srv.recovered("prompts/get", &err)
		ctx, obs, err := m.srv.enter(ctx, m, "prompts/get", name, tokenOf(req.Extra), unknownPrompt(req.Params.Name)) // observe.go
		if err != nil {
			return nil, err
		}
		var failure error
		defer func() { obs.end(failure) }()
		ctx, c, end, err := m.srv.begin(ctx, m.srv.sdkRequest(req.Session, req.Extra, req.Params.Meta, "prompts/get", req.Params.Name))
		if err != nil {
			failure = err
			return nil, err
		}
		defer end()
		res, err = onCurrent(ctx, m, func(p *plugin.Plugin, m *mount) (*mcp.GetPromptResult, error) {
			return p.GetPrompt(ctx, c, name, req.Params.Arguments)
		})
		failure = err
		if err != nil {
			return nil, requestError(err)
		}
		for _, msg := range res.Messages {
			if msg != nil {
				m.exposeContent([]mcp.Content{msg.Content})
			}
		}
		return res, nil
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
// contents a plugin returned.
func (m *mount) exposeContents(c *mcp.ResourceContents) {
	if c.URI != "" {
		c.URI = m.exposedURI(c.URI)
	}
}

// codeRequestCancelled is the JSON-RPC error code (LSP's RequestCancelled)
// of the answer to a cancelled request. MCP asks for no answer at all, but
// the SDK always sends one; this says plainly what happened.
const codeRequestCancelled = -32800

var errCancelled = &jsonrpc.Error{Code: codeRequestCancelled, Message: "request cancelled"}

// requestError is the MCP error for a failed read, prompt or completion.
func requestError(err error) error {
	if errors.Is(err, context.Canceled) {
		return errCancelled
	}
	var pe *plugin.PluginError
	if errors.As(err, &pe) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: pe.Message}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// complete routes completion/complete to the plugin that owns the prompt or
// resource template referred to.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (res *mcp.CompleteResult, err error) {
	defer s.recovered("completion/complete", &err)
	ref := req.Params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing ref"}
	}
	var m *mount
	params := *req.Params
	r := *ref
	s.mu.Lock()
	switch ref.Type {
	case "ref/prompt":
		m = s.prompts[ref.Name]
		if m != nil {
			r.Name = m.pluginName(ref.Name)
		}
	case "ref/resource":
		if m = s.templates[ref.URI]; m == nil {
			m = s.resources[ref.URI]
		}
		if m != nil {
			r.URI = m.pluginURI(ref.URI)
		}
	}
	s.mu.Unlock()
	unknown := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown %s %q", ref.Type, ref.Name+ref.URI)}
	if m == nil {
		return nil, unknown
	}
	if !allows(tokenOf(req.Extra), m) { // observe.go
		return nil, unknown
	}
	params.Ref = &r
	ctx, obs, err := s.enter(ctx, m, "completion/complete", "", tokenOf(req.Extra), unknown)
	if err != nil {
		return nil, err
	}
	var failure error
	defer func() { obs.end(failure) }()
	ctx, c, end, err := s.begin(ctx, s.sdkRequest(req.Session, req.Extra, req.Params.Meta, "completion/complete", ref.Name+ref.URI))
	if err != nil {
		failure = err
		return nil, err
	}
	defer end()
	res, err = onCurrent(ctx, m, func(p *plugin.Plugin, m *mount) (*mcp.CompleteResult, error) {
		if !p.Has("complete") {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		}
		return p.Complete(ctx, c, &params)
	})
	failure = err
	if err != nil {
		return nil, requestError(err)
	}
	return res, nil
}

// subscribe accepts subscriptions to URIs that some plugin serves. The SDK
// keeps track of them; plugins report updates with notify_resource_updated.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) (err error) {
	defer s.recovered("resources/subscribe", &err)
	uri := req.Params.URI
	if m, _ := s.lookupResource(uri); m != nil && allows(tokenOf(req.Extra), m) {
		return nil
	}
	return mcp.ResourceNotFoundError(uri)
}

// rootsListChanged tells every v1 plugin that asked (by exporting
// on_roots_list_changed) that the session's roots changed.
func (s *Server) rootsListChanged(ctx context.Context, req *mcp.RootsListChangedRequest) {
	var err error
	defer s.recovered("notifications/roots/list_changed", &err)
	s.mu.Lock()
	mounts := s.mounts
	s.mu.Unlock()
	for _, m := range mounts {
		if (m.Loading == nil && !m.Plugin.Has("on_roots_list_changed")) || !allows(tokenOf(req.Extra), m) {
			continue
		}
		// The notification's context ends when the handler returns; the
		// plugin runs on its own, bounded by its call timeout (and, while
		// it loads, by the wait for it).
		var meta mcp.Meta
		if req.Params != nil {
			meta = req.Params.Meta
		}
		call := &plugin.Call{Meta: meta} // a notification has no id
		if req.Session != nil {
			call.Host = &sessionHost{ss: req.Session}
		}
		go func() {
			p, err := m.plugin(context.WithoutCancel(ctx))
			if err != nil || !p.Has("on_roots_list_changed") {
				return
			}
			if err := p.RootsListChanged(context.WithoutCancel(ctx), call); err != nil {
				s.log.Warn("on_roots_list_changed failed", "plugin", m.name, "error", err)
			}
		}()
	}
}
