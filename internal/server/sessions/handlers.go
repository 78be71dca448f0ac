package sessions

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The go-sdk's handlers of every tool, resource, resource template and
// prompt the core offers, and of completion, subscriptions and roots: each
// describes its request for the core (sdkRequest) and lets the core serve
// it, as the fast path's calls are.

func (s *Server) toolHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	return s.core.CallTool(ctx, s.sdkRequest(ctx, req.Session, req.Extra, p.Meta, "tools/call", p.Name), p.Name, p.Arguments)
}

func (s *Server) resourceHandler(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	p := req.Params
	return s.core.ReadResource(ctx, s.sdkRequest(ctx, req.Session, req.Extra, p.Meta, "resources/read", p.URI), p.URI)
}

func (s *Server) promptHandler(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p := req.Params
	return s.core.GetPrompt(ctx, s.sdkRequest(ctx, req.Session, req.Extra, p.Meta, "prompts/get", p.Name), p.Name, p.Arguments)
}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	var key string
	if p.Ref != nil {
		key = p.Ref.Name + p.Ref.URI
	}
	return s.core.Complete(ctx, s.sdkRequest(ctx, req.Session, req.Extra, p.Meta, "completion/complete", key), p)
}

// rootsListChanged tells every v1 plugin that asked (by exporting
// on_roots_list_changed) that the session's roots changed. The plugins'
// host imports reach the session's client at once (no queue: the call has
// no end to flush it). The core coalesces a session's notifications.
func (s *Server) rootsListChanged(ctx context.Context, req *mcp.RootsListChangedRequest) {
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && wire.AtLeast(p.ProtocolVersion, core.Version20260728) {
			return // a 2026-07-28 connection: the notification is not part of it
		}
	}
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	if req.Session == nil {
		s.core.RootsListChanged(ctx, core.Request{Principal: tokenOf(req.Extra), Meta: meta})
		return
	}
	s.core.RootsListChanged(ctx, s.State(req.Session).Notification(meta, tokenOf(req.Extra)))
}
