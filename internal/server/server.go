// Package server serves a set of plugins as one MCP server, on the
// modelcontextprotocol go-sdk.
//
// Each plugin's tools, resources, resource templates and prompts are
// registered under the plugin's own names (or, with a prefix, "prefix_name"
// for tools and prompts and "prefix+uri" for URIs, including the URIs of
// resource contents, resource links and embedded resources in what a plugin
// returns; the prefix is stripped again before a plugin sees a name or URI a
// client sends). A name or URI offered by
// two plugins is an error at start-up. Calls are routed to the plugin that
// owns the name; host imports made during a call reach the client of the
// session that made it.
//
// Transports are separate from the handlers: serve the server over stdio
// (or any stream) with [Server.RunStdio] or [Server.ConnectIO], or over
// Streamable HTTP (and optionally the legacy HTTP+SSE transport) with
// [Server.HTTPHandler]. In front of the go-sdk, a fast path of Hangar's own
// answers tools/call and resources/read (fastpath.go).
//
// Each session is sent only what the protocol version it negotiated
// defines (see versions.go): capabilities, content types and elicitation.
//
// The plugins are served by the dispatch core (package core), which the
// ways in call: the go-sdk's sessions and the fast path.
//
// A plugin may be mounted while it is still loading ([Loading]): the server
// offers the lists it is expected to offer, calls wait for it, and
// [Server.Readiness] names the plugins not loaded yet (see loading.go).
package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"regexp"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
)

// ErrConflict reports a tool or prompt name, or a resource URI, that two
// plugins offer.
var ErrConflict = core.ErrConflict

// Mount is a plugin as the server presents it: the plugin (or, while it
// loads, its Loading) and its prefix.
type Mount = core.Mount

// Options configure a Server. A nil *Options means defaults.
type Options struct {
	// Logger receives the server's diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// Version is reported to clients in serverInfo.
	Version string
	// PageSize is the number of items a list answer holds; zero means the
	// SDK default.
	PageSize int
	// Metrics, if set, records requests, plugin calls, sessions and the
	// plugins' state.
	Metrics *metrics.Metrics
	// TracerProvider, if set, gets a span for each MCP request and each
	// plugin call. Nil means no tracing.
	TracerProvider trace.TracerProvider
	// Replica, if set, starts every session ID (then Replica~RANDOM), so
	// that a load balancer in front of several servers can send a session's
	// requests to the server that created it. 1 to 63 letters, digits, ".",
	// "_" and "-", starting with a letter or digit.
	Replica string
	// DisableFastPath serves every request through the go-sdk, instead of
	// answering tools/call and resources/read in front of it (see
	// ConnectIO and HTTPHandler). The answers are the same; the fast path
	// is faster.
	DisableFastPath bool
}

// ReplicaRE is the syntax of Options.Replica.
var ReplicaRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ReplicaSeparator ends the replica's name at the start of a session ID.
const ReplicaSeparator = "~"

// Server is an MCP server over a set of plugins.
type Server struct {
	core    *core.Core
	mcp     *mcp.Server
	log     *slog.Logger
	metrics *metrics.Metrics // nil: none

	noFastPath bool // Options.DisableFastPath

	grants   sync.Map // *mcp.ServerSession -> *grantView, for sessions allowed some plugins (observe.go)
	smu      sync.Mutex
	sessions map[*mcp.ServerSession]*session
	requests httpRequests // HTTP requests in progress (calls.go)
}

// New lists every plugin and builds the server. It fails if two plugins
// offer the same name or URI. Plugins stay owned by the caller.
func New(ctx context.Context, mounts []Mount, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Replica != "" && !ReplicaRE.MatchString(o.Replica) {
		return nil, fmt.Errorf("invalid replica name %q: use 1 to 63 letters, digits, \".\", \"_\" and \"-\", starting with a letter or digit", o.Replica)
	}
	s := &Server{
		core:       core.New(&core.Options{Logger: o.Logger, Metrics: o.Metrics, TracerProvider: o.TracerProvider}),
		log:        o.Logger,
		metrics:    o.Metrics,
		noFastPath: o.DisableFastPath,
		sessions:   map[*mcp.ServerSession]*session{},
		requests:   httpRequests{byToken: map[string]*httpRequest{}},
	}
	var sessionID func() string // nil: the SDK's
	if o.Replica != "" {
		sessionID = func() string { return o.Replica + ReplicaSeparator + rand.Text() }
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "hangar", Version: o.Version}, &mcp.ServerOptions{
		GetSessionID:              sessionID,
		Logger:                    sdkLogger(o.Logger), // per-session records at debug
		SupportedProtocolVersions: sessionProtocolVersions(),
		PageSize:                  o.PageSize,
		Capabilities:              core.Capabilities(),
		CompletionHandler:         s.complete,
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		RootsListChangedHandler:   s.rootsListChanged,
	})
	s.mcp.AddReceivingMiddleware(adaptResults)
	s.mcp.AddSendingMiddleware(adaptRequests, s.fastSend) // fastSend innermost
	s.mcp.AddReceivingMiddleware(s.observeRequests)       // observe.go
	s.mcp.AddSendingMiddleware(s.hideListChanges)
	s.core.Listen(registrar{s})
	if err := s.core.Reload(ctx, mounts); err != nil {
		return nil, err
	}
	s.metrics.SetPlugins(s.core.PluginStats)
	return s, nil
}

// Reload replaces the server's plugins with mounts, keeping every session.
// The new set is listed and checked first: if that fails, the old set goes
// on serving and Reload returns why. Otherwise the new registrations replace
// the old at once, clients are told what lists changed, and calls already
// running finish on the old plugins, which stay owned by the caller.
func (s *Server) Reload(ctx context.Context, mounts []Mount) error {
	return s.core.Reload(ctx, mounts)
}

// Readiness reports whether every plugin is loaded. If not, notReady names
// each plugin that is not, with what it is doing ("loading") or why it
// failed ("failed to load: ...").
func (s *Server) Readiness() (ready bool, notReady map[string]string) {
	return s.core.Readiness()
}

// registrar registers what the core offers with the go-sdk server, whose
// handlers send the requests back to the core.
type registrar struct{ s *Server }

func (r registrar) Offer(item any) (err error) {
	// The go-sdk panics on what it refuses (an invalid URI template, say).
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	s := r.s
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

func (r registrar) Withdraw(kind core.Kind, keys ...string) {
	switch kind {
	case core.Tools:
		r.s.mcp.RemoveTools(keys...)
	case core.Prompts:
		r.s.mcp.RemovePrompts(keys...)
	case core.Resources:
		r.s.mcp.RemoveResources(keys...)
	case core.Templates:
		r.s.mcp.RemoveResourceTemplates(keys...)
	}
}

// ListChanged does nothing: the go-sdk tells sessions of a list's change
// itself, when its registrations change.
func (r registrar) ListChanged(plugin.ListKind) {}

// ResourceUpdated tells the sessions subscribed to uri.
func (r registrar) ResourceUpdated(uri string) error {
	return r.s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// MCP returns the go-sdk server, to be run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// sessionProtocolVersions are the protocol versions the server speaks: those
// with sessions, up to 2025-11-25. From 2026-07-28 on, a server may not send
// requests to the client while serving one (sampling, elicitation and roots
// become multi-round-trip results), which a plugin blocked in a host import
// cannot answer; clients of that version fall back to 2025-11-25.
func sessionProtocolVersions() []string {
	var vs []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v <= lastSessionProtocol {
			vs = append(vs, v)
		}
	}
	return vs
}

const lastSessionProtocol = "2025-11-25"
