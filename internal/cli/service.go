package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/tasks"
	"github.com/hangar-mcp/hangar/internal/telemetry"
)

// service is what `hangar serve` runs beside MCP for operators: metrics,
// tracing, the operations listener, authentication and TLS.
type service struct {
	log     *slog.Logger
	cfg     *config.Config
	addr    string // the MCP HTTP address; "" for stdio
	metrics *metrics.Metrics
	tracing *telemetry.Tracing // nil: off
	auth    *auth.Authenticator
	tls     *tls.Config // nil: plain HTTP
	ops     *http.Server
	// srv is the MCP server, once the start has built it; until then,
	// starting names the plugins the start waits for (see readiness).
	srv      atomic.Pointer[server.Server]
	starting func() map[string]string
}

// readiness says whether every plugin is loaded, for /readyz beside /mcp
// and on the operations listener: the server's, once it is built; before,
// not ready, with the plugins still being listed.
func (sv *service) readiness() (bool, map[string]string) {
	if srv := sv.srv.Load(); srv != nil {
		return srv.Readiness()
	}
	notReady := map[string]string{}
	if sv.starting != nil {
		notReady = sv.starting()
	}
	return false, notReady
}

// newService checks that HTTP on addr is allowed by cfg (an address other
// machines can reach needs http.auth), and sets up metrics, tracing,
// authentication and TLS.
func newService(ctx context.Context, cfg *config.Config, addr string, log *slog.Logger) (*service, error) {
	sv := &service{log: log, cfg: cfg, addr: addr, metrics: metrics.New(version())}
	if addr != "" {
		if err := checkAddr(addr, cfg.HTTP.Auth); err != nil {
			return nil, err
		}
		if cfg.HTTP.Auth != nil {
			a, err := auth.New(cfg.HTTP.Auth, &auth.Options{Logger: log})
			if err != nil {
				return nil, fmt.Errorf("http.auth: %w", err)
			}
			sv.auth = a
		}
		if cfg.HTTP.TLS != nil {
			c, err := newCertificate(cfg.HTTP.TLS.Cert, cfg.HTTP.TLS.Key, log)
			if err != nil {
				return nil, fmt.Errorf("http.tls: %w", err)
			}
			sv.tls = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get}
		}
	}
	if cfg.Tracing != nil {
		t, err := telemetry.New(ctx, cfg.Tracing, version())
		if err != nil {
			return nil, err
		}
		sv.tracing = t
		log.Info("tracing", "endpoint", cfg.Tracing.Endpoint, "sample_ratio", cfg.Tracing.SampleRatio)
	}
	return sv, nil
}

// checkAddr refuses to serve HTTP without authentication where other
// machines can reach it.
func checkAddr(addr string, a *config.Auth) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--http %s: want host:port, such as 127.0.0.1:8080", addr)
	}
	if a == nil && !config.IsLoopback(addr) {
		return errors.New(config.ExposedWithoutAuth(addr))
	}
	return nil
}

// serverOptions adds what the service records to the server's options.
func (sv *service) serverOptions(o *server.Options, replica string) {
	o.Metrics = sv.metrics
	if sv.tracing != nil {
		o.TracerProvider = sv.tracing
	}
	m := sv.cfg.MRTR
	o.Replica = m.Replica
	if replica != "" {
		o.Replica = replica
	}
	o.StateKey, o.PreviousStateKeys = m.StateKey, m.PreviousStateKeys
	o.ParkTimeout, o.MaxParked, o.MaxParkedPerPrincipal = m.ParkTimeout, m.MaxParked, m.MaxParkedPerPrincipal
	o.PeerURL, o.Peers, o.ForwardTimeout = m.PeerURL, m.Peers, m.ForwardTimeout
	if t := sv.cfg.Tasks; t.Enabled {
		o.TaskAfter = t.After
		o.Tasks = &tasks.Options{
			MaxTasks:             t.MaxTasks,
			MaxTasksPerOwner:     t.MaxTasksPerClient,
			MaxResultBytes:       int(t.MaxResultBytes),
			MaxKeptBytes:         t.MaxKeptBytes,
			MaxKeptBytesPerOwner: t.MaxKeptBytesPerClient,
			Keep:                 t.Keep,
			MaxRun:               t.MaxRun,
			PollInterval:         t.PollInterval,
			MaxListeners:         t.MaxListeners,
			MaxListenersPerOwner: t.MaxListenersPerClient,
		}
	}
	if m.StateKey != nil {
		sv.log.Info("MCP 2026-07-28 request states are sealed with the configured key", "from", m.StateKeyFrom, "previous_keys", len(m.PreviousStateKeys))
	}
}

