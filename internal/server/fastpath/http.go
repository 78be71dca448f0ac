package fastpath

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The fast path over Streamable HTTP sits between Hangar's HTTP checks
// (guard, bounded) and the go-sdk's handler. It reads the body of each POST
// to a session: a single tools/call or resources/read it takes is answered
// here, on an event stream as the go-sdk writes one (the same headers, a
// priming event for 2025-11-25, event ids that the go-sdk's resumption
// replays from the same event store); everything else goes to the go-sdk,
// body restored. What the call sends the client meanwhile goes on its
// stream: notifications, and server requests (sampling, elicitation,
// roots), whose answers arrive in later POSTs that the fast path takes
// too. The fast path keeps the sessions' idle timeout, which counts the
// requests of both paths.

// maxBody is the go-sdk's limit on a POST's body; the fast path leaves
// larger bodies to the go-sdk, which refuses them.
const maxBody = mcp.DefaultMaxRequestBodyBytes

// serverRequestStart returns where the ids of the server requests made
// from the fast path's calls in a new session start: at random, between
// 2^32 (apart from the go-sdk's own ids, which count from 1) and 2^53
// minus 2^32 (ids stay exact in a float64, as JSON numbers must). An id
// cannot be guessed from another session's.
func serverRequestStart() int64 {
	var b [8]byte
	crand.Read(b[:])
	return 1<<32 + int64(binary.LittleEndian.Uint64(b[:])%(1<<53-1<<33))
}

// sessionIDHeader carries a Streamable HTTP session's ID.
const sessionIDHeader = "Mcp-Session-Id"

// httpFast is the fast path of one HTTP handler.
type httpFast struct {
	p       *Path
	next    http.Handler // the go-sdk's
	store   mcp.EventStore
	timeout time.Duration // sessions' idle timeout; zero: none

	mu       sync.Mutex
	sessions map[string]*httpSession // by Mcp-Session-Id
}

// httpSession is the fast path's state for an HTTP session.
type httpSession struct {
	*fastSession
	id     string
	userID string        // who opened it, if the request was authenticated
	closed chan struct{} // closed when the session ends

	tmu   sync.Mutex // guards refs and timer
	refs  int        // requests in progress
	timer *time.Timer
}

// HTTP returns the fast path in front of next, the go-sdk's Streamable HTTP
// handler (package sessions: Server.StreamableHTTP) whose event store is
// store. It keeps the sessions' idle timeout, timeout (zero: none), since
// it serves requests the go-sdk does not see. In front of it, Hangar's
// HTTP layer tracks the requests that carry calls (Options.Requests).
func (p *Path) HTTP(next http.Handler, store mcp.EventStore, timeout time.Duration) http.Handler {
	return &httpFast{p: p, next: next, store: store, timeout: timeout, sessions: map[string]*httpSession{}}
}

func (h *httpFast) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionIDHeader)
	switch {
	case r.Method == http.MethodPost && id == "":
		if body, err := readBody(r); err == nil && len(body) <= maxBody && h.refused(w, body, nil) {
			return
		}
		// The session is known before the client has the answer that
		// names it, and so before its next request.
		ow := &openingWriter{ResponseWriter: w, open: func() { h.opened(w.Header().Get(sessionIDHeader), r) }}
		h.next.ServeHTTP(ow, r)
		ow.opened()
		return
	case r.Method == http.MethodDelete && id != "":
		h.next.ServeHTTP(w, r)
		if hs := h.session(id); hs != nil && hs.owner(r) {
			// The go-sdk closed the session, or it is gone.
			h.closed(hs)
		}
		return
	case r.Method != http.MethodPost:
		h.next.ServeHTTP(w, r)
		return
	}
	hs := h.session(id)
	if hs != nil && (!hs.owner(r) || hs.ended()) {
		h.next.ServeHTTP(w, r) // the go-sdk refuses it
		return
	}
	if hs != nil {
		hs.startRequest()
		defer hs.endRequest(h.timeout)
	}
	h.post(w, r, hs)
}

// openingWriter is the writer of a POST that may open a session: the
// session is registered before the first byte of the answer is written.
type openingWriter struct {
	http.ResponseWriter
	open func()
	done bool
}

func (w *openingWriter) opened() {
	if !w.done {
		w.done = true
		w.open()
	}
}

func (w *openingWriter) WriteHeader(code int) {
	w.opened()
	w.ResponseWriter.WriteHeader(code)
}

func (w *openingWriter) Write(p []byte) (int, error) {
	w.opened()
	return w.ResponseWriter.Write(p)
}

