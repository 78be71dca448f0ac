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
// A plugin may be mounted while it is still loading ([Loading]): the server
// offers the lists it is expected to offer, calls wait for it, and
// [Server.Readiness] names the plugins not loaded yet (see loading.go).
package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// ErrConflict reports a tool or prompt name, or a resource URI, that two
// plugins offer.
var ErrConflict = errors.New("offered by two plugins")

// Mount is a plugin as the server presents it.
type Mount struct {
	// Plugin is the plugin, or nil when Loading is set.
	Plugin *plugin.Plugin
	// Loading, if set, is the plugin while it is still loading, and
	// after (see loading.go).
	Loading *Loading
	// Prefix, if set, is put before the plugin's names ("prefix_name") and
	// URIs ("prefix+uri") to keep them apart from other plugins'.
	Prefix string
}

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

// Server is an MCP server over a fixed set of plugins.
type Server struct {
	mcp    *mcp.Server
	log    *slog.Logger
	mounts []*mount
	calls  *tracker // calls in progress

	metrics *metrics.Metrics // nil: none
	tracer  trace.Tracer
	grants  sync.Map // *mcp.ServerSession -> *grantView, for sessions allowed some plugins (observe.go)

	noFastPath bool // Options.DisableFastPath

	installMu sync.Mutex // serializes installing plugin sets

	mu        sync.Mutex
	tools     map[string]*mount // exposed name -> owner
	prompts   map[string]*mount
	resources map[string]*mount // exposed URI -> owner
	templates map[string]*mount // exposed URI template -> owner

	templateOrder []compiledTemplate // templates, sorted; nil: to be made again
}

// mount is a Mount plus what the server has registered for it.
type mount struct {
	Mount
	name string
	srv  *Server

	seq     [4]uint64       // by plugin.ListKind, the Seq of the lists offered; guarded by srv.mu
	updates resourceUpdates // resource-updated notifications not yet sent
	retired bool            // replaced by a reload; guarded by srv.mu
	from    *plugin.Lists   // with Loading: the lists the mount was installed with

	// What the server registered for the plugin, by exposed name or URI
	// (or URI template), for the requests that reach it; guarded by srv.mu.
	toolEntries map[string]*toolEntry
	mimeTypes   map[string]string // of resources and templates
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
	s := &Server{log: o.Logger, calls: newTracker(), metrics: o.Metrics, tracer: tracerOf(o.TracerProvider), noFastPath: o.DisableFastPath}
	ms, catalogs, err := s.prepare(ctx, mounts)
	if err != nil {
		return nil, err
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
		Capabilities:              capabilities(),
		CompletionHandler:         s.complete,
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		RootsListChangedHandler:   s.rootsListChanged,
	})
	s.mcp.AddReceivingMiddleware(adaptResults)
	s.mcp.AddSendingMiddleware(adaptRequests, s.fastSend) // fastSend innermost
	s.mcp.AddReceivingMiddleware(s.observeRequests)       // observe.go
	s.mcp.AddSendingMiddleware(s.hideListChanges)
	s.metrics.SetPlugins(s.pluginStats)
	s.install(ms, catalogs)
	return s, nil
}

// Reload replaces the server's plugins with mounts, keeping every session.
// The new set is listed and checked first: if that fails, the old set goes
// on serving and Reload returns why. Otherwise the new registrations replace
// the old at once, clients are told what lists changed, and calls already
// running finish on the old plugins, which stay owned by the caller.
func (s *Server) Reload(ctx context.Context, mounts []Mount) error {
	ms, catalogs, err := s.prepare(ctx, mounts)
	if err != nil {
		return err
	}
	s.install(ms, catalogs)
	return nil
}

