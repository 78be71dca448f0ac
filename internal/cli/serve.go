package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
)

type serveFlags struct {
	runtimeFlags
	config  string
	http    string
	stdio   bool
	offline bool
	noFast  bool
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.runtimeFlags.register(fs)
	fs.StringVar(&f.config, "config", "", "configuration file (YAML or JSON)")
	fs.StringVar(&f.http, "http", "", "serve Streamable HTTP on this address (host:port), at path "+server.Path)
	fs.BoolVar(&f.stdio, "stdio", false, "serve on stdin/stdout even if the configuration sets http.addr")
	fs.BoolVar(&f.offline, "offline", false, "use no network for plugin sources: https:// and oci:// plugins must be in the cache (oci:// also in hangar.lock)")
	fs.BoolVar(&f.noFast, "no-fast-path", false, "answer tools/call and resources/read through the MCP SDK too, not Hangar's faster path (same answers; for comparison)")
}

var serveCmd = &command{
	name:  "serve",
	args:  "[--config FILE] [--http ADDR] [--offline] [PLUGIN.wasm ...]",
	short: "serve plugins as one MCP server",
	long: `Serve loads the plugins of the configuration file, and any .wasm files
named on the command line (with default limits and no grants), and serves
them as one MCP server.

The transport is stdio unless --http is given or the configuration sets
http.addr; then it is Streamable HTTP at http://ADDR/mcp (and, if the
configuration sets http.legacy_sse, the HTTP+SSE transport of protocol
2024-11-05 for older clients at http://ADDR/sse). The HTTP server
binds where told (use 127.0.0.1 to stay local), refuses requests whose Host
is not localhost or listed in http.allowed_hosts, and browser requests whose
Origin is not on localhost or listed in http.allowed_origins.

With --config, the configuration is reloaded when the file changes and on
SIGHUP: the new plugin set is loaded and checked beside the old one, then
swapped in without dropping sessions (clients are told the lists changed).
Calls in progress finish on the old plugins; plugins whose configuration
and module are unchanged keep running as they are. A configuration that
fails to load or check leaves the old set serving, and the log says why.
The http section takes effect at the next start. Without --config, SIGHUP
is ignored (with a warning in the log).

Over HTTP, sessions idle for http.session_idle_timeout are closed, at most
http.max_sessions are open at once (one more gets HTTP 503), connections are
capped by http.max_connections (by default from the open-file limit), and a
client that stops reading loses its connection after http.write_timeout.
Deleting a session, or losing the connection of a request, cancels its
calls.

Logs go to stderr. SIGINT or SIGTERM stops the server gracefully: calls in
progress may finish for http.drain_timeout (also with stdio), then those
still running are cancelled and answered with an error; requests arriving
meanwhile get an error.`,
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
	log, err := logger(env.Stderr, f.logLevel)
	if err != nil {
		return err
	}

	cfg := &config.Config{HTTP: config.DefaultHTTP()}
	if f.config != "" {
		if cfg, err = config.Load(f.config); err != nil {
			return err
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
	addr := f.http
	if addr == "" && !f.stdio {
		addr = cfg.HTTP.Addr
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = withOffline(ctx, f.offline)

	e, err := plugin.NewEngine(f.cacheDir)
	if err != nil {
		return err
	}
	defer e.Close(context.Background())
	start := time.Now()
	plugins, err := loadPlugins(ctx, e, cfg.Plugins, log)
	if err != nil {
		return err
	}
	srv, err := server.New(ctx, mounts(cfg.Plugins, plugins), &server.Options{Logger: log, Version: version(), DisableFastPath: f.noFast})
	if err != nil {
		closeAll(ctx, plugins)
		return err
	}
	log.Info("plugins ready", "count", len(plugins), "elapsed", time.Since(start).Round(time.Millisecond))

	r := &reloader{path: f.config, extra: cfg.Plugins[len(cfg.Plugins)-len(files):], http: cfg.HTTP, engine: e, srv: srv, log: log}
	for i, p := range plugins {
		r.current = append(r.current, running{spec: cfg.Plugins[i], digest: moduleDigest(cfg.Plugins[i]), plugin: p})
	}
	defer r.closeCurrent(context.Background())
	if f.config != "" {
		go r.run(ctx)
	} else {
		go ignoreHangup(ctx, log)
	}

	if addr == "" {
		return serveStdio(ctx, srv, cfg.HTTP.DrainTimeout, log)
	}
	return serveHTTP(ctx, srv, addr, cfg.HTTP, log)
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

func serveHTTP(ctx context.Context, srv *server.Server, addr string, hc config.HTTP, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	conns := hc.MaxConnections
	if conns == 0 {
		conns = connectionLimit()
	}
	ln = netutil.LimitListener(ln, conns)
	defer plugin.ProtectAddr(ln.Addr())() // plugins never reach Hangar's own server
	hs := &http.Server{
		Handler: srv.HTTPHandler(&server.HTTPOptions{
			AllowedOrigins: hc.AllowedOrigins,
			AllowedHosts:   hc.AllowedHosts,
			LegacySSE:      hc.LegacySSE,
			SessionTimeout: hc.SessionIdleTimeout,
			MaxSessions:    hc.MaxSessions,
			ReadTimeout:    hc.ReadTimeout,
			WriteTimeout:   hc.WriteTimeout,
		}),
		// The body's read timeout is the handler's (server.HTTPOptions): the
		// server's ReadTimeout would also cut off the detection of clients
		// that go away during a long call.
		ReadHeaderTimeout: hc.ReadHeaderTimeout,
		IdleTimeout:       hc.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+server.Path,
		"max_connections", conns, "max_sessions", hc.MaxSessions)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
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