func (w *openingWriter) Flush() {
	w.opened()
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *openingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// opened registers the session a POST opened, if any.
func (h *httpFast) opened(id string, r *http.Request) {
	if id == "" {
		return
	}
	ss := h.p.sdk.Session(id)
	if ss == nil {
		return
	}
	hs := &httpSession{fastSession: newFastSession(h.p), id: id, closed: make(chan struct{})}
	hs.seq = serverRequestStart()
	hs.ss.Store(ss)
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		hs.userID = ti.UserID
	}
	if h.timeout > 0 {
		hs.timer = time.AfterFunc(h.timeout, func() {
			ss.Close()
			h.closed(hs)
		})
	}
	h.mu.Lock()
	h.sessions[id] = hs
	h.mu.Unlock()
	go func() {
		ss.Wait()
		h.closed(hs)
	}()
}

func (h *httpFast) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// closed forgets a session that ended.
func (h *httpFast) closed(hs *httpSession) {
	h.mu.Lock()
	if h.sessions[hs.id] == hs {
		delete(h.sessions, hs.id)
	}
	h.mu.Unlock()
	hs.tmu.Lock()
	defer hs.tmu.Unlock()
	if hs.timer != nil {
		hs.timer.Stop()
		hs.timer = nil
	}
	if !hs.ended() {
		close(hs.closed)
	}
}

// ended reports whether the session ended.
func (hs *httpSession) ended() bool {
	select {
	case <-hs.closed:
		return true
	default:
		return false
	}
}

// owner reports whether r may use the session: as the go-sdk checks, a
// session opened by an authenticated user is that user's.
func (hs *httpSession) owner(r *http.Request) bool {
	if hs.userID == "" {
		return true
	}
	ti := auth.TokenInfoFromContext(r.Context())
	return ti != nil && ti.UserID == hs.userID
}

// startRequest and endRequest pause the session's idle timeout while a
// request is in progress, as the go-sdk does for its own.
func (hs *httpSession) startRequest() {
	hs.tmu.Lock()
	defer hs.tmu.Unlock()
	if hs.timer != nil && hs.refs == 0 {
		hs.timer.Stop()
	}
	hs.refs++
}

func (hs *httpSession) endRequest(timeout time.Duration) {
	hs.tmu.Lock()
	defer hs.tmu.Unlock()
	hs.refs--
	if hs.timer != nil && hs.refs == 0 {
		hs.timer.Reset(timeout)
	}
}

// post serves a POST to a session, or gives it to the go-sdk, having noted
// the ids of the calls it carries. hs is nil if the session is not (or not
// yet) known: its POSTs go to the go-sdk.
func (h *httpFast) post(w http.ResponseWriter, r *http.Request, hs *httpSession) {
	hr, _ := h.p.requests.Lookup(r.Header)
	body, err := readBody(r)
	if err != nil || len(body) > maxBody {
		h.next.ServeHTTP(w, r) // r.Body replays what was read: the go-sdk refuses it
		return
	}
	b := bytes.Trim(body, " \t\r\n")
	var m message // read once, for the screen and the call
	if len(b) > 0 && b[0] != '[' {
		m = parseMessage(b)
	}
	if h.screen(w, b, hs, &m) {
		return
	}
	if len(b) > 0 && b[0] == '[' {
		hr.Record(batchRefs(b))
		h.next.ServeHTTP(w, r)
		return
	}
	if m.kind == msgCall || m.kind == msgRequest {
		hr.Record([]httpcalls.CallRef{{Method: m.method, Key: m.key, ID: wire.IDString(m.id)}})
	}
	version, plain := plainPOST(r)
	if hs == nil || !plain {
		h.next.ServeHTTP(w, r)
		return
	}
	switch m.kind {
	case msgCall, msgRequest:
		if m.kind == msgCall && hs.busy(m.id) {
			// As the go-sdk, which has set the headers of an event stream.
			eventStreamHeaders(w.Header())
			writeRPCErrorID(w, http.StatusBadRequest, m.id, &jsonrpc.Error{
				Code:    jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("duplicate in-flight request ID %v", m.id.Raw()),
			})
			return
		}
		if ss := hs.ready(); ss != nil && h.p.takes(&m) {
			if ctx, cancel, ok := hs.start(context.WithoutCancel(r.Context()), m.id); ok {
				h.serve(ctx, cancel, w, r.Header, hs, ss, &m, hr, version)
				return
			}
		}
		hs.sdkStarted(m.id)
		defer hs.sdkDone(m.id)
	case msgCancel:
		hs.cancel(m.id, nil)
	case msgResponse:
		if hs.deliver(m.id, b) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// refused screens the body of a POST (screen.go) to the session hs (nil
// if none is known), and answers it with HTTP 400 and a JSON-RPC error if
// the fast path refuses it: a batch that holds initialize, or in a
// session whose protocol version has no batches, or a request whose id
// the go-sdk would not answer as it came. Anything else that the go-sdk
// cannot read, it refuses itself.
func (h *httpFast) refused(w http.ResponseWriter, body []byte, hs *httpSession) bool {
	b := bytes.Trim(body, " \t\r\n")
	var m message
	if len(b) > 0 && b[0] != '[' {
		m = parseMessage(b)
	}
	return h.screen(w, b, hs, &m)
}

// screen is refused of a body already trimmed, b, and, unless it is a
// batch, read into m by parseMessage.
func (h *httpFast) screen(w http.ResponseWriter, b []byte, hs *httpSession, m *message) bool {
	if len(b) == 0 {
		return false
	}
	var ref *refusal
	if b[0] == '[' {
		var v string
		if hs != nil {
			v = wire.SessionVersion(hs.ss.Load())
		}
		_, ref = screenBatch(b, v)
		if ref != nil && ref.err.Code == CodeParseError {
			return false // the go-sdk's own answer
		}
	} else if m.kind == msgOther && json.Valid(b) {
		// parseMessage reads only ids the go-sdk keeps; others are
		// checked here, in requests.
		if id := wire.RawID(b); echoable(id) != nil && id[0] != '"' && !wire.ExactID(id) {
			if msg, err := jsonrpc.DecodeMessage(b); err == nil {
				if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
					ref = screenID(id)
				}
			}
		}
	}
	if ref == nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(ref.encode())
	return true
}

// plainPOST reports whether the go-sdk would take a POST's headers (the
// fast path's check is narrower), and returns its protocol version, or
// the go-sdk's default.
func plainPOST(r *http.Request) (string, bool) {
	version := r.Header.Get("Mcp-Protocol-Version")
	if version != "" && !wire.InSessions(version) {
		return "", false
	}
	if version == "" {
		version = core.Version20250326
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return "", false
		}
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		return "", false
	}
	var jsonOK, eventsOK bool
	for _, v := range r.Header.Values("Accept") {
		for v != "" {
			var t string
			t, v, _ = strings.Cut(v, ",")
			t, _, _ = strings.Cut(t, ";")
			t = strings.TrimSpace(t)
			switch {
			case strings.EqualFold(t, "application/json"):
				jsonOK = true
			case strings.EqualFold(t, "text/event-stream"):
				eventsOK = true
			}
		}
	}
	return version, jsonOK && eventsOK
}

