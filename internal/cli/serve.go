package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"github.com/hangar-mcp/hangar/internal/catalog"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
)

type serveFlags struct {
	runtimeFlags
	config  string
	http    string
	stdio   bool
	offline bool
	replica string
	noFast  bool
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.runtimeFlags.register(fs)
	fs.StringVar(&f.config, "config", "", "configuration file (YAML or JSON)")
	fs.StringVar(&f.http, "http", "", "serve Streamable HTTP on this address (host:port), at path "+server.Path)
	fs.BoolVar(&f.stdio, "stdio", false, "serve on stdin/stdout even if the configuration sets http.addr")
	fs.BoolVar(&f.offline, "offline", false, "use no network for plugin sources: https:// and oci:// plugins must be in the cache (oci:// also in the lock file)")
	fs.StringVar(&f.replica, "replica", "", "name this replica `NAME`: every session ID starts with NAME"+server.ReplicaSeparator+", so that a load balancer can send a session's requests back to this server, and MCP 2026-07-28 retries are forwarded to it (overrides mrtr.replica; see docs/production.md, docs/mcp-2026.md)")
	fs.BoolVar(&f.noFast, "no-fast-path", false, "answer tools/call and resources/read through the MCP SDK too, not Hangar's faster path (same answers; for comparison)")
}

var serveCmd = &command{
	name:  "serve",
	args:  "[--config FILE] [--http ADDR | --stdio] [--offline] [PLUGIN.wasm ...]",
	short: "serve plugins as one MCP server",
	long: `Serve loads the plugins of the configuration file, and any .wasm files
named on the command line (with default limits and no grants), and serves
them as one MCP server: over stdio, for a client that starts hangar (a
desktop application), unless --http or the configuration's http.addr
gives an address, where it serves Streamable HTTP at http://ADDR/mcp.

Serving starts before the plugins are compiled: their lists come from the
catalog cache, else from wazero's interpreter, else from compiling them;
a plugin compiles on its first call (compile: lazy) or in the background
(compile: eager). The log says "ready" once every plugin is compiled or
waits for its first call; progress shows as bars on a terminal, as log
lines otherwise (docs/startup.md).

HTTP refuses Hosts and browser Origins that are not local or allowed, and
listens only on loopback unless http.auth is set (bearer tokens or OAuth,
each session seeing only the plugins its token allows); /healthz, /readyz
and /metrics answer beside /mcp. MCP 2026-07-28 clients are served on the
same endpoint and on stdio, without sessions (docs/production.md,
docs/mcp-2026.md).

With --config, the configuration is reloaded when the file changes and on
SIGHUP, without dropping sessions; a configuration that fails to load
leaves the old plugins serving. SIGINT or SIGTERM stops the server: calls
in progress may finish for http.drain_timeout. Logs go to stderr. Serving
stdio with a terminal as stdin, hangar says it waits there for a client.`,
	flags: func(fs *flag.FlagSet) { new(serveFlags).register(fs) },
}

func init() { serveCmd.run = runServe }

