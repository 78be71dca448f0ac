package server

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
// MCP calls, so that the loss of a request's connection ends its calls,
// the go-sdk's handlers learn the ids of the calls they serve, and a stop
// or a DELETE can wait for the answers to be written.
type httpRequests struct {
	seq atomic.Uint64 // request tokens

	mu      sync.Mutex
	byToken map[string]*httpRequest
}

// httpRequest is an HTTP request in progress that carries MCP calls.
type httpRequest struct {
	session string      // its Mcp-Session-Id
	scope   *core.Scope // ends with the request, or when its connection is lost
	calls   []callRef   // the calls it carries, for their ids; set before the go-sdk reads them
}

// requestHeader carries, from the HTTP handler to the MCP handlers, the
// token of the HTTP request that delivered a call. Clients cannot set it:
// the HTTP handler replaces whatever they send.
const requestHeader = "Hangar-Internal-Request"

// track registers an HTTP request that may carry calls, and returns it
// with a function to call when it is done.
func (t *httpRequests) track(r *http.Request, session string) (*httpRequest, func()) {
	tok := strconv.FormatUint(t.seq.Add(1), 36)
	hr := &httpRequest{session: session, scope: core.NewScope(r.Context(), errConnectionLost)}
	r.Header.Set(requestHeader, tok)
	t.mu.Lock()
	t.byToken[tok] = hr
	t.mu.Unlock()
	return hr, func() {
		t.mu.Lock()
		delete(t.byToken, tok)
		t.mu.Unlock()
		hr.scope.End(nil)
	}
}

// get returns the HTTP request with the given token.
func (t *httpRequests) get(tok string) *httpRequest {
	if tok == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byToken[tok]
}

// wait waits, for at most limit, until no HTTP request of the session with
// the given ID ("" means any) is in progress: their answers are then
// written.
func (t *httpRequests) wait(session string, limit time.Duration) {
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

// Drain stops the server taking calls and waits for the calls in progress
// to finish, until ctx is done. Then it cancels those still running, each
// of which answers its client with a JSON-RPC error, and waits briefly for
// them. Calls that arrive meanwhile are refused with a JSON-RPC error, and
// new HTTP sessions with HTTP 503. Drain reports how many calls it
// cancelled.
func (s *Server) Drain(ctx context.Context) int {
	n := s.core.Drain(ctx)
	// The answers are on their way: let their HTTP requests write them.
	s.requests.wait("", core.CancelGrace)
	return n
}
