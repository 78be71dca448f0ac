package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Core is what the go-sdk's sessions need of the dispatch core: the
// requests they hand it, and its observation. *core.Core implements it.
type Core interface {
	CallTool(ctx context.Context, rq core.Request, name string, args json.RawMessage) (*mcp.CallToolResult, error)
	ReadResource(ctx context.Context, rq core.Request, uri string) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, rq core.Request, name string, args map[string]string) (*mcp.GetPromptResult, error)
	Complete(ctx context.Context, rq core.Request, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
	Subscribe(rq core.Request, uri string) error
	RootsListChanged(ctx context.Context, rq core.Request)

	FilterList(principal *sdkauth.TokenInfo, caps *mcp.ClientCapabilities, res mcp.Result)
	Fingerprint(k plugin.ListKind, g *auth.Grant) string
	StartRequest(ctx context.Context, method, target string, meta map[string]any, carrier propagation.TextMapCarrier, session, id string) (context.Context, trace.Span)
	EndRequest(span trace.Span, method string, res mcp.Result, err error)
}

// Options configure a Server. A nil *Options means defaults.
type Options struct {
	// Logger receives the diagnostics; the go-sdk's info records are
	// demoted to debug (sdkLogger). Nil means slog.Default().
	Logger *slog.Logger
	// Version is reported to clients in serverInfo.
	Version string
	// PageSize is the number of items a list answer holds; zero means the
	// go-sdk's default.
	PageSize int
	// SessionID, if set, makes the ID of each new session; nil means the
	// go-sdk's.
	SessionID func() string
	// Send, if set, is the innermost sending middleware: every message to a
	// client passes through it after Hangar's adaptations (the fast path
	// puts on its own streams what its calls send).
	Send mcp.Middleware
	// Requests keeps the HTTP requests in progress that carry calls: the
	// handlers of the calls they carry find their ids and scopes there.
	// Required: it must be the Tracker that the HTTP layer in front of the
	// go-sdk's handlers tracks its requests with, the one every edge over
	// HTTP is given.
	Requests *httpcalls.Tracker
	// Hooks, if set, are what another edge adds to the go-sdk server
	// (hooks.go): the server then speaks that edge's versions too. Every
	// field is required.
	Hooks *Hooks
}

// Server serves the core to the go-sdk's sessions. It is a core.Listener:
// what the core offers is registered with the go-sdk server, whose
// handlers hand the requests back to the core.
type Server struct {
	core Core
	mcp  *mcp.Server
	log  *slog.Logger

	grants sync.Map // *mcp.ServerSession -> *grantView, for sessions allowed some plugins (observe.go)

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*State

	requests *httpcalls.Tracker                                              // HTTP requests in progress
	adopt    func(ctx context.Context, rq core.Request) (core.Request, bool) // Hooks.Request; nil: none
	subs     subscriptions                                                   // (subscriptions.go)
	// pluginMeta is Hooks.PluginMeta; nil: none.
	pluginMeta func(meta mcp.Meta) mcp.Meta
}

// New returns the go-sdk server of c's sessions. Register it with c
// (core.Core.Listen) before c's first plugins. It fails if
// Options.Requests is nil, or Options.Hooks has a field unset.
func New(c Core, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Requests == nil {
		return nil, errors.New("sessions: Options.Requests is required: the Tracker of the HTTP requests that carry calls, which every edge over HTTP is given")
	}
	if err := o.Hooks.check(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{
		core:     c,
		log:      o.Logger,
		sessions: map[*mcp.ServerSession]*State{},
		requests: o.Requests,
		subs:     subscriptions{bySession: map[*mcp.ServerSession]map[string]bool{}},
	}
	versions := wire.SessionVersions()
	var setCacheable func(context.Context, mcp.Request, *mcp.Cacheable)
	if h := o.Hooks; h != nil {
		versions = append(slices.Clone(h.Versions), versions...)
		setCacheable, s.adopt, s.pluginMeta = h.SetCacheable, h.Request, h.PluginMeta
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "hangar", Version: o.Version}, &mcp.ServerOptions{
		GetSessionID:              o.SessionID,
		Logger:                    sdkLogger(o.Logger), // per-session records at debug
		SupportedProtocolVersions: versions,
		SetCacheable:              setCacheable,
		PageSize:                  o.PageSize,
		Capabilities:              core.Capabilities(),
		CompletionHandler:         s.complete,
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        s.unsubscribeHandler,
		RootsListChangedHandler:   s.rootsListChanged,
	})
	// keepUnsubscribe is the innermost: it keeps the go-sdk's own handler,
	// with no edge's checks in front of it.
	s.mcp.AddReceivingMiddleware(s.keepUnsubscribe)
	if o.Hooks != nil {
		s.mcp.AddReceivingMiddleware(o.Hooks.Middleware)
	}
	s.mcp.AddReceivingMiddleware(codedErrors) // the others see the codes
	s.mcp.AddReceivingMiddleware(adaptResults)
	if o.Send != nil {
		s.mcp.AddSendingMiddleware(adaptRequests, o.Send) // Send innermost
	} else {
		s.mcp.AddSendingMiddleware(adaptRequests)
	}
	s.mcp.AddReceivingMiddleware(s.observeRequests) // observe.go
	s.mcp.AddReceivingMiddleware(dropUndefined)     // outermost: hooks.go
	s.mcp.AddSendingMiddleware(s.hideListChanges)
	return s, nil
}

