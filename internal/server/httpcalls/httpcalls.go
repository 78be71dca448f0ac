// Package httpcalls keeps account of the HTTP requests in progress that
// carry MCP calls, for every edge that serves HTTP: the loss of a
// request's connection ends its calls (Request.Scope), the go-sdk's
// handlers learn the ids of the calls they serve (Request.Record, then
// Request.IDFor), and a stop or a DELETE can wait for the answers to be
// written (Tracker.Wait). A POST's body is read once for all of them, by
// whichever asks first (ReadBody).
//
// The composition root (package server) makes one Tracker, tracks each
// HTTP request to the MCP endpoint with it, and gives it to the edges. It
// imports nothing of the server but the core (for core.Scope), and no
// edge (TestLayout in package server).
package httpcalls

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

// Tracker keeps the HTTP requests in progress that carry MCP calls (over
// Streamable HTTP).
type Tracker struct {
	seq atomic.Uint64 // request tokens

	mu      sync.Mutex
	byToken map[string]*Request
}

// NewTracker returns a Tracker of no requests.
func NewTracker() *Tracker {
	return &Tracker{byToken: map[string]*Request{}}
}

// Request is an HTTP request in progress that carries MCP calls.
type Request struct {
	// Scope ends with the request, or when its connection is lost: the
	// Carrier of the calls it carries.
	Scope *core.Scope

	session string    // its Mcp-Session-Id
	calls   []CallRef // the calls it carries, for their ids; set before the go-sdk reads them
}

// header carries, from the HTTP handler to the MCP handlers, the token of
// the HTTP request that delivered a call. Clients cannot set it: the HTTP
// handler replaces whatever they send (Track), and removes it from a
// request it does not track (ClearHeader).
const header = "Hangar-Internal-Request"

// ClearHeader removes from a client's HTTP request the header by which
// the Tracker finds it: only Hangar may set it.
func ClearHeader(h http.Header) { h.Del(header) }

// Track registers an HTTP request to the session with the given ID ("" if
// none) that may carry calls, and returns it with a function to call when
// it is done. The handlers that serve its calls find it by a header of r
// that only Hangar sets (Lookup).
func (t *Tracker) Track(r *http.Request, session string) (*Request, func()) {
	tok := strconv.FormatUint(t.seq.Add(1), 36)
	hr := &Request{session: session, Scope: core.NewScope(r.Context(), errConnectionLost)}
	r.Header.Set(header, tok)
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

// Lookup returns the HTTP request with these headers that Track
// registered, or nil; carried reports whether the headers name one at all
// (a request Hangar tracked, or tracks no longer). A nil Tracker tracks
// nothing.
func (t *Tracker) Lookup(h http.Header) (hr *Request, carried bool) {
	tok := h.Get(header)
	if t == nil || tok == "" {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byToken[tok], true
}

// Wait waits, for at most limit, until no HTTP request of the session with
// the given ID ("" means any) is in progress: their answers are then
// written.
func (t *Tracker) Wait(session string, limit time.Duration) {
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
// them: its handlers find their ids there (IDFor). hr may be nil.
func (hr *Request) Record(refs []CallRef) {
	if hr != nil {
		hr.calls = refs
	}
}

// IDFor returns the id of the call with this method and key that the
// request carries, or "" if it carries none or several. hr may be nil.
func (hr *Request) IDFor(method, key string) string {
	if hr == nil {
		return ""
	}
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
