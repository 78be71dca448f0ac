package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// Why a call was cancelled without its client asking. Each wraps
// context.Canceled, so a cancelled call answers "request cancelled".
var (
	errSessionClosed  = fmt.Errorf("%w: the session ended", context.Canceled)
	errConnectionLost = fmt.Errorf("%w: the request's connection was lost", context.Canceled)
	errDrainTimeout   = fmt.Errorf("%w: the server is stopping and the drain timeout passed", context.Canceled)
)

// codeServerStopping is the JSON-RPC error code (in the range reserved for
// implementation-defined server errors) of requests refused while the
// server stops.
const codeServerStopping = -32000

// errStopping answers a request that arrives while the server stops.
var errStopping = &jsonrpc.Error{Code: codeServerStopping, Message: "the server is shutting down; try again later"}

// tracker keeps account of the calls in progress, by session and by HTTP
// request, so that the end of a session, the loss of a request's
// connection, or the server's stop ends them.
type tracker struct {
	seq atomic.Uint64 // request tokens

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	requests map[string]*httpRequest // by token
	active   int                     // calls in progress
	draining bool                    // no new calls
	idle     chan struct{}           // closed when active reaches 0, while draining

	stopCtx context.Context // cancelled when the drain timeout passes
	stop    context.CancelCauseFunc
}

// session is the server's state for one MCP session.
type session struct {
	ctx    context.Context // cancelled when the session ends
	cancel context.CancelCauseFunc
	notes  notifier
}

// httpRequest is an HTTP request in progress that carries MCP calls.
type httpRequest struct {
	session string          // its Mcp-Session-Id
	ctx     context.Context // ends with the request, or when its connection is lost
	lost    context.CancelFunc
	running atomic.Int32 // its calls in progress
	calls   []callRef    // the calls it carries, for their ids; set before the go-sdk reads them
}

func newTracker() *tracker {
	t := &tracker{sessions: map[*mcp.ServerSession]*session{}, requests: map[string]*httpRequest{}}
	t.stopCtx, t.stop = context.WithCancelCause(context.Background())
	return t
}

// sessionLocked returns the state of ss, creating it on first use; it is
// dropped, and the session's calls cancelled, when the session ends.
// t.mu must be held.
func (t *tracker) sessionLocked(ss *mcp.ServerSession) *session {
	if st := t.sessions[ss]; st != nil {
		return st
	}
	st := &session{}
	st.ctx, st.cancel = context.WithCancelCause(context.Background())
	st.notes.init(ss)
	t.sessions[ss] = st
	go func() {
		ss.Wait()
		t.mu.Lock()
		delete(t.sessions, ss)
		t.mu.Unlock()
		st.end(errSessionClosed)
	}()
	return st
}

// end cancels the session's calls and stops its notifications.
func (st *session) end(cause error) {
	st.cancel(cause)
	st.notes.close()
}

// endSession cancels the calls of the session with the given ID, if it has
// any, and reports whether it found the session.
func (s *Server) endSession(id string, cause error) bool {
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			s.calls.mu.Lock()
			st := s.calls.sessions[ss]
			s.calls.mu.Unlock()
			if st != nil {
				st.cancel(cause)
			}
			return true
		}
	}
	return false
}

// requestHeader carries, from the HTTP handler to the MCP handlers, the
// token of the HTTP request that delivered a call. Clients cannot set it:
// the HTTP handler replaces whatever they send.
const requestHeader = "Hangar-Internal-Request"

// trackRequest registers an HTTP request that may carry calls, and returns
// it with a function to call when it is done.
func (t *tracker) trackRequest(r *http.Request, session string) (*httpRequest, func()) {
	tok := strconv.FormatUint(t.seq.Add(1), 36)
	hr := &httpRequest{session: session}
	hr.ctx, hr.lost = context.WithCancel(r.Context())
	r.Header.Set(requestHeader, tok)
	t.mu.Lock()
	t.requests[tok] = hr
	t.mu.Unlock()
	return hr, func() {
		t.mu.Lock()
		delete(t.requests, tok)
		t.mu.Unlock()
		hr.lost()
	}
}