// httpOptions adds authentication, readiness and metrics to the options of
// the MCP HTTP handler.
func (sv *service) httpOptions(o *server.HTTPOptions) {
	o.Auth = sv.auth
	o.Readiness = sv.readiness
	if sv.cfg.Metrics.Addr == "" {
		o.Metrics = sv.metrics.Handler()
	}
}

// scheme is the URL scheme of the MCP endpoint.
func (sv *service) scheme() string {
	if sv.tls != nil {
		return "https"
	}
	return "http"
}

// logAccess says at start who may use HTTP.
func (sv *service) logAccess(url string) {
	switch a := sv.cfg.HTTP.Auth; {
	case a == nil:
		sv.log.Info("HTTP is loopback-only: no http.auth is configured, so any program on this machine may call every plugin", "url", url)
	default:
		sv.log.Info("HTTP requires a bearer token", "static_tokens", len(a.Tokens), "oauth", a.OAuth != nil)
	}
}

// startOps serves /metrics, /healthz and /readyz on metrics.addr, if set.
func (sv *service) startOps() error {
	addr := sv.cfg.Metrics.Addr
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics.addr: %w", err)
	}
	unprotect := plugin.ProtectAddr(ln.Addr())
	mux := http.NewServeMux()
	mux.Handle(server.MetricsPath, sv.metrics.Handler())
	mux.Handle(server.HealthPath, server.HealthHandler())
	mux.Handle(server.ReadyPath, server.ReadyHandler(sv.readiness, true))
	sv.ops = &http.Server{Handler: plugin.RefuseMarked(mux), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(sv.log.Handler(), slog.LevelWarn)}
	go func() {
		defer unprotect()
		if err := sv.ops.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			sv.log.Error("operations listener failed", "error", err)
		}
	}()
	sv.log.Info("serving metrics and health", "url", "http://"+ln.Addr().String()+server.MetricsPath)
	return nil
}

// close stops the operations listener and flushes the spans.
func (sv *service) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if sv.ops != nil {
		sv.ops.Shutdown(ctx)
	}
	if sv.tracing != nil {
		if err := sv.tracing.Shutdown(ctx); err != nil {
			sv.log.Warn("exporting the last spans", "error", err)
		}
	}
}

// certificate is a TLS certificate read from files, read again when they
// change (as when a certificate is renewed), at most once per
// certCheckInterval.
type certificate struct {
	cert, key string
	log       *slog.Logger

	mu      sync.Mutex
	current *tls.Certificate
	stamp   [2]time.Time // modification times of the files read
	checked time.Time
}

const certCheckInterval = 10 * time.Second

func newCertificate(cert, key string, log *slog.Logger) (*certificate, error) {
	c := &certificate{cert: cert, key: key, log: log}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certificate) load() error {
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return err
	}
	c.current = &pair
	c.stamp = c.stat()
	return nil
}

func (c *certificate) stat() [2]time.Time {
	var t [2]time.Time
	for i, f := range []string{c.cert, c.key} {
		if fi, err := os.Stat(f); err == nil {
			t[i] = fi.ModTime()
		}
	}
	return t
}

func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= certCheckInterval {
		c.checked = now
		if c.stat() != c.stamp {
			if err := c.load(); err != nil {
				c.log.Error("reading the renewed TLS certificate; serving the previous one", "error", err)
			} else {
				c.log.Info("TLS certificate reloaded", "cert", c.cert)
			}
		}
	}
	return c.current, nil
}
