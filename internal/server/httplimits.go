package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
)

const sessionIDHeader = "Mcp-Session-Id"

// limitClient sets what keeps any client from holding more than its
// share: the body's read timeout, and a writer (the returned one, which
// the caller removes from s.streams when the request ends) that bounds
// each write and lets the drain cut a client that stopped reading.
func (s *Server) limitClient(w http.ResponseWriter, r *http.Request, o HTTPOptions) *clientWriter {
	sessions.ClearInternalHeaders(r.Header)
	cw := &clientWriter{ResponseWriter: w, rc: *http.NewResponseController(w), d: o.WriteTimeout}
	if cw.d > 0 {
		// A deadline left by the connection's previous request must not
		// cut this one's answer, written after the handler.
		cw.extend(time.Now())
	}
	s.streams.add(cw)
	if o.ReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
		cw.rc.SetReadDeadline(time.Now().Add(o.ReadTimeout))
		r.Body = &readDeadline{ReadCloser: r.Body, rc: &cw.rc}
	}
	return cw
}

// serveSessions serves a request of a version before 2026-07-28 with the
// sessions' limits: the session cap, and the cancellation of calls whose
// session or connection is gone.
func (s *Server) serveSessions(next http.Handler, cw *clientWriter, r *http.Request, o HTTPOptions, live *atomic.Int64) {
	var w http.ResponseWriter = cw
	id := r.Header.Get(sessionIDHeader)
	switch {
	case r.Method == http.MethodDelete && id != "":
		// End the session's calls first, and let their requests carry
		// the JSON-RPC errors that answer them: once the SDK closes the
		// session, it writes nothing more. Only its owner's DELETE
		// ends anything: the SDK refuses another's (403).
		if s.ownedBy(id, r) && s.sdk.EndSession(id, sessions.ErrSessionClosed) {
			s.requests.Wait(id, core.CancelGrace)
		}
		next.ServeHTTP(w, r)
		// Answer once the session's place is free, so that a client
		// that ends a session to open another is not refused by a cap
		// that still counts the old one (the answer is sent when the
		// handler returns).
		if freed, ok := s.slots.Load(id); ok {
			t := time.NewTimer(core.CancelGrace)
			select {
			case <-freed.(chan struct{}):
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
		}
	case r.Method != http.MethodPost:
		next.ServeHTTP(w, r)
	case id == "":
		if s.core.Stopping() {
			writeRPCError(w, http.StatusServiceUnavailable, core.ErrStopping)
			return
		}
		if n := live.Add(1); o.MaxSessions > 0 && n > int64(o.MaxSessions) {
			live.Add(-1)
			w.Header().Set("Retry-After", "10")
			writeRPCError(w, http.StatusServiceUnavailable, &jsonrpc.Error{
				Code:    core.CodeServerStopping,
				Message: fmt.Sprintf("too many sessions: the server holds at most %d; try again later", o.MaxSessions),
			})
			return
		}
		next.ServeHTTP(w, r)
		sid := w.Header().Get(sessionIDHeader)
		if ti := sdkauth.TokenInfoFromContext(r.Context()); ti != nil && sid != "" {
			s.owners.Store(sid, ti.UserID)
		}
		s.watchSession(sid, func() {
			s.owners.Delete(sid)
			live.Add(-1)
		})
	default:
		hr, done := s.requests.Track(r, id)
		defer done()
		if o.WriteTimeout > 0 {
			cw.lost = hr.Scope
		}
		next.ServeHTTP(w, r)
		if hr.Scope.Running() > 0 {
			// The SDK let the request go (its session ended) while one of
			// its calls still runs: no answer can reach this stream, so
			// end it as a broken one rather than a complete, empty one.
			panic(http.ErrAbortHandler)
		}
	}
}

// ownedBy reports whether r comes from the owner of the session with the
// given ID: the identity (token subject) that opened it, as the go-sdk
// checks. A session opened without authentication is anyone's.
func (s *Server) ownedBy(id string, r *http.Request) bool {
	owner, ok := s.owners.Load(id)
	if !ok {
		return true
	}
	ti := sdkauth.TokenInfoFromContext(r.Context())
	return ti != nil && ti.UserID == owner.(string)
}

// watchSession calls done when the session with the given ID ends, or at
// once if there is none. Until then s.slots holds a channel for the
// session, closed once done has run.
func (s *Server) watchSession(id string, done func()) {
	if ss := s.sdk.Session(id); ss != nil {
		closed := s.metrics.SessionOpened(metrics.TransportStreamableHTTP)
		freed := make(chan struct{})
		s.slots.Store(id, freed)
		go func() {
			ss.Wait()
			closed()
			done()
			s.slots.Delete(id)
			close(freed)
		}()
		return
	}
	done()
}

// writeRPCError answers an HTTP request with a JSON-RPC error.
func writeRPCError(w http.ResponseWriter, status int, e *jsonrpc.Error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// clientWriter is the writer of every request to the MCP endpoint. It
// bounds each write to the client (HTTPOptions.WriteTimeout), so that one
// that stops reading loses its connection instead of holding the writer
// forever, and it lets the drain cut a client that has taken nothing for
// a while (streams.cutStalled), whatever the write timeout.
type clientWriter struct {
	http.ResponseWriter
	rc   http.ResponseController // a value: one allocation less a request
	d    time.Duration           // the write timeout; 0: none
	lost *core.Scope             // ended when a write fails: the client is gone

	until   atomic.Int64 // the write deadline in force (Unix ns); 0: none set
	writing atomic.Int64 // when the write in progress began (Unix ns); 0: none
	cut     atomic.Bool  // the drain cut the client: no deadline is extended
}

// deadlineSlack is how far past the write timeout a write deadline is set,
// as a fraction of the timeout: a write that begins while the deadline in
// force is still at least the timeout away needs no deadline of its own.
// Every write has at least the write timeout, and at most 1/16 more; a
// request's writes (the event stream's priming event, its answer, the
// flush) set one deadline between them instead of one each, and each set
// is a system-call-free but locked update of the poller's timer.
const deadlineSlack = 16

// extend gives a write that begins at now the write timeout, unless the
// deadline in force already does.
func (w *clientWriter) extend(now time.Time) {
	if w.cut.Load() || w.until.Load()-now.UnixNano() >= int64(w.d) {
		return
	}
	until := now.Add(w.d + w.d/deadlineSlack)
	w.until.Store(until.UnixNano())
	w.rc.SetWriteDeadline(until)
}

// begin starts a write: its deadline, and the time the drain looks at.
func (w *clientWriter) begin() {
	now := time.Now()
	if w.d > 0 {
		w.extend(now)
	}
	w.writing.Store(now.UnixNano())
}

func (w *clientWriter) WriteHeader(code int) {
	if w.d > 0 {
		w.extend(time.Now())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *clientWriter) Write(p []byte) (int, error) {
	w.begin()
	n, err := w.ResponseWriter.Write(p)
	w.writing.Store(0)
	if err != nil && w.lost != nil {
		w.lost.End(nil)
	}
	return n, err
}

func (w *clientWriter) Flush() {
	w.begin()
	w.rc.Flush()
	w.writing.Store(0)
}

func (w *clientWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// stalled reports whether a write to the client has been waiting since
// before t.
func (w *clientWriter) stalled(t time.Time) bool {
	since := w.writing.Load()
	return since != 0 && since < t.UnixNano()
}

// stop cuts the client's connection: the write waiting on it fails now,
// and every later one at once.
func (w *clientWriter) stop() {
	w.cut.Store(true)
	w.rc.SetWriteDeadline(time.Now())
}

// streams are the requests to the MCP endpoint in progress, for the drain.
type streams struct {
	mu  sync.Mutex
	set map[*clientWriter]struct{}
}

func (s *streams) add(w *clientWriter) {
	s.mu.Lock()
	if s.set == nil {
		s.set = map[*clientWriter]struct{}{}
	}
	s.set[w] = struct{}{}
	s.mu.Unlock()
}

func (s *streams) remove(w *clientWriter) {
	s.mu.Lock()
	delete(s.set, w)
	s.mu.Unlock()
}

// stallLimit is how long a write may wait for a client that takes none
// of it, once the server is stopping, before the drain cuts the client.
const stallLimit = time.Second

// cutStalled cuts, until stop is closed, the clients whose write has
// waited longer than stallLimit: a client that stopped reading must not
// hold the server's stop for its write timeout (or for ever, without
// one). The writes of every other client go on.
func (s *streams) cutStalled(stop <-chan struct{}) {
	t := time.NewTicker(stallLimit / 10)
	defer t.Stop()
	for {
		before := time.Now().Add(-stallLimit)
		s.mu.Lock()
		for w := range s.set {
			if w.stalled(before) {
				w.stop()
			}
		}
		s.mu.Unlock()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// readDeadline lifts the body's read deadline once the body is read, so
// that the connection's background read, which notices a client going
// away, is not cut short.
type readDeadline struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *readDeadline) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, io.EOF) {
			b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}
