package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// HTTPOptions configure the HTTP transports. A nil *HTTPOptions means
// defaults.
type HTTPOptions struct {
	// AllowedOrigins lists the browser origins (scheme://host[:port]) that
	// may call the server, besides those on localhost. Requests without an
	// Origin header (non-browser clients) are always allowed.
	AllowedOrigins []string
	// AllowedHosts lists Host header values accepted besides localhost,
	// 127.0.0.1 and [::1] (with any port): a request naming another host is
	// refused, which defeats DNS rebinding.
	AllowedHosts []string
	// SessionTimeout closes sessions that have had no request for that long;
	// zero means never.
	SessionTimeout time.Duration
	// MaxSessions caps the sessions open at once; zero means no cap. A
	// client that would open one more gets HTTP 503 with a JSON-RPC error,
	// and the open sessions are unaffected.
	MaxSessions int
	// ReadTimeout bounds the reading of a request's body; zero means none.
	ReadTimeout time.Duration
	// WriteTimeout closes the connection of a client that accepts none of a
	// write to it for that long (a stalled reader); zero means never. It
	// bounds each write, not the life of a stream.
	WriteTimeout time.Duration
	// MaxListens caps the MCP 2026-07-28 subscriptions/listen streams
	// open at once, each of which holds a connection for as long as its
	// client keeps it; zero means no cap but the connections'.
	// MaxListensPerClient caps those of one client (a token's subject, or
	// without Auth the address a request came from); zero means
	// stateless.DefaultMaxListensPerClient. A listen beyond a cap is
	// refused (HTTP 503 or 429, JSON-RPC error -32011) and its connection
	// closed.
	MaxListens, MaxListensPerClient int
	// TrustedProxies are the proxies in front of the server: a request
	// whose connection comes from one of them is told from others, where a
	// client is an address (clients without a token, for the caps on
	// listens, parked calls and tasks), by its X-Forwarded-For header
	// (clientAddress). Nil: every request is its connection's address.
	TrustedProxies []netip.Prefix
	// LegacySSE also serves the HTTP+SSE transport of protocol version
	// 2024-11-05 at [SSEPath], for clients that predate Streamable HTTP. An
	// HTTP+SSE session lasts as long as its event stream. It is ignored when
	// Auth is set: that transport cannot bind a session to its token.
	LegacySSE bool

	// Auth, if set, requires a bearer token of every MCP request; each
	// session sees, and may call, only the plugins its token allows, and is
	// bound to the token's identity. Its protected-resource metadata, if
	// any, is served too.
	Auth *auth.Authenticator
	// Readiness reports whether every plugin is loaded, and names those that
	// are not, with why; served at [ReadyPath]. Nil means ready.
	Readiness func() (ready bool, notReady map[string]string)
	// Metrics, if set, is served at [MetricsPath], behind the same Host and
	// Origin checks as MCP and, with Auth, only to tokens allowed every
	// plugin (the metrics name every plugin and tool).
	Metrics http.Handler
}

// Path is where the HTTP handler serves MCP.
const Path = "/mcp"

// SSEPath is where the HTTP handler serves the legacy HTTP+SSE transport,
// when [HTTPOptions.LegacySSE] is set. A GET opens a session: its event
// stream's first event, "endpoint", names the URL to POST the client's
// messages to (SSEPath?sessionid=...), and the session ends with the
// stream.
const SSEPath = "/sse"

// HTTPHandler serves the server over Streamable HTTP at [Path], with
// sessions, resumable streams (the recent ones, within the bounds of the
// event store: eventstore.go), and Host and Origin checks; with
// [HTTPOptions.LegacySSE], also over HTTP+SSE at [SSEPath], with the same
// checks. [HealthPath] and [ReadyPath] are served to anyone (with Auth,
// /readyz counts the plugins that are not ready without naming them), and
// [MetricsPath] when [HTTPOptions.Metrics] is set. Other paths answer 404.
//
// A session's calls are cancelled when it is deleted or expires, and a
// call is cancelled when the connection of the request that carried it is
// lost; the plugin running it is interrupted. A request pending when its
// session is deleted is answered with a JSON-RPC error.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	s.stateless.LimitListens(o.MaxListens, o.MaxListensPerClient)
	// The sessions' event store, bounded (eventstore.go); it keeps twice
	// as many sessions as may be open, for those closing.
	store := newEventStore(2 * o.MaxSessions)
	// guard below checks Host on every address, not only on loopback; the
	// fast path keeps the sessions' idle timeout (o.SessionTimeout), since
	// it serves requests the go-sdk does not see.
	h := s.fast.HTTP(s.sdk.StreamableHTTP(store), store, o.SessionTimeout)
	mux := http.NewServeMux()
	authn := func(h http.Handler) http.Handler { return h }
	if o.Auth != nil {
		authn = o.Auth.Middleware
		if paths, md := o.Auth.Metadata(); md != nil {
			for _, p := range paths {
				mux.Handle(p, md)
			}
		}
		if o.LegacySSE {
			s.log.Warn("legacy_sse is off: the HTTP+SSE transport cannot bind a session to its token")
			o.LegacySSE = false
		}
	}
	mux.Handle(Path, guard(authn(s.serveMCP(h, o)), o))
	if o.LegacySSE {
		// guard checks Host on every address, as for Path.
		mux.Handle(SSEPath, guard(s.countSSE(s.sdk.SSEHandler()), o))
	}
	mux.Handle(HealthPath, HealthHandler())
	mux.Handle(ReadyPath, ReadyHandler(o.Readiness, o.Auth == nil))
	if o.Metrics != nil {
		mux.Handle(MetricsPath, guard(authn(requireAllPlugins(o.Metrics)), o))
	}
	return mux
}

