package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/fastpath"
	"github.com/hangar-mcp/hangar/internal/server/forward"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
	"github.com/hangar-mcp/hangar/internal/server/stateless"
	"github.com/hangar-mcp/hangar/internal/tasks"
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

	// The multi round-trip requests of MCP 2026-07-28 (docs/mcp-2026.md):
	// a call whose plugin asks the client for input waits, parked, for the
	// client's retry, which its requestState leads back to it.

	// StateKey seals every requestState: 32 bytes, the same on every
	// replica. Nil means a random key for this process, whose states no
	// other replica can open.
	StateKey []byte
	// PreviousStateKeys open states too (they never seal), for rotating
	// StateKey without failing the retries in flight.
	PreviousStateKeys [][]byte
	// ParkTimeout bounds how long a parked call waits for its retry; zero
	// means 10 minutes.
	ParkTimeout time.Duration
	// MaxParked and MaxParkedPerPrincipal cap the parked calls, on this
	// server and per authenticated caller; zero means the defaults (1000
	// and 8).
	MaxParked, MaxParkedPerPrincipal int
	// PeerURL, such as "http://{replica}:8080/mcp", or Peers (replica name
	// to URL) say where the other replicas' MCP endpoints are: a retry
	// that reaches this replica over HTTP while another holds its call is
	// forwarded there. Neither: it is told to start again.
	PeerURL string
	// ForwardTimeout bounds a retry forwarded to another replica, its
	// answer included; zero means forward.DefaultTimeout.
	ForwardTimeout time.Duration
	Peers          map[string]string

	// Tasks, if set, offers the tasks extension (io.modelcontextprotocol/tasks)
	// to 2026-07-28 clients that declare it: a tools/call still running
	// after TaskAfter becomes a task, read with tasks/get. Its ids are
	// authenticated with a key derived from the state keys. Nil: the
	// extension is not offered.
	Tasks *tasks.Options
	// TaskAfter is the threshold after which a call becomes a task; zero
	// means tasks.DefaultAfter.
	TaskAfter time.Duration
}

// ReplicaRE is the syntax of Options.Replica (package mrtr's, which
// New checks).
var ReplicaRE = mrtr.ReplicaRE

// ReplicaSeparator ends the replica's name at the start of a session ID.
const ReplicaSeparator = "~"