// MCP returns the go-sdk server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Session returns the session with the given ID, or nil.
func (s *Server) Session(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// Connect connects a session over t, through a connection that passes the
// ids of its requests to the handlers (idConn), so that they reach plugins.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, idTransport{t}, nil)
}

// StreamableHTTP returns the go-sdk's handler of Streamable HTTP, with
// resumable streams kept in store. Hangar's HTTP layer is in front of it:
// it checks Host on every address (not only on loopback), keeps the
// sessions' idle timeout, tracks the HTTP requests that carry calls
// (Options.Requests) and clears the headers only Hangar may set
// (ClearInternalHeaders).
func (s *Server) StreamableHTTP(store mcp.EventStore) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:     sdkLogger(s.log),
		EventStore: store,
		// The fast path keeps the sessions' idle timeout, since it serves
		// requests the go-sdk does not see.
		DisableLocalhostProtection: true,
	})
}

// StatelessHTTP returns the go-sdk's handler of Streamable HTTP in its
// stateless mode, which serves the requests of MCP 2026-07-28, each in a
// session of its own that ends with it. The edge of that version (package
// stateless) is in front of it: it checks each request's _meta and
// headers first, and the HTTP request is tracked (Options.Requests).
func (s *Server) StatelessHTTP() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		Logger:                     sdkLogger(s.log),
		DisableLocalhostProtection: true, // Hangar checks Host on every address
		// A call whose client went away is cancelled, as for Hangar's
		// own streams.
		PropagateRequestCancellation: true,
	})
}

// Offer implements core.Listener: it registers the item with the go-sdk
// server, whose handlers hand its requests to the core.
func (s *Server) Offer(item any) (err error) {
	// The go-sdk panics on what it refuses (an invalid URI template, say).
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	switch it := item.(type) {
	case *mcp.Tool:
		s.mcp.AddTool(it, s.toolHandler)
	case *mcp.Prompt:
		s.mcp.AddPrompt(it, s.promptHandler)
	case *mcp.Resource:
		s.mcp.AddResource(it, s.resourceHandler)
	case *mcp.ResourceTemplate:
		s.mcp.AddResourceTemplate(it, s.resourceHandler)
	default:
		return fmt.Errorf("cannot offer a %T", item)
	}
	return nil
}

// Withdraw implements core.Listener.
func (s *Server) Withdraw(kind core.Kind, keys ...string) {
	switch kind {
	case core.Tools:
		s.mcp.RemoveTools(keys...)
	case core.Prompts:
		s.mcp.RemovePrompts(keys...)
	case core.Resources:
		s.mcp.RemoveResources(keys...)
	case core.Templates:
		s.mcp.RemoveResourceTemplates(keys...)
	}
}

// ListChanged implements core.Listener. It does nothing: the go-sdk tells
// sessions of a list's change itself, when its registrations change.
func (s *Server) ListChanged(plugin.ListKind) {}

// ResourceUpdated implements core.Listener: it tells the sessions
// subscribed to uri.
func (s *Server) ResourceUpdated(uri string) error {
	return s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
}