func runServe(ctx context.Context, env *Env, args []string) error {
	var f serveFlags
	fs := serveCmd.flagSet(env.Stderr)
	f.register(fs)
	files, err := serveCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	logOut := &progressWriter{w: env.Stderr}
	log, err := logger(logOut, f.logLevel)
	if err != nil {
		return err
	}

	cfg := config.Default()
	if f.config != "" {
		if cfg, err = loadConfig(f.config); err != nil {
			return unsetHint(err)
		}
	}
	for _, file := range files {
		cfg.Plugins = append(cfg.Plugins, config.Single(file))
	}
	if err := uniqueNames(cfg.Plugins); err != nil {
		return err
	}
	if len(cfg.Plugins) == 0 {
		fmt.Fprintln(env.Stderr, "hangar serve: no plugins: give --config FILE or PLUGIN.wasm files")
		return errUsage
	}
	setMemoryLimit(cfg.Plugins, log) // memlimit.go
	addr := f.http
	if addr == "" && !f.stdio {
		addr = cfg.HTTP.Addr
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = withOffline(ctx, f.offline)
	sv, err := newService(ctx, cfg, addr, log) // service.go
	if err != nil {
		return err
	}
	defer sv.close()

	// No plugin reaches the deployment's other servers, from its start on
	// (and none reaches this one: see below).
	defer plugin.ProtectDeployment(cfg.Deployment.Addresses)()

	// The listener comes first: an address in use fails now, before any
	// plugin loads.
	var ln net.Listener
	if addr != "" {
		if ln, err = listen(addr, cfg.HTTP); err != nil {
			return err
		}
		defer ln.Close()
		defer plugin.ProtectAddr(ln.Addr())() // plugins never reach Hangar's own server, from their start on
	}

	cacheDir, removeCopy := servingCacheDir(f.cacheDir, log) // cachedir.go
	if cacheDir != "" {
		// The engine opens in the background (startup.go); a cache
		// directory that cannot be made fails the start now.
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			removeCopy()
			return fmt.Errorf("creating compilation cache: %w", err)
		}
	}
	engine := openEngine(cacheDir)
	var bgs []*background
	defer func() {
		// A compilation still running uses the engine's cache: leave it
		// to the exit.
		if e, err := engine(); err == nil && backgroundDone(bgs, time.Second) {
			e.Close(context.Background())
			removeCopy()
		}
	}()
	start := time.Now()
	// Plugins are listed first and compiled on their first call or in the
	// background (startup.go).
	prog := newProgress(log, logOut, len(cfg.Plugins), canDrawBars(env.Stderr) && log.Enabled(ctx, slog.LevelInfo))
	st := &starter{engine: engine, cacheDir: cacheDir, store: catalog.Open(cacheDir), log: log, progress: prog}
	sv.starting = st.notListed
	// The probes answer from now on, on the operations listener and beside
	// /mcp; MCP requests wait for the server.
	if err := sv.startOps(); err != nil {
		return err
	}
	var web *webServer
	if ln != nil {
		web = startHTTP(ln, cfg.HTTP, sv, log)
		defer web.close()
	}
	if bgs, err = st.start(ctx, cfg.Plugins); err != nil {
		return err
	}
	ms := make([]server.Mount, len(bgs))
	for i, b := range bgs {
		ms[i] = server.Mount{Loading: b.loading, Prefix: b.spec.Prefix, TaskModes: b.spec.Tasks}
	}
	sopts := &server.Options{Logger: log, Version: version(), DisableFastPath: f.noFast}
	sv.serverOptions(sopts, f.replica)
	srv, err := server.New(ctx, ms, sopts)
	if err != nil {
		for _, b := range bgs {
			b.close(context.Background())
		}
		prog.close()
		return err
	}
	sv.srv.Store(srv) // for /readyz
	log.Info("plugins listed; serving", "count", len(bgs), "elapsed", time.Since(start).Round(time.Millisecond))
	// The goroutines below log to env.Stderr: they end before serve
	// returns, so that nothing writes to it once its caller reads it.
	ownCtx, stopOwn := context.WithCancel(ctx)
	var own sync.WaitGroup
	own.Add(1)
	go func() { defer own.Done(); whenLoaded(ownCtx, bgs, start, prog, log) }()

	r := &reloader{path: f.config, extra: cfg.Plugins[len(cfg.Plugins)-len(files):], http: cfg.HTTP, service: [4]any{cfg.Metrics, cfg.Tracing, cfg.Deployment, cfg.MRTR}, engine: engine, srv: srv, log: log, metrics: sv.metrics}
	for _, b := range bgs {
		r.current = append(r.current, running{spec: b.spec, digest: moduleDigest(b.spec), bg: b})
	}
	defer r.closeCurrent(context.Background())
	// Before the plugins close: no reload runs while they do.
	defer func() { stopOwn(); own.Wait() }()
	own.Add(1)
	if f.config != "" {
		go func() { defer own.Done(); r.run(ownCtx) }()
	} else {
		go func() { defer own.Done(); ignoreHangup(ownCtx, log) }()
	}

	if ln == nil {
		defer sv.metrics.SessionOpened(metrics.TransportStdio)()
		terminalHint(env.Stdin, log) // stdiohint.go
		return serveStdio(ctx, srv, cfg.HTTP.DrainTimeout, log)
	}
	if f.http == "" { // http.addr of the configuration: a stdio client may not know
		go answerStdin(env.Stdin, env.Stdout, log, ln.Addr().String(), f.config)
	}
	return web.serve(ctx, srv, cfg.HTTP, sv, log)
}