// Server is an MCP server over a set of plugins: the dispatch core and
// the ways in to it.
type Server struct {
	core      *core.Core
	sdk       *sessions.Server   // the go-sdk's sessions
	requests  *httpcalls.Tracker // the HTTP requests that carry calls, of every edge
	fast      *fastpath.Path     // in front of them
	stateless *stateless.Edge    // MCP 2026-07-28, per request
	mrtr      *mrtr.Manager      // its parked calls
	tasks     *tasks.Table       // its tasks; nil: the extension is not offered
	fwd       *forward.Forwarder // nil: no peers
	log       *slog.Logger
	metrics   *metrics.Metrics // nil: none

	owners  sync.Map // HTTP session ID -> the token subject that opened it (httplimits.go)
	slots   sync.Map // HTTP session ID -> chan struct{}, closed once its place under max_sessions is free (httplimits.go)
	streams streams  // the HTTP requests in progress (httplimits.go)
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
	var sessionID func() string // nil: the SDK's
	if o.Replica != "" {
		sessionID = func() string { return o.Replica + ReplicaSeparator + rand.Text() }
	}
	m, err := mrtr.New(mrtr.Options{
		Replica:               o.Replica,
		Key:                   o.StateKey,
		PreviousKeys:          o.PreviousStateKeys,
		ParkTimeout:           o.ParkTimeout,
		MaxParked:             o.MaxParked,
		MaxParkedPerPrincipal: o.MaxParkedPerPrincipal,
	})
	if err != nil {
		return nil, err
	}
	if o.StateKey == nil && (o.Replica != "" || o.PeerURL != "" || len(o.Peers) > 0) {
		o.Logger.Warn("no state key is configured (mrtr.state_key_file or mrtr.state_key_env): this replica seals MCP 2026-07-28 request states with a random key of its own, so a retry that reaches another replica must start its request again")
	}
	var fwd *forward.Forwarder
	if o.PeerURL != "" || len(o.Peers) > 0 {
		if fwd, err = forward.New(forward.Options{Self: o.Replica, PeerURL: o.PeerURL, Peers: o.Peers, Timeout: o.ForwardTimeout, Logger: o.Logger}); err != nil {
			m.Close()
			return nil, err
		}
	}
	if o.TaskAfter < 0 {
		m.Close()
		return nil, errors.New("Options.TaskAfter must not be negative")
	}
	var tt *tasks.Table
	if o.Tasks != nil {
		if tt, err = tasks.New(m, *o.Tasks); err != nil {
			m.Close()
			return nil, fmt.Errorf("tasks: %w", err)
		}
	}
	// closeAll ends what New made, when it fails after this point.
	closeAll := func() {
		if tt != nil {
			tt.Close()
		}
		m.Close()
	}
	// The core holds the calls of 2026-07-28 that wait for the client's
	// input, and makes tasks of them: the edge reaches package mrtr and the
	// table through it for calls, and itself only to route a retry to the
	// replica that holds its call and to serve tasks/*.
	c := core.New(&core.Options{Logger: o.Logger, Metrics: o.Metrics, TracerProvider: o.TracerProvider, Manager: m, Tasks: tt, TaskAfter: o.TaskAfter})
	// The edges are peers over the core: none imports another. What one
	// needs of another is wired here. The HTTP requests that carry calls
	// are tracked once, for all of them (httpcalls).
	requests := httpcalls.NewTracker()
	so := &stateless.Options{Logger: o.Logger, Version: o.Version, Manager: m, Forwarder: fwd, DisableFastPath: o.DisableFastPath, Requests: requests, Tasks: tt}
	hooks, err := stateless.NewHooks(c, so)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("the edge of MCP 2026-07-28: %w", err)
	}
	sdk, err := sessions.New(c, &sessions.Options{
		Logger:    o.Logger,
		Version:   o.Version,
		PageSize:  o.PageSize,
		SessionID: sessionID,
		Requests:  requests,
		// What the fast path's calls send goes on their own streams.
		Send: fastpath.Send,
		// The go-sdk server speaks 2026-07-28 too, through the edge of
		// that version, whose calls its handlers describe as the edge says.
		// sessions.New refuses Hooks with a field left unset.
		Hooks: &sessions.Hooks{
			Versions:     hooks.Versions,
			Middleware:   hooks.Middleware,
			SetCacheable: hooks.SetCacheable,
			Request:      hooks.Request,
			PluginMeta:   hooks.PluginMeta,
		},
	})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("the go-sdk's sessions: %w", err)
	}
	edge, err := stateless.New(c, sdk.StatelessHTTP(), so)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("the edge of MCP 2026-07-28: %w", err)
	}
	fast, err := fastpath.New(c, fastSessions{sdk}, &fastpath.Options{Logger: o.Logger, Disabled: o.DisableFastPath, Stateless: edge, Requests: requests})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("the fast path: %w", err)
	}
	// The 2026-07-28 edge first: a tool it refuses (an invalid x-mcp-header
	// annotation) is then never offered to the go-sdk.
	c.Listen(edge)
	c.Listen(sdk)
	s := &Server{
		core:     c,
		sdk:      sdk,
		requests: requests,
		// The 2026-07-28 edge sees each stdio line before the fast path.
		fast:      fast,
		stateless: edge,
		mrtr:      m,
		tasks:     tt,
		fwd:       fwd,
		log:       o.Logger,
		metrics:   o.Metrics,
	}
	if err := c.Reload(ctx, mounts); err != nil {
		closeAll()
		return nil, err
	}
	s.metrics.SetPlugins(c.PluginStats)
	s.metrics.SetMRTR(s.mrtrStats)
	if tt != nil {
		s.metrics.SetTasks(s.taskStats)
	}
	return s, nil
}

// fastSessions are the go-sdk's sessions as the fast path sees them
// (fastpath.Sessions): the same, but for the type of a session's state.
type fastSessions struct{ *sessions.Server }

func (f fastSessions) State(ss *mcp.ServerSession) fastpath.SessionState { return f.Server.State(ss) }

