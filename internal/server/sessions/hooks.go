package sessions

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Another edge may serve its own versions on the go-sdk server the
// sessions run (the edge of MCP 2026-07-28, whose requests have no
// session: the go-sdk serves each in a session of its own, or in the
// stdio session it arrives on, with no initialize first). The composition
// root (package server) gives that edge's Hooks to New; this package
// knows nothing of the edge but what they say, serves its requests as any
// other, and keeps sending older sessions only what their version
// defines (dropUndefined).

// Hooks are what another edge adds to the go-sdk server.
type Hooks struct {
	// Versions are the protocol versions the edge serves, newest first:
	// the go-sdk server speaks them before the sessions' own
	// (wire.SessionVersions).
	Versions []string
	// Middleware is the innermost receiving middleware: the edge serves
	// its requests there, and adapts what the go-sdk answers them.
	Middleware mcp.Middleware
	// SetCacheable sets the cache hints (ttlMs, cacheScope) of the results
	// that carry them (mcp.ServerOptions.SetCacheable). Requests of the
	// sessions' versions are sent none (dropUndefined).
	SetCacheable func(ctx context.Context, req mcp.Request, c *mcp.Cacheable)
	// Request, if set, describes for the core a call that a go-sdk handler
	// serves for the edge, as its Middleware runs it with ctx: given the
	// request as the sessions know it (its principal, JSON-RPC id and
	// _meta), it returns the request as the edge describes it and true,
	// or false for a call of the sessions.
	Request func(ctx context.Context, rq core.Request) (core.Request, bool)
}

// dropUndefined is receiving middleware, the outermost: it removes from
// the results of requests of versions before 2026-07-28 the cache hints
// (ttlMs, cacheScope) that the go-sdk adds to them, which those versions
// do not define.
func dropUndefined(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil || wire.VersionInMeta(req) {
			return res, err
		}
		return wire.WithoutCacheHints(res), nil
	}
}
