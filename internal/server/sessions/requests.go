package sessions

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hangar-mcp/hangar/internal/server/core"
)

// errConnectionLost is why the calls of an HTTP request whose connection
// was lost were cancelled. It wraps context.Canceled, so a cancelled call
// answers "request cancelled".
var errConnectionLost = fmt.Errorf("%w: the request's connection was lost", context.Canceled)

// httpRequests keeps account of the HTTP requests in progress that carry
// MCP calls (over Streamable HTTP), so that the loss of a request's
// connection ends its calls, the go-sdk's handlers learn the ids of the
// calls they serve, and a stop or a DELETE can wait for the answers to be
// written.
type httpRequests struct {
	seq atomic.Uint64 // request tokens

	mu      sync.Mutex
	byToken map[string]*HTTPRequest
}

// HTTPRequest is an HTTP request in progress that carries MCP calls.
type HTTPRequest struct {
	// Scope ends with the request, or when its connection is lost: the
	// Carrier of the calls it carries.
	Scope *core.Scope

	session string    // its Mcp-Session-Id
	calls   []CallRef // the calls it carries, for their ids; set before the go-sdk reads them
}

// requestHeader carries, from the HTTP handler to the MCP handlers, the
// token of the HTTP request that delivered a call. Clients cannot set it:
// the HTTP handler replaces whatever they send.
const requestHeader = "Hangar-Internal-Request"

// TrackHTTP registers an HTTP request to the session with the given ID
// that may carry calls, and returns it with a function to call when it is
// done. The handlers that serve its calls find it by a header of r that
// only Hangar sets (ClearInternalHeaders).
func (s *Server) TrackHTTP(r *http.Request, session string) (*HTTPRequest, func()) {
	t := &s.requests
	tok := strconv.FormatUint(t.seq.Add(1), 36)
	hr := &HTTPRequest{session: session, Scope: core.NewScope(r.Context(), errConnectionLost)}
	r.Header.Set(requestHeader, tok)
	t.mu.Lock()
	t.byToken[tok] = hr
	t.mu.Unlock()
	return hr, func() {
		t.mu.Lock()
		delete(t.byToken, tok)
		t.mu.Unlock()
		hr.Scope.End(nil)
	}
}

// HTTPRequest returns the HTTP request with this header that TrackHTTP
// registered, or nil.
func (s *Server) HTTPRequest(h http.Header) *HTTPRequest {
	return s.requests.get(h.Get(requestHeader))
}

// get returns the HTTP request with the given token.
func (t *httpRequests) get(tok string) *HTTPRequest {
	if tok == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byToken[tok]
}

// WaitHTTP waits, for at most limit, until no HTTP request of the session
// with the given ID ("" means any) is in progress: their answers are then
// written.
func (s *Server) WaitHTTP(session string, limit time.Duration) {
	t := &s.requests
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		busy := false
		t.mu.Lock()
		for _, hr := range t.byToken {
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

// CallRef is a call an HTTP request carries: its method, params.name or
// params.uri (params.ref's name or URI for completion/complete), and
// JSON-RPC id as plugins see it.
type CallRef struct{ Method, Key, ID string }

// Record notes the calls an HTTP request carries, before the go-sdk reads
// them: its handlers find their ids there. hr may be nil.
func (hr *HTTPRequest) Record(refs []CallRef) {
	if hr != nil {
		hr.calls = refs
	}
}

// idFor returns the id of the call with this method and key that the
// request carries, or "" if it carries none or several.
func (hr *HTTPRequest) idFor(method, key string) string {
	id, n := "", 0
	for _, c := range hr.calls {
		if c.Method == method && c.Key == key {
			id, n = c.ID, n+1
		}
	}
	if n != 1 {
		return ""
	}
	return id
}

// ClearInternalHeaders removes from a client's HTTP request the headers by
// which Hangar passes what it knows of a request to the go-sdk's handlers:
// only Hangar may set them.
func ClearInternalHeaders(h http.Header) {
	h.Del(requestHeader)
	h.Del(idHeader)
}