// serveStdio serves srv on stdin and stdout until the client leaves or ctx
// is done; then calls in progress get drainTimeout to finish.
func serveStdio(ctx context.Context, srv *server.Server, drainTimeout time.Duration, log *slog.Logger) error {
	// The session outlives ctx by the drain, so that answers can be sent.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	errc := make(chan error, 1)
	go func() { errc <- srv.RunStdio(runCtx) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drain(srv, drainTimeout, log)
	// End the session and wait for it: the SDK writes the answers of the
	// calls that just returned (those cancelled at the drain timeout
	// included) before it closes stdout. Returning at once could end the
	// process first, leaving those calls without an answer.
	stopRun()
	select {
	case <-errc:
	case <-time.After(shutdownGrace):
	}
	return nil
}

// drain lets the calls in progress finish, for at most timeout, then
// cancels the others, which answer with an error.
func drain(srv *server.Server, timeout time.Duration, log *slog.Logger) {
	log.Info("stopping: letting calls in progress finish", "drain_timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if n := srv.Drain(ctx); n > 0 {
		log.Warn("calls cancelled at the drain timeout", "calls", n)
	}
}

// uniqueNames checks that plugins named on the command line do not clash
// with each other or with the configured ones.
func uniqueNames(specs []config.Plugin) error {
	seen := map[string]string{}
	for _, p := range specs {
		if prev, ok := seen[p.Name]; ok {
			return fmt.Errorf("two plugins are named %q (%s and %s); rename a file or use a configuration", p.Name, prev, p.Source)
		}
		seen[p.Name] = p.Source
	}
	return nil
}

// shutdownGrace bounds how long a stopping server waits, after the drain,
// for the HTTP requests still open.
const shutdownGrace = 5 * time.Second

// answerGrace is the pause between the drain and the end of the sessions.
const answerGrace = 250 * time.Millisecond

// listen opens the HTTP listener, capped at the configuration's connection
// limit.
func listen(addr string, hc config.HTTP) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return netutil.LimitListener(ln, connectionCap(hc)), nil
}

// connectionCap is the most HTTP connections served at once.
func connectionCap(hc config.HTTP) int {
	if hc.MaxConnections != 0 {
		return hc.MaxConnections
	}
	return connectionLimit()
}

// webServer is the HTTP server of `hangar serve`. It serves from the
// moment the listener opens, through a gate: until the MCP server is
// built, the gate answers the health probes itself and holds every other
// request, so that a slow start never leaves a probe unanswered.
type webServer struct {
	hs   *http.Server
	gate *gate
	errc chan error
	url  string
}

