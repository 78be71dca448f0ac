package sessions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// ErrSessionClosed is why a session's calls were cancelled when it ended,
// or was deleted. It wraps context.Canceled, so a cancelled call answers
// "request cancelled".
var ErrSessionClosed = fmt.Errorf("%w: the session ended", context.Canceled)

// State is Hangar's state for one MCP session: the scope of its calls, and
// the queue of its notifications.
type State struct {
	ss    *mcp.ServerSession
	scope *core.Scope // ends with the session
	notes notifier
}

// State returns the state of ss, creating it on first use; it is dropped,
// and the session's calls cancelled, when the session ends.
func (s *Server) State(ss *mcp.ServerSession) *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.sessions[ss]; st != nil {
		return st
	}
	st := &State{ss: ss, scope: core.NewScope(context.Background(), nil)}
	st.notes.init(ss)
	s.sessions[ss] = st
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
		st.end(ErrSessionClosed)
	}()
	return st
}

// end cancels the session's calls and stops its notifications.
func (st *State) end(cause error) {
	st.scope.End(cause)
	st.notes.close()
}

// EndSession cancels the calls of the session with the given ID, if it has
// any, and reports whether it found the session.
func (s *Server) EndSession(id string, cause error) bool {
	ss := s.Session(id)
	if ss == nil {
		return false
	}
	s.mu.Lock()
	st := s.sessions[ss]
	s.mu.Unlock()
	if st != nil {
		st.scope.End(cause)
	}
	return true
}

// Request describes, for the core, a request of the session with the given
// JSON-RPC id, _meta and principal: its client sink reaches the session's
// client, through the session's queue of notifications, and its scope is
// the session's. Carrier, if not nil, is the scope of the HTTP request that
// carried it.
func (st *State) Request(id string, meta mcp.Meta, principal *sdkauth.TokenInfo, carrier *core.Scope) core.Request {
	h := newSessionHost(st.ss, &st.notes)
	return core.Request{
		Principal:    principal,
		ID:           id,
		Meta:         meta,
		Version:      h.version,
		Capabilities: h.caps,
		Client:       h,
		Scope:        st.scope,
		Carrier:      carrier,
		Holder:       holder(id, st.ss.ID()),
	}
}

// holder names a request of the session with the given ID for the busy
// errors of other callers (core.Request.Holder): its id and the first
// characters of the session's ID, after a replica's name, which are not
// enough to use the session. A session without an ID (stdio, in process)
// leaves it to the plugin ("request 7").
func holder(id, session string) string {
	if i := strings.LastIndex(session, "~"); i >= 0 {
		session = session[i+1:]
	}
	if session == "" {
		return ""
	}
	if id == "" {
		id = "without an id"
	}
	if len(session) > 8 {
		session = session[:8] + "..."
	}
	return "request " + id + " of session " + session
}

// Notification describes, for the core, a notification of the session
// (notifications/roots/list_changed) with the given _meta and principal:
// it has no id, and its client sink reaches the session's client at once
// (no queue: a notification has no end to flush it).
func (st *State) Notification(meta mcp.Meta, principal *sdkauth.TokenInfo) core.Request {
	h := newSessionHost(st.ss, nil)
	return core.Request{
		Principal:    principal,
		Meta:         meta,
		Version:      h.version,
		Capabilities: h.caps,
		Client:       h,
		Scope:        st.scope,
	}
}

// sdkRequest describes a request the go-sdk delivered to a handler. The
// JSON-RPC id comes from the transport: Hangar's connections put it in the
// request's Extra (idHeader), and over Streamable HTTP the HTTP request
// that carried the call recorded it (package httpcalls). A call that
// another edge serves through the handler (Hooks.Request) is described as
// that edge says, and a request of that edge's versions has the _meta it
// gives plugins (Hooks.PluginMeta).
func (s *Server) sdkRequest(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, meta mcp.Meta, method, key string) core.Request {
	id, carrier := s.sdkID(extra, method, key)
	if s.pluginMeta != nil && wire.MetaNamesVersion(meta) {
		meta = s.pluginMeta(meta)
	}
	if s.adopt != nil {
		if rq, ok := s.adopt(ctx, core.Request{Principal: tokenOf(extra), ID: id, Meta: meta}); ok {
			return rq
		}
	}
	if ss == nil {
		return core.Request{Principal: tokenOf(extra), ID: id, Meta: meta, Carrier: carrier}
	}
	return s.State(ss).Request(id, meta, tokenOf(extra), carrier)
}

// sdkID returns the JSON-RPC id of a request the go-sdk delivered, and the
// scope of the HTTP request that carried it, if any.
func (s *Server) sdkID(extra *mcp.RequestExtra, method, key string) (string, *core.Scope) {
	if extra == nil || extra.Header == nil {
		return "", nil
	}
	if hr, carried := s.requests.Lookup(extra.Header); carried {
		if hr != nil {
			return hr.IDFor(method, key), hr.Scope
		}
		return "", nil
	}
	return extra.Header.Get(idHeader), nil
}

