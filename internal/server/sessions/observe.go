package sessions

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/plugin"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// observeRequests is receiving middleware: it gives each MCP request a
// span and counts it (core.StartRequest, core.EndRequest), and filters the
// lists a caller gets to the plugins its token allows.
func (s *Server) observeRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		var (
			meta        map[string]any
			header      http.Header
			target, key string // key: as sdkID wants it
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
			// A 2026-07-28 request has a session of its own, which is
			// told of no change (the edge of that version serves
			// subscriptions/listen).
			if extra.TokenInfo != nil && !wire.VersionInMeta(req) {
				s.noteGrant(ss, auth.GrantOf(extra.TokenInfo))
			}
		}
		var carrier propagation.TextMapCarrier
		if header != nil {
			carrier = propagation.HeaderCarrier(header)
		}
		id, _ := s.sdkID(extra, method, key)
		ctx, span := s.core.StartRequest(ctx, method, target, meta, carrier, session, id)
		res, err := next(ctx, method, req)
		if err == nil && res != nil {
			s.core.FilterList(tokenOf(extra), clientCapabilities(req), res)
		}
		s.core.EndRequest(span, method, res, err)
		return res, err
	}
}

// clientCapabilities returns the capabilities of the client of a tools/list
// request (nil for another request, or none declared): the session's, or
// the request's own at 2026-07-28. Which tools a client sees depends on
// them (core.Core.FilterList).
func clientCapabilities(req mcp.Request) *mcp.ClientCapabilities {
	if r, ok := req.(*mcp.ServerRequest[*mcp.ListToolsParams]); ok {
		return r.ClientCapabilities()
	}
	return nil
}

// Sessions whose token does not allow every plugin are told a list changed
// only when what they may see of it changed (core.Core.Fingerprint).
// grantView is what such a session saw when it was last told.
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
		v.seen[k] = s.core.Fingerprint(k, g)
	}
	if _, loaded := s.grants.LoadOrStore(ss, v); !loaded {
		go func() {
			ss.Wait()
			s.grants.Delete(ss)
		}()
	}
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
		fp := s.core.Fingerprint(k, v.grant)
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