// mrtrStats reports the parked calls and forwarded retries, for metrics.
func (s *Server) mrtrStats() metrics.MRTR {
	st := s.mrtr.Stats()
	out := metrics.MRTR{
		Parked:               st.Parked,
		Held:                 st.Held,
		InputRequests:        st.ParkedTotal,
		Resumed:              st.Resumed,
		Expired:              st.Expired,
		Evicted:              st.Evicted,
		DroppedNotifications: st.DroppedNotifications,
		Refusals: map[string]uint64{
			"cap":             st.CapRefusals,
			"capability":      st.CapabilityRefusals,
			"state_invalid":   st.InvalidStates,
			"state_expired":   st.ExpiredStates,
			"state_replayed":  st.ReplayedStates,
			"state_principal": st.PrincipalRefusals,
			"state_mismatch":  st.MismatchRefusals,
			"state_in_flight": st.InFlightRefusals,
		},
	}
	ls := s.stateless.ListenStats()
	out.Listens, out.ListenEvicted = ls.Open, ls.Evicted
	out.ListenRefusals = map[string]uint64{"server": ls.RefusedServer, "client": ls.RefusedClient}
	if s.fwd != nil {
		f := s.fwd.Stats()
		out.Forwarded, out.ForwardFailures = f.Forwarded, f.Gone
	}
	return out
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

// Drain stops the server taking calls and waits for the calls in progress
// to finish, until ctx is done. Then it cancels those still running, each
// of which answers its client with a JSON-RPC error, and waits briefly for
// them. Calls that arrive meanwhile are refused with a JSON-RPC error, and
// new HTTP sessions with HTTP 503. Drain reports how many calls it
// cancelled.
func (s *Server) Drain(ctx context.Context) int {
	// 2026-07-28's listen streams end with their result.
	s.stateless.Stop()
	// No call becomes a task any more. Running tasks may finish until
	// shortly before the drain timeout, then are cancelled, so that each
	// has a final status a client reads with tasks/get while the server
	// still answers. Their calls are the core's: the core's drain, at the
	// same time, refuses new calls and sees the tasks' calls end.
	var tasksDrained chan struct{}
	var tasksCancelled int
	if s.tasks != nil {
		tasksDrained = make(chan struct{})
		tctx, cancel := taskDrainContext(ctx)
		go func() {
			defer close(tasksDrained)
			defer cancel()
			tasksCancelled = s.tasks.Drain(tctx)
		}()
	}
	// A parked call waits for a client that may never come back: it ends
	// now, not at the drain timeout, and its retry learns to start again.
	s.mrtr.Drain()
	n := s.core.Drain(ctx)
	if tasksDrained != nil {
		// Every task is final. Those the drain cancelled are read until
		// the drain timeout (taskReadTime): their clients poll. Then the
		// table closes, before the Manager whose calls its tasks are.
		<-tasksDrained
		if tasksCancelled > 0 {
			<-ctx.Done()
		}
		s.tasks.Close()
	}
	// Parked calls count as calls in progress: those no retry answered
	// were cancelled with the others. No call parks any more.
	s.mrtr.Close()
	// The answers are on their way: let their HTTP requests write them,
	// but for the clients that stopped reading.
	stop := make(chan struct{})
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		s.streams.cutStalled(stop)
	}()
	s.requests.Wait("", core.CancelGrace)
	close(stop)
	<-cut
	return n
}

// MCP returns the go-sdk server, to be run on a transport.
func (s *Server) MCP() *mcp.Server { return s.sdk.MCP() }

// ConnectIO connects one MCP session served over r and w: newline-delimited
// JSON-RPC, as the go-sdk's mcp.IOTransport speaks it (mcp.StdioTransport
// on os.Stdin and os.Stdout), with the fast path in front unless
// [Options.DisableFastPath]. The session closes r and w when it ends.
// Connections made with the go-sdk server ([Server.MCP]) directly work too,
// but without the fast path, and their requests' ids do not reach plugins.
func (s *Server) ConnectIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, error) {
	return s.fast.ConnectIO(ctx, r, w)
}

// RunIO serves one session over r and w (see [Server.ConnectIO]) until the
// client ends it or ctx is done, as mcp.Server.Run does.
func (s *Server) RunIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	ss, err := s.ConnectIO(ctx, r, w)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-done
		return ctx.Err()
	case err := <-done:
		return err
	}
}

// RunStdio serves one session over os.Stdin and os.Stdout (see
// [Server.RunIO]). As mcp.StdioTransport, it closes stdin at the end, and
// leaves stdout open.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.RunIO(ctx, os.Stdin, nopCloser{os.Stdout})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ConnectClient connects client to the server in this process, over the
// go-sdk's in-memory transports: one session, served exactly as sessions
// over stdio or HTTP are. `hangar call` and package plugintest use it. The
// returned function ends the session and waits for the server's side of it.
func (s *Server) ConnectClient(ctx context.Context, client *mcp.Client) (*mcp.ClientSession, func(), error) {
	return s.sdk.ConnectClient(ctx, client)
}

// taskReadTime is how long before the drain timeout the running tasks are
// cancelled: time for a client polling at tasks.DefaultPollInterval to read
// their final status.
const taskReadTime = 2 * tasks.DefaultPollInterval

// taskDrainContext is the context of the tasks' drain: ctx, ending
// taskReadTime before ctx's deadline (at once if that is past).
func taskDrainContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-taskReadTime))
	}
	return context.WithCancel(ctx)
}

// taskStats reports the tasks table's gauges and counters, for metrics.
func (s *Server) taskStats() metrics.Tasks {
	st := s.tasks.Stats()
	return metrics.Tasks{
		Tasks:         st.Tasks,
		Running:       st.Running,
		InputRequired: st.InputRequired,
		KeptBytes:     st.KeptBytes,
		ReservedBytes: st.ReservedBytes,
		Listeners:     st.Listeners,
		Created:       st.Created,
		Ended:         map[string]uint64{"completed": st.Completed, "failed": st.Failed, "cancelled": st.Cancelled},
		Expired:       st.Expired,
		Refusals: map[string]uint64{
			"cap":              st.CapFallbacks,
			"result_too_large": st.TooLarge,
			"kept_full":        st.KeptFull,
			"kept_full_client": st.KeptFullOwner,
			"listeners":        st.ListenRefusals,
		},
		Unknown:              st.Unknown,
		Drained:              st.Drained,
		DroppedNotifications: st.DroppedEvents,
	}
}
