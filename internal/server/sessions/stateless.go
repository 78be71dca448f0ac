package sessions

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// MCP 2026-07-28 has no sessions: each request carries its protocol
// version and the client's capabilities in _meta, and the go-sdk serves
// such a request in a session of its own (Streamable HTTP in its stateless
// mode) or in the stdio session it arrives on, with no initialize first.
// The edge of that version (package stateless) adds what Hangar needs to
// the go-sdk server (StatelessHooks); this package serves those requests as any
// other, and keeps sending older sessions only what their version defines.

// StatelessHooks are what the edge of MCP 2026-07-28 adds to the go-sdk server.
// With it, the server speaks 2026-07-28 too, per request.
type StatelessHooks struct {
	// Middleware is the innermost receiving middleware: it serves the
	// requests of 2026-07-28 that may need the client's input (multi
	// round-trip requests) and adapts what the go-sdk answers them.
	Middleware mcp.Middleware
	// SetCacheable sets the cache hints (ttlMs, cacheScope) of the results
	// that carry them (mcp.ServerOptions.SetCacheable). Requests of older
	// versions are sent none.
	SetCacheable func(ctx context.Context, req mcp.Request, c *mcp.Cacheable)
}

// VersionInMeta reports whether req is a request of MCP 2026-07-28 or
// later:
// its _meta names the protocol version, as the go-sdk decides.
func VersionInMeta(req mcp.Request) bool {
	return wire.AtLeast(MetaVersion(req), core.Version20260728)
}

// MetaVersion returns the protocol version req's _meta names, or "".
func MetaVersion(req mcp.Request) string {
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() {
		return ""
	}
	v, _ := p.GetMeta()[wire.MetaProtocolVersion].(string)
	return v
}

// Detached describes a call that the 2026-07-28 edge runs apart from the
// request that started it: a multi round-trip request's call, which may
// wait for the client's next request. Its client sink and the client's
// capabilities replace the session's, and it belongs to no session and no
// HTTP request: their end must not cancel it (the edge bounds it).
type Detached struct {
	Client       plugin.Host
	Capabilities *mcp.ClientCapabilities
}

type detachedKey struct{}

// WithDetached returns ctx marking the call the go-sdk's handler serves
// with it as detached, d.
func WithDetached(ctx context.Context, d *Detached) context.Context {
	return context.WithValue(ctx, detachedKey{}, d)
}

func detachedFrom(ctx context.Context) *Detached {
	d, _ := ctx.Value(detachedKey{}).(*Detached)
	return d
}

// dropUndefined is receiving middleware, the outermost: it removes from
// the results of requests of versions before 2026-07-28 the cache hints
// (ttlMs, cacheScope) that the go-sdk adds to them, which those versions
// do not define.
func dropUndefined(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil || VersionInMeta(req) {
			return res, err
		}
		return WithoutCacheHints(res), nil
	}
}

// WithoutCacheHints returns res without its cache hints (ttlMs and
// cacheScope), for a client of a version before 2026-07-28: the result of
// a list or a read, as it marshals for such a client. Other results are
// returned as they are.
func WithoutCacheHints(res mcp.Result) mcp.Result {
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		return legacyTools{r}
	case *mcp.ListPromptsResult:
		return legacyPrompts{r}
	case *mcp.ListResourcesResult:
		return legacyResources{r}
	case *mcp.ListResourceTemplatesResult:
		return legacyTemplates{r}
	case *mcp.ReadResourceResult:
		return legacyRead{r}
	}
	return res
}

// The results of lists and reads as versions before 2026-07-28 define
// them: their members in the go-sdk's order, without ttlMs and
// cacheScope. The go-sdk marshals list results without HTML escaping, a
// read's with (its MarshalJSON uses json.Marshal); so do these.

type legacyTools struct{ *mcp.ListToolsResult }

func (r legacyTools) MarshalJSON() ([]byte, error) {
	return wire.MarshalPlain(struct {
		Meta       mcp.Meta    `json:"_meta,omitempty"`
		NextCursor string      `json:"nextCursor,omitempty"`
		Tools      []*mcp.Tool `json:"tools"`
	}{r.Meta, r.NextCursor, r.Tools})
}

type legacyPrompts struct{ *mcp.ListPromptsResult }

func (r legacyPrompts) MarshalJSON() ([]byte, error) {
	return wire.MarshalPlain(struct {
		Meta       mcp.Meta      `json:"_meta,omitempty"`
		NextCursor string        `json:"nextCursor,omitempty"`
		Prompts    []*mcp.Prompt `json:"prompts"`
	}{r.Meta, r.NextCursor, r.Prompts})
}

type legacyResources struct{ *mcp.ListResourcesResult }

func (r legacyResources) MarshalJSON() ([]byte, error) {
	return wire.MarshalPlain(struct {
		Meta       mcp.Meta        `json:"_meta,omitempty"`
		NextCursor string          `json:"nextCursor,omitempty"`
		Resources  []*mcp.Resource `json:"resources"`
	}{r.Meta, r.NextCursor, r.Resources})
}

type legacyTemplates struct {
	*mcp.ListResourceTemplatesResult
}

func (r legacyTemplates) MarshalJSON() ([]byte, error) {
	return wire.MarshalPlain(struct {
		Meta              mcp.Meta                `json:"_meta,omitempty"`
		NextCursor        string                  `json:"nextCursor,omitempty"`
		ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
	}{r.Meta, r.NextCursor, r.ResourceTemplates})
}

type legacyRead struct{ *mcp.ReadResourceResult }

func (r legacyRead) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta     mcp.Meta                `json:"_meta,omitempty"`
		Contents []*mcp.ResourceContents `json:"contents"`
	}{r.Meta, r.Contents})
}