// tokenOf returns the caller's token of a request the go-sdk delivered:
// nil if it carried none.
func tokenOf(extra *mcp.RequestExtra) *sdkauth.TokenInfo {
	if extra == nil {
		return nil
	}
	return extra.TokenInfo
}

// idHeader carries, in a request's Extra, the JSON-RPC id of a request read
// by one of Hangar's connections (idConn). Clients cannot set it: over HTTP,
// where Extra holds the request's headers, the HTTP handler removes it.
const idHeader = "Hangar-Internal-Id"

// ClearInternalHeaders removes from a client's HTTP request the headers by
// which Hangar passes what it knows of a request to the go-sdk's handlers
// (idHeader, and httpcalls' header): only Hangar may set them.
func ClearInternalHeaders(h http.Header) {
	httpcalls.ClearHeader(h)
	h.Del(idHeader)
}

// idConn passes the JSON-RPC id of each request read from a connection to
// the handlers, in the request's Extra.
type idConn struct{ mcp.Connection }

func (c idConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Extra == nil {
		req.Extra = &mcp.RequestExtra{Header: http.Header{idHeader: {wire.IDString(req.ID)}}}
	}
	return msg, err
}

// sessionHost is the client of one session, as plugins' host imports see
// it. It refuses what the client did not declare it can do.
type sessionHost struct {
	ss      *mcp.ServerSession
	version string                  // the session's protocol version
	caps    *mcp.ClientCapabilities // the client's; nil: none declared
	notes   *notifier               // the session's; nil means send at once
	last    uint64                  // the call's last queued notification
}

func newSessionHost(ss *mcp.ServerSession, notes *notifier) *sessionHost {
	h := &sessionHost{ss: ss, notes: notes}
	if p := ss.InitializeParams(); p != nil {
		h.version, h.caps = wire.InitializedVersion(p), p.Capabilities
	}
	return h
}

func (h *sessionHost) capabilities() *mcp.ClientCapabilities {
	if h.caps != nil {
		return h.caps
	}
	return &mcp.ClientCapabilities{}
}

func (h *sessionHost) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if h.capabilities().Sampling == nil {
		return nil, errors.New("the client does not support sampling")
	}
	return h.ss.CreateMessage(ctx, params)
}

func (h *sessionHost) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if h.capabilities().Elicitation == nil {
		return nil, errors.New("the client does not support elicitation")
	}
	// A client may declare elicitation while speaking a version without
	// it; Hangar sends a session nothing its version does not define.
	v := h.version
	if !wire.AtLeast(v, core.Version20250618) {
		return nil, fmt.Errorf("the client does not support elicitation: the session's protocol version %s has none (it came with %s)", v, core.Version20250618)
	}
	if params != nil && !wire.AtLeast(v, core.Version20251125) && (params.Mode == "url" || params.Mode == "" && (params.URL != "" || params.ElicitationID != "")) {
		return nil, fmt.Errorf(`the client does not support "url" elicitation: the session's protocol version %s has only form elicitation ("url" came with %s)`, v, core.Version20251125)
	}
	return h.ss.Elicit(ctx, params)
}

func (h *sessionHost) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	if h.capabilities().RootsV2 == nil {
		return nil, errors.New("the client does not support roots")
	}
	return h.ss.ListRoots(ctx, nil)
}

// Log queues a log message for the client; it never waits for the client
// (see notifier).
func (h *sessionHost) Log(ctx context.Context, params *mcp.LoggingMessageParams) error {
	return h.queue(&note{ctx: ctx, size: 64 + len(params.Logger) + sizeOf(params.Data), send: func(ctx context.Context) error { return h.ss.Log(ctx, params) }}, false)
}

// NotifyProgress queues a progress notification for the client; when the
// queue is full, it replaces the queued one for the same token.
func (h *sessionHost) NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error {
	return h.queue(&note{ctx: ctx, token: params.ProgressToken, size: 96 + len(params.Message), send: func(ctx context.Context) error { return h.ss.NotifyProgress(ctx, params) }}, false)
}

func (h *sessionHost) NotifyElicitationComplete(ctx context.Context, params *mcp.ElicitationCompleteParams) error {
	if v := h.version; !wire.AtLeast(v, core.Version20251125) {
		return fmt.Errorf("the client does not support elicitation completion notices: the session's protocol version %s has no URL elicitation (it came with %s)", v, core.Version20251125)
	}
	return h.queue(&note{ctx: ctx, size: 64 + len(params.ElicitationID), send: func(ctx context.Context) error { return h.ss.NotifyElicitationComplete(ctx, params) }}, true)
}

func (h *sessionHost) queue(n *note, essential bool) error {
	if h.notes == nil {
		return n.send(n.ctx)
	}
	if seq := h.notes.push(n, essential); seq > h.last {
		h.last = seq
	}
	return nil
}

// Flush waits, briefly, for the call's notifications to be written (the
// core calls it when the call ends: core.Flusher).
func (h *sessionHost) Flush() {
	if h.notes != nil {
		h.notes.flush(h.last)
	}
}
