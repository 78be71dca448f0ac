package sessions

import (
	"context"
	"fmt"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Another edge may serve its own versions on the go-sdk server the
// sessions run (the edge of MCP 2026-07-28, whose requests have no
// session: the go-sdk serves each in a session of its own, or in the
// stdio session it arrives on, with no initialize first). The composition
// root (package server) gives that edge's Hooks to New; this package
// knows of the edge what they say and one thing more, that a request of
// 2026-07-28 or later names its version in _meta (wire.VersionInMeta):
// it serves such requests as any other but for that, sending older
// sessions only what their version defines (dropUndefined) and keeping no
// grant for the session of such a request (observeRequests). Hooks.Versions
// does not drive either.

// Hooks are what another edge adds to the go-sdk server. Every field is
// required (New checks): the go-sdk server speaks Versions only to have
// Middleware serve them, the go-sdk's handlers describe its calls through
// Request (else as calls of the session the go-sdk made for the request,
// which ends with it), and their results' cache hints are SetCacheable's.
type Hooks struct {
	// Versions are the protocol versions the edge serves, newest first:
	// the go-sdk server speaks them before the sessions' own
	// (wire.SessionVersions).
	Versions []string
	// Middleware is receiving middleware, inside all of the sessions'
	// but keepUnsubscribe (which keeps the go-sdk's own unsubscribe
	// handler, with no edge's checks in front of it): the edge serves its
	// requests there, and adapts what the go-sdk answers them.
	Middleware mcp.Middleware
	// SetCacheable sets the cache hints (ttlMs, cacheScope) of the results
	// that carry them (mcp.ServerOptions.SetCacheable). Requests of the
	// sessions' versions are sent none (dropUndefined).
	SetCacheable func(ctx context.Context, req mcp.Request, c *mcp.Cacheable)
	// Request describes for the core a call that a go-sdk handler serves
	// for the edge, as its Middleware runs it with ctx: given the
	// request as the sessions know it (its principal, JSON-RPC id and
	// _meta), it returns the request as the edge describes it and true,
	// or false for a call of the sessions.
	Request func(ctx context.Context, rq core.Request) (core.Request, bool)
	// PluginMeta returns the _meta that plugins get of a request of the
	// edge's versions (wire.VersionInMeta), given the request's: the
	// sessions describe such a request to the core (and to Request) with
	// it, whichever of their handlers serves it.
	PluginMeta func(meta mcp.Meta) mcp.Meta
}

// check reports a field of h (if not nil) that is unset: a field added
// to Hooks is required as soon as it is declared.
func (h *Hooks) check() error {
	if h == nil {
		return nil
	}
	v := reflect.ValueOf(*h)
	for i := range v.NumField() {
		if v.Field(i).IsZero() || v.Field(i).Kind() == reflect.Slice && v.Field(i).Len() == 0 {
			return fmt.Errorf("sessions: Options.Hooks.%s is required: the composition root left it unset", v.Type().Field(i).Name)
		}
	}
	return nil
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
