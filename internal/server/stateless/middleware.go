package stateless

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The go-sdk path: the go-sdk reads a 2026-07-28 request (its stateless
// Streamable HTTP, or the stdio session it arrives on), checks its _meta,
// answers server/discover and the lists itself, and puts resultType and
// serverInfo on every result. The middleware here, the innermost of the
// go-sdk server, serves what needs Hangar: the requests that may ask the
// client for input go to the core (core.Core.ServeHeld), which holds
// their calls, with the go-sdk's handlers run as the call; errors are
// 2026-07-28's. Those handlers (the sessions
// edge registered them) describe the call for the core as
// detachedRequest says, which package server gives the sessions edge as
// its Hooks.Request: the middleware marks the context it hands them, and
// only this edge reads the mark.

func (e *calls) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !wire.VersionInMeta(req) {
			return next(ctx, method, req)
		}
		switch method {
		case "tools/call", "prompts/get", "resources/read":
			res, err := e.sdkCall(ctx, method, req, next)
			if err != nil {
				return nil, rpcError(err)
			}
			return res, nil
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, rpcError(err)
		}
		if d, ok := res.(*mcp.DiscoverResult); ok && e.tasks != nil && d.Capabilities != nil {
			// The tasks extension is offered (its settings: none).
			c := *d.Capabilities
			c.Extensions = maps.Clone(c.Extensions)
			c.AddExtension(TasksExtension, map[string]any{})
			d.Capabilities = &c
		}
		return res, nil
	}
}

// sdkCall serves a request that may need the client's input on the
// go-sdk path: the go-sdk's handler for it is the call.
func (e *calls) sdkCall(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	hc := &core.HeldCall{Method: method, Request: core.Request{Meta: req.GetParams().GetMeta(), Version: Version}}
	if x := req.GetExtra(); x != nil {
		hc.Request.Principal = x.TokenInfo
	}
	var empty mcp.Result // the result type, for an input_required answer
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		hc.Key, hc.Retry, empty = p.Name, p.RequestState != "", &mcp.CallToolResult{}
	case *mcp.GetPromptParams:
		hc.Key, hc.Retry, empty = p.Name, p.RequestState != "", &mcp.GetPromptResult{}
	case *mcp.ReadResourceParams:
		hc.Key, hc.Retry, empty = p.URI, p.RequestState != "", &mcp.ReadResourceResult{}
	default:
		return next(ctx, method, req)
	}
	params, err := json.Marshal(req.GetParams())
	if err != nil {
		return nil, err
	}
	hc.Params = params
	caps, err := metaCapabilities(hc.Request.Meta)
	if err != nil {
		return nil, err
	}
	hc.Request.Capabilities = caps
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		// The go-sdk puts what it sends with the request's context on the
		// request's stream, at the log level of its _meta.
		hc.Sink = sessionSink{ss}
	}
	hc.ClientKey = clientKey(ctx)
	// The go-sdk's handler is the call: it decodes the arguments, and
	// reaches the core as any of its handlers does.
	out, err := e.serve(ctx, hc, func(ctx context.Context, rq core.Request) (mcp.Result, error) {
		return next(context.WithValue(ctx, detachedKey{}, &detached{client: rq.Client, caps: rq.Capabilities}), method, req)
	})
	if err != nil {
		return nil, err
	}
	if out.Input != nil {
		return &inputRequired{Result: empty, in: out.Input}, nil
	}
	if out.Task != nil {
		return &taskCreated{Result: empty, e: e, d: out.Task}, nil
	}
	return out.Result, nil
}

// detached is a call that the middleware runs apart from the request that
// started it, through a go-sdk handler: a multi round-trip request's
// call, which may wait for the client's next request. Its client sink
// (the Manager's) and the client's capabilities (the request's _meta)
// replace the session's, and it belongs to no session and no HTTP
// request: their end must not cancel it (the Manager bounds it).
type detached struct {
	client plugin.Host
	caps   *mcp.ClientCapabilities
}

// detachedKey marks the context of a detached call.
type detachedKey struct{}

// detachedRequest describes for the core a call that a go-sdk handler
// serves with ctx (Hooks.Request), given the request as the handler knows
// it (principal, id, _meta): if the middleware detached it, as a request
// of 2026-07-28 with the call's client sink and capabilities, and no
// scope. Its _meta is already the one plugins get (Hooks.PluginMeta). It reports false for any other call.
func detachedRequest(ctx context.Context, rq core.Request) (core.Request, bool) {
	d, _ := ctx.Value(detachedKey{}).(*detached)
	if d == nil {
		return core.Request{}, false
	}
	return core.Request{Principal: rq.Principal, ID: rq.ID, Meta: rq.Meta, Version: Version, Capabilities: d.caps, Client: d.client}, true
}

// metaCapabilities reads the client capabilities in a request's _meta, as
// the fast path does.
func metaCapabilities(meta mcp.Meta) (*mcp.ClientCapabilities, error) {
	c, _ := meta[wire.MetaClientCapabilities].(map[string]any)
	caps, err := capabilities(c)
	if err != nil {
		return nil, invalidParams("invalid _meta field %q: %v", wire.MetaClientCapabilities, err)
	}
	return caps, nil
}

// sessionSink is the Sink of a request the go-sdk serves: it sends the
// notifications through the request's session, with the request's
// context, so that the go-sdk puts them on that request's stream and
// applies that request's log level.
type sessionSink struct{ ss *mcp.ServerSession }

func (s sessionSink) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	return s.ss.Log(ctx, p)
}

func (s sessionSink) NotifyProgress(ctx context.Context, p *mcp.ProgressNotificationParams) error {
	return s.ss.NotifyProgress(ctx, p)
}