// serveMCP is the route of every request to the MCP endpoint, once the
// limits every client has (limitClient) are set: a request of MCP
// 2026-07-28 goes to that edge (stateless.Edge: it has no session), any
// other to the sessions (sessionHTTP: the fast path in front of the
// go-sdk), within the sessions' limits (serveSessions). Either is tracked
// (httpcalls), so that its calls end with it.
//
// The way of a 2026-07-28 tools/call, in code: HTTP handler, route, 2026
// edge, core, mrtr, plugin.
//
//   - HTTPHandler: the Host and Origin checks (guard), authentication;
//   - serveMCP, here: the route (stateless.Edge.Takes);
//   - the 2026 edge, stateless.Edge.ServeHTTP: the checks of _meta and of
//     the headers, a retry held by another replica forwarded there, then
//     serveFast and serveQuick for a tool some plugin serves (anything
//     else goes to the go-sdk's stateless handler, whose innermost
//     middleware is the edge's: calls.sdkCall); the edge encodes the
//     answer (input_required, a task, the result, an HTTP status);
//   - the core, core.Core.ServeHeld: it admits a retry (Admit), refuses a
//     task-only tool to a client without the tasks extension, and starts
//     the call in package mrtr (mrtr.Manager.Serve, or tasks.Table.Call
//     for a client that declares the extension);
//   - mrtr: the call gets a host of its own, and is parked when the
//     plugin asks the client for input;
//   - core.Core.CallTool, within that run (or the go-sdk's handler, which
//     calls it): the plugin's call.
func (s *Server) serveMCP(sessionHTTP http.Handler, o HTTPOptions) http.Handler {
	var live atomic.Int64 // sessions open or being opened
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := s.limitClient(w, r, o)
		defer s.streams.remove(cw)
		if s.stateless.Takes(r) {
			// Without a token, the connection's address tells a client
			// from others for the fairness of the cap on parked calls.
			if host := clientAddress(r, o.TrustedProxies); host != "" {
				r = r.WithContext(mrtr.WithClient(r.Context(), host))
			}
			hr, done := s.requests.Track(r, "")
			defer done()
			if o.WriteTimeout > 0 {
				cw.lost = hr.Scope
			}
			s.stateless.ServeHTTP(cw, r)
			return
		}
		s.serveSessions(sessionHTTP, cw, r, o, &live)
	})
}

// countSSE counts the sessions of the HTTP+SSE transport: each lasts as
// long as the GET that opened its event stream.
func (s *Server) countSSE(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			defer s.metrics.SessionOpened(metrics.TransportSSE)()
		}
		next.ServeHTTP(w, r)
	})
}

// requireAllPlugins refuses, with 403, a caller whose token does not allow
// every plugin.
func requireAllPlugins(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ti := sdkauth.TokenInfoFromContext(r.Context()); ti != nil && !auth.GrantOf(ti).All() {
			http.Error(w, "Forbidden: the metrics are for tokens allowed every plugin", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard refuses requests whose Host or Origin is not allowed.
func guard(next http.Handler, o HTTPOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, o.AllowedHosts) {
			http.Error(w, "Forbidden: Host "+r.Host+" is not allowed", http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, o.AllowedOrigins) {
			http.Error(w, "Forbidden: Origin "+origin+" is not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLocalhost(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// hostname strips the port from a host[:port], and brackets from IPv6.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func hostAllowed(host string, allowed []string) bool {
	name := hostname(host)
	if isLocalhost(name) {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool {
		return strings.EqualFold(a, host) || strings.EqualFold(a, name)
	})
}

func originAllowed(origin string, allowed []string) bool {
	if slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLocalhost(u.Hostname())
}