// waitRequests waits, for at most limit, until no HTTP request of the
// session with the given ID ("" means any) is in progress: their answers
// are then written.
func (t *tracker) waitRequests(session string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		busy := false
		t.mu.Lock()
		for _, hr := range t.requests {
			if session == "" || hr.session == session {
				busy = true
				break
			}
		}
		t.mu.Unlock()
		if !busy {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// begin starts serving a call: the returned context is cancelled when the
// caller's is, when the session ends, when the HTTP request that carried
// the call loses its connection, or when the server's drain timeout passes.
// The returned function must be called when the call is done; it first
// waits (briefly) for the call's notifications to be written, so that they
// reach the client before the answer. While the server stops, begin
// refuses new calls with errStopping.
func (s *Server) begin(ctx context.Context, rq request) (context.Context, *plugin.Call, func(), error) {
	t := s.calls
	hr := rq.hr
	t.mu.Lock()
	if t.draining {
		t.mu.Unlock()
		return nil, nil, nil, errStopping
	}
	t.active++
	var st *session
	if rq.ss != nil {
		st = t.sessionLocked(rq.ss)
	}
	t.mu.Unlock()

	ctx, cancel := context.WithCancelCause(ctx)
	stops := []func() bool{context.AfterFunc(t.stopCtx, func() { cancel(context.Cause(t.stopCtx)) })}
	if st != nil {
		stops = append(stops, context.AfterFunc(st.ctx, func() { cancel(context.Cause(st.ctx)) }))
	}
	if hr != nil {
		hr.running.Add(1)
		stops = append(stops, context.AfterFunc(hr.ctx, func() { cancel(errConnectionLost) }))
	}
	c := &plugin.Call{ID: rq.id, Meta: rq.meta}
	var host *sessionHost
	if rq.ss != nil {
		host = &sessionHost{ss: rq.ss, notes: &st.notes}
		c.Host = host
	}
	end := func() {
		if host != nil {
			host.flush()
		}
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
		if hr != nil {
			hr.running.Add(-1)
		}
		t.mu.Lock()
		t.active--
		if t.active == 0 && t.idle != nil {
			close(t.idle)
			t.idle = nil
		}
		t.mu.Unlock()
	}
	return ctx, c, end, nil
}

// cancelGrace bounds how long Drain waits, once it has cancelled the calls
// still running, for them to answer.
const cancelGrace = 5 * time.Second

// Drain stops the server taking calls and waits for the calls in progress
// to finish, until ctx is done. Then it cancels those still running, each
// of which answers its client with a JSON-RPC error, and waits briefly for
// them. Calls that arrive meanwhile are refused with a JSON-RPC error, and
// new HTTP sessions with HTTP 503. Drain reports how many calls it
// cancelled.
func (s *Server) Drain(ctx context.Context) int {
	t := s.calls
	n := t.drain(ctx)
	if n > 0 {
		s.log.Warn("drain timeout: calls still running were cancelled", "calls", n)
	}
	// The answers are on their way: let their HTTP requests write them.
	t.waitRequests("", cancelGrace)
	return n
}

func (t *tracker) drain(ctx context.Context) int {
	t.mu.Lock()
	t.draining = true
	if t.active == 0 {
		t.mu.Unlock()
		return 0
	}
	idle := make(chan struct{})
	t.idle = idle
	t.mu.Unlock()
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
	}
	t.mu.Lock()
	n := t.active
	t.mu.Unlock()
	t.stop(errDrainTimeout)
	timer := time.NewTimer(cancelGrace)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
	}
	return n
}

// stopping reports whether Drain has been called.
func (t *tracker) stopping() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.draining
}

// cancelled is the JSON-RPC error of a call whose context ended.
func cancelled(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) && cause != context.Canceled {
		return &jsonrpc.Error{Code: codeRequestCancelled, Message: "request cancelled: " + cause.Error()}
	}
	return errCancelled
}

// maxRetries bounds how many successive reloads a call follows.
const maxRetries = 8

// onCurrent runs call on m's plugin, once it is loaded (see loading.go).
// If that plugin was closed by a reload before the call started there
// (plugin.ErrClosed means the call never ran), it runs call again on the
// plugin of the same name in the current set, so that a reload loses no
// call. A plugin that is no longer configured keeps the error.
func onCurrent[T any](ctx context.Context, m *mount, call func(*plugin.Plugin, *mount) (T, error)) (T, error) {
	run := func(m *mount) (T, error) {
		p, err := m.plugin(ctx)
		if err != nil {
			var zero T
			return zero, err
		}
		return call(p, m)
	}
	res, err := run(m)
	for i := 0; i < maxRetries && errors.Is(err, plugin.ErrClosed); i++ {
		next := m.srv.current(m.name)
		if next == nil || next == m {
			break
		}
		m = next
		res, err = run(m)
	}
	return res, err
}

// current returns the mount of the named plugin in the current set, or nil.
func (s *Server) current(name string) *mount {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mounts {
		if m.name == name {
			return m
		}
	}
	return nil
}
