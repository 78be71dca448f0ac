package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
)

const sessionIDHeader = "Mcp-Session-Id"

// bounded wraps the SDK's handler with what keeps a client from holding
// more than its share: the session cap, the body read and write timeouts,
// and the cancellation of calls whose session or connection is gone.
func (s *Server) bounded(next http.Handler, o HTTPOptions) http.Handler {
	var live atomic.Int64 // sessions open or being opened
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sessions.ClearInternalHeaders(r.Header)
		var wd *writeDeadline
		if o.WriteTimeout > 0 {
			wd = &writeDeadline{ResponseWriter: w, rc: http.NewResponseController(w), d: o.WriteTimeout}
			w = wd
			// A deadline left by the connection's previous request must not
			// cut this one's answer, written after the handler.
			wd.extend()
		}
		if o.ReadTimeout > 0 {
			rc := http.NewResponseController(w)
			if r.Body != nil && r.Body != http.NoBody {
				rc.SetReadDeadline(time.Now().Add(o.ReadTimeout))
				r.Body = &readDeadline{ReadCloser: r.Body, rc: rc}
			}
		}
		if s.modern.Takes(r) {
			// MCP 2026-07-28: no session (stateless.Edge).
			hr, done := s.sdk.TrackHTTP(r, "")
			defer done()
			if wd != nil {
				wd.lost = hr.Scope
			}
			s.modern.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get(sessionIDHeader)
		switch {
		case r.Method == http.MethodDelete && id != "":
			// End the session's calls first, and let their requests carry
			// the JSON-RPC errors that answer them: once the SDK closes the
			// session, it writes nothing more. Only its owner's DELETE
			// ends anything: the SDK refuses another's (403).
			if s.ownedBy(id, r) && s.sdk.EndSession(id, sessions.ErrSessionClosed) {
				s.sdk.WaitHTTP(id, core.CancelGrace)
			}
			next.ServeHTTP(w, r)
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
			hr, done := s.sdk.TrackHTTP(r, id)
			defer done()
			if wd != nil {
				wd.lost = hr.Scope
			}
			next.ServeHTTP(w, r)
			if hr.Scope.Running() > 0 {
				// The SDK let the request go (its session ended) while one of
				// its calls still runs: no answer can reach this stream, so
				// end it as a broken one rather than a complete, empty one.
				panic(http.ErrAbortHandler)
			}
		}
	})
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
// once if there is none.
func (s *Server) watchSession(id string, done func()) {
	if ss := s.sdk.Session(id); ss != nil {
		closed := s.metrics.SessionOpened(metrics.TransportStreamableHTTP)
		go func() {
			ss.Wait()
			closed()
			done()
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

// writeDeadline bounds each write to the client, so that one that stops
// reading loses its connection instead of holding the writer forever.
type writeDeadline struct {
	http.ResponseWriter
	rc   *http.ResponseController
	d    time.Duration
	lost *core.Scope // ended when a write fails: the client is gone
}

func (w *writeDeadline) extend() { w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *writeDeadline) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *writeDeadline) Write(p []byte) (int, error) {
	w.extend()
	n, err := w.ResponseWriter.Write(p)
	if err != nil && w.lost != nil {
		w.lost.End(nil)
	}
	return n, err
}

func (w *writeDeadline) Flush() {
	w.extend()
	w.rc.Flush()
}

func (w *writeDeadline) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