// startHTTP serves ln through a gate, at once.
func startHTTP(ln net.Listener, hc config.HTTP, sv *service, log *slog.Logger) *webServer {
	probes := http.NewServeMux()
	probes.Handle(server.HealthPath, server.HealthHandler())
	probes.Handle(server.ReadyPath, server.ReadyHandler(sv.readiness, hc.Auth == nil))
	g := &gate{probes: probes, open: make(chan struct{})}
	w := &webServer{
		gate: g,
		errc: make(chan error, 1),
		url:  sv.scheme() + "://" + ln.Addr().String() + server.Path,
		hs: &http.Server{
			// A request a plugin made (of this server's, or of another
			// Hangar's) is refused before anything else.
			Handler:   plugin.RefuseMarked(g),
			TLSConfig: sv.tls,
			// The body's read timeout is the handler's (server.HTTPOptions): the
			// server's ReadTimeout would also cut off the detection of clients
			// that go away during a long call.
			ReadHeaderTimeout: hc.ReadHeaderTimeout,
			IdleTimeout:       hc.IdleTimeout,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	go func() {
		if sv.tls != nil {
			w.errc <- w.hs.ServeTLS(ln, "", "")
			return
		}
		w.errc <- w.hs.Serve(ln)
	}()
	log.Debug("listening: answering health probes while the plugins are listed", "addr", ln.Addr().String())
	return w
}

// close stops a server whose start failed: requests held by the gate are
// answered 503. It does nothing to one that served.
func (w *webServer) close() {
	if w.gate.fail() {
		w.hs.Close()
	}
}

// serve serves srv until ctx is done, then drains it.
func (w *webServer) serve(ctx context.Context, srv *server.Server, hc config.HTTP, sv *service, log *slog.Logger) error {
	conns := connectionCap(hc)
	hopts := &server.HTTPOptions{
		AllowedOrigins: hc.AllowedOrigins,
		AllowedHosts:   hc.AllowedHosts,
		LegacySSE:      hc.LegacySSE,
		SessionTimeout: hc.SessionIdleTimeout,
		MaxSessions:    hc.MaxSessions,
		ReadTimeout:    hc.ReadTimeout,
		WriteTimeout:   hc.WriteTimeout,
		// Listen streams hold their connections: automatic, they may take
		// half of them, so that other clients always find one.
		MaxListens:          cmp.Or(hc.MaxListens, max(1, conns/2)),
		MaxListensPerClient: hc.MaxListensPerClient,
	}
	for _, p := range hc.TrustedProxies {
		// Normalized by the configuration's decoder.
		hopts.TrustedProxies = append(hopts.TrustedProxies, netip.MustParsePrefix(p))
	}
	sv.httpOptions(hopts) // auth, readiness, metrics: service.go
	hs := w.hs
	w.gate.set(srv.HTTPHandler(hopts))
	log.Info("serving MCP over Streamable HTTP", "url", w.url,
		"max_connections", conns, "max_sessions", hc.MaxSessions, "max_listens", hopts.MaxListens)
	sv.logAccess(w.url)
	select {
	case err := <-w.errc:
		return err
	case <-ctx.Done():
	}
	// Calls in progress finish (or are answered with an error at the drain
	// timeout) while the listener still takes the requests they may need,
	// such as a client's answer to an elicitation.
	drain(srv, hc.DrainTimeout, log)
	// The answers are written; give clients a moment to take them in before
	// their event streams end, which some treat as the session's failure.
	hs.SetKeepAlivesEnabled(false)
	time.Sleep(answerGrace)
	// Open event streams would hold Shutdown for the whole grace period:
	// end the sessions, so that only requests in progress are waited for.
	var wg sync.WaitGroup
	for ss := range srv.MCP().Sessions() {
		wg.Go(func() { ss.Close() })
	}
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// gate hands requests to the MCP server's handler once it is set. Until
// then it answers the probes itself and holds other requests, until the
// handler is set (or the start fails: 503) or the client gives up.
type gate struct {
	probes http.Handler
	open   chan struct{} // closed by set or fail
	once   sync.Once
	h      http.Handler // nil once the start failed
}

// set opens the gate to h.
func (g *gate) set(h http.Handler) {
	g.once.Do(func() {
		g.h = h
		close(g.open)
	})
}

// fail opens the gate to nothing, unless it is open, and reports whether
// it did.
func (g *gate) fail() (failed bool) {
	g.once.Do(func() {
		close(g.open)
		failed = true
	})
	return failed
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-g.open:
	default:
		if r.URL.Path == server.HealthPath || r.URL.Path == server.ReadyPath {
			g.probes.ServeHTTP(w, r)
			return
		}
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
	}
	if g.h == nil {
		http.Error(w, "Service Unavailable: hangar failed to start", http.StatusServiceUnavailable)
		return
	}
	g.h.ServeHTTP(w, r)
}

// fallbackConnections caps HTTP connections when the open-file limit is
// unknown.
const fallbackConnections = 4096

// connectionsFor is the connection cap for an open-file limit of n.
func connectionsFor(n uint64) int {
	const most = 1_000_000
	reserve := max(64, n/4)
	if n <= reserve+16 {
		return 16
	}
	return int(min(n-reserve, most))
}
