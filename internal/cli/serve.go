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
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.runtimeFlags.register(fs)
	fs.StringVar(&f.config, "config", "", "configuration file (YAML or JSON)")
	fs.StringVar(&f.http, "http", "", "serve Streamable HTTP on this address (host:port), at path "+server.Path)
	fs.BoolVar(&f.stdio, "stdio", false, "serve on stdin/stdout even if the configuration sets http.addr")
	fs.BoolVar(&f.offline, "offline", false, "use no network for plugin sources: https:// and oci:// plugins must be in the cache (oci:// also in hangar.lock)")
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

Logs go to stderr. SIGINT or SIGTERM stops the server gracefully.`,
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

	cfg := &config.Config{}
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
	srv, err := server.New(ctx, mounts(cfg.Plugins, plugins), &server.Options{Logger: log, Version: version()})
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
		err := srv.MCP().Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return serveHTTP(ctx, srv, addr, cfg.HTTP, log)
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

// shutdownGrace bounds how long a stopping server waits for requests.
const shutdownGrace = 10 * time.Second

func serveHTTP(ctx context.Context, srv *server.Server, addr string, hc config.HTTP, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer plugin.ProtectAddr(ln.Addr())() // plugins never reach Hangar's own server
	hs := &http.Server{
		Handler: srv.HTTPHandler(&server.HTTPOptions{
			AllowedOrigins: hc.AllowedOrigins,
			AllowedHosts:   hc.AllowedHosts,
			LegacySSE:      hc.LegacySSE,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+server.Path)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// Open event streams would hold Shutdown for the whole grace period:
	// end the sessions, so that only requests in progress are waited for.
	for ss := range srv.MCP().Sessions() {
		ss.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