// prepare lists every plugin of a new set and checks it for conflicts.
func (s *Server) prepare(ctx context.Context, mounts []Mount) ([]*mount, []*catalog, error) {
	ms := make([]*mount, len(mounts))
	for i, m := range mounts {
		ms[i] = &mount{Mount: m, srv: s, toolEntries: map[string]*toolEntry{}, mimeTypes: map[string]string{}}
		if m.Loading != nil {
			ms[i].name = m.Loading.Name()
		} else {
			ms[i].name = m.Plugin.Name()
		}
	}
	catalogs := make([]*catalog, len(ms))
	var errs []error
	for i, m := range ms {
		if m.Loading != nil {
			m.from = m.Loading.lists()
			catalogs[i] = m.catalogOf(m.from)
			continue
		}
		c, err := m.list(ctx, allLists)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		catalogs[i] = c
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if err := checkConflicts(ms, catalogs); err != nil {
		return nil, nil, err
	}
	return ms, catalogs, nil
}

// install makes ms the server's plugins. Names the old set offered and the
// new one does not are removed last, so that a name both offer never
// disappears in between.
func (s *Server) install(ms []*mount, catalogs []*catalog) {
	s.installMu.Lock()
	defer s.installMu.Unlock()

	s.mu.Lock()
	for _, m := range s.mounts {
		m.retired = true
	}
	prev := [4]map[string]*mount{s.tools, s.prompts, s.resources, s.templates}
	s.tools, s.prompts = map[string]*mount{}, map[string]*mount{}
	s.resources, s.templates = map[string]*mount{}, map[string]*mount{}
	s.templateOrder = nil
	s.mounts = ms
	s.mu.Unlock()

	for i, m := range ms {
		m.apply(catalogs[i], allLists)
		if m.Loading != nil {
			m.Loading.attach(m)
		} else {
			m.Plugin.SetEvents(m)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := [4]map[string]*mount{s.tools, s.prompts, s.resources, s.templates}
	remove := [4]func(...string){s.mcp.RemoveTools, s.mcp.RemovePrompts, s.mcp.RemoveResources, s.mcp.RemoveResourceTemplates}
	for k := range prev {
		var gone []string
		for key := range prev[k] {
			if _, ok := now[k][key]; !ok {
				gone = append(gone, key)
			}
		}
		if len(gone) > 0 {
			remove[k](gone...)
		}
	}
}

// MCP returns the go-sdk server, to be run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// capabilities advertises every feature a plugin may offer, whether or not
// the current plugins do, since a reload or a list change may add them.
// A session of an older protocol version is sent only those its version
// defines (see capabilitiesFor).
func capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Logging:     &mcp.LoggingCapabilities{},
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Completions: &mcp.CompletionCapabilities{},
	}
}

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

// exposedName is a tool or prompt name as clients see it.
func (m *mount) exposedName(name string) string {
	if m.Prefix == "" {
		return name
	}
	return m.Prefix + "_" + name
}

// exposedURI is a resource URI or URI template as clients see it.
func (m *mount) exposedURI(uri string) string {
	if m.Prefix == "" {
		return uri
	}
	return m.Prefix + "+" + uri
}

// pluginURI undoes exposedURI.
func (m *mount) pluginURI(uri string) string {
	return strings.TrimPrefix(uri, m.exposedURI(""))
}

// pluginName undoes exposedName.
func (m *mount) pluginName(name string) string {
	return strings.TrimPrefix(name, m.exposedName(""))
}

// checkConflicts reports every exposed name or URI claimed by two plugins.
func checkConflicts(mounts []*mount, catalogs []*catalog) error {
	type claim struct{ kind, key string }
	owner := map[claim]string{}
	var errs []error
	add := func(m *mount, kind, key string) {
		c := claim{kind, key}
		if prev, ok := owner[c]; ok && prev != m.name {
			errs = append(errs, fmt.Errorf("%s %q is %w %q and %q; give one of them a prefix", kind, key, ErrConflict, prev, m.name))
			return
		}
		owner[c] = m.name
	}
	for i, m := range mounts {
		c := catalogs[i]
		for _, t := range c.tools {
			add(m, "tool", m.exposedName(t.tool.Name))
		}
		for _, p := range c.prompts {
			add(m, "prompt", m.exposedName(p.Name))
		}
		for _, r := range c.resources {
			add(m, "resource", m.exposedURI(r.URI))
		}
		for _, t := range c.templates {
			add(m, "resource template", m.exposedURI(t.URITemplate))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}