// readBody reads r's body, up to one byte past maxBody, and leaves in
// r.Body a reader that replays it (and, if it is longer, reads the rest).
// The route read it already (httpcalls.ReadBody), unless the request went
// straight to the sessions.
func readBody(r *http.Request) ([]byte, error) {
	return httpcalls.ReadBody(r, maxBody)
}

// batchRefs lists the calls of a batch.
func batchRefs(b []byte) []httpcalls.CallRef {
	var msgs []json.RawMessage
	if json.Unmarshal(b, &msgs) != nil {
		return nil
	}
	var refs []httpcalls.CallRef
	for _, raw := range msgs {
		if m := parseMessage(bytes.Trim(raw, " \t\r\n")); m.kind == msgCall || m.kind == msgRequest {
			refs = append(refs, httpcalls.CallRef{Method: m.method, Key: m.key, ID: wire.IDString(m.id)})
		}
	}
	return refs
}

// writeRPCErrorID answers an HTTP request with a JSON-RPC error, as the
// go-sdk does.
func writeRPCErrorID(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(wire.EncodeError(id, e))
}

// serve runs a call the fast path took and answers it on an event stream.
func (h *httpFast) serve(ctx context.Context, cancel context.CancelCauseFunc, w http.ResponseWriter, header http.Header, hs *httpSession, ss *mcp.ServerSession, m *message, hr *httpcalls.Request, version string) {
	defer hs.running.Done()
	st := &eventStream{hs: hs, w: w, rc: *http.NewResponseController(w), store: h.store, id: crand.Text(), last: -1}
	if st.store != nil {
		if err := st.store.Open(ctx, hs.id, st.id); err != nil {
			hs.release(m.id)
			http.Error(w, fmt.Sprintf("storing stream: %v", err), http.StatusInternalServerError)
			return
		}
	}
	eventStreamHeaders(w.Header())
	if st.store != nil && wire.AtLeast(version, core.Version20251125) {
		st.prime(ctx)
	}
	resp := hs.serve(context.WithValue(ctx, streamKey{}, st), cancel, ss, m, hr, header)
	hs.release(m.id)
	if hs.ended() {
		// The go-sdk lets a request go when its session ends, and Hangar
		// then ends its stream as a broken one (bounded).
		st.finish()
		panic(http.ErrAbortHandler)
	}
	if resp != nil {
		st.send(ctx, resp, true)
	}
	st.finish()
}
