package stateless

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// subscriptions/listen is the edge's own, over HTTP and stdio, on both
// paths: a stream that acknowledges what it will deliver, then delivers
// the list changes and resource updates plugins report (the edge is a
// core.Listener), each with the listen request's id in _meta, until the
// client ends it or the server stops, when it is answered with the listen
// request's result (a graceful end, which the go-sdk's listen cannot give:
// it closes the stream with its session). A caller whose token allows some
// plugins only is told of a list's change only when what it may see of it
// changed (core.Core.Fingerprint), and may listen only to resources some
// plugin it may use serves.

// keepAlive is how often an idle listen stream over HTTP gets an SSE
// comment, so that proxies and clients do not take it for dead (nginx
// closes a stream after 60 seconds of silence by default).
const keepAlive = 30 * time.Second

// listener is one subscriptions/listen stream.
type listener struct {
	id    jsonrpc.ID
	grant *auth.Grant
	lists [4]bool // by plugin.ListKind
	uris  map[string]bool

	mu      sync.Mutex
	seen    [4]string     // the fingerprint of each list last told of, by plugin.ListKind
	changed [4]bool       // lists to tell of
	updated []string      // URIs to tell of, each once
	wake    chan struct{} // buffered, 1

	// tasks, if set, delivers notifications/tasks of the tasks it follows
	// (taskIds, what the ack names).
	tasks   *tasks.Listener
	taskIDs []string
}

// listenFilter reads the notifications a subscriptions/listen asks for,
// and the ids of the tasks it asks to follow (the tasks extension's
// notifications.taskIds; nil if not given).
func listenFilter(params json.RawMessage) (*mcp.NotificationSubscriptions, []string, *jsonrpc.Error) {
	var p struct {
		Notifications *mcp.NotificationSubscriptions `json:"notifications"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, invalidParams("invalid subscriptions/listen params: %v", err)
	}
	if p.Notifications == nil {
		return nil, nil, invalidParams("subscriptions/listen needs params.notifications: the notifications to deliver")
	}
	var t struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if err := json.Unmarshal(params, &t); err != nil {
		return nil, nil, invalidParams("invalid subscriptions/listen params: notifications.taskIds must be a list of task ids: %v", err)
	}
	// A listen holds its resources for as long as it runs: as many as a
	// session of an older version may subscribe to.
	if uris := p.Notifications.ResourceSubscriptions; len(uris) > wire.MaxSubscriptions {
		distinct := map[string]bool{}
		for _, uri := range uris {
			distinct[uri] = true
		}
		if len(distinct) > wire.MaxSubscriptions {
			return nil, nil, invalidParams("subscriptions/listen asks for %d resources; a listen may deliver the updates of at most %d: listen to fewer, or split them over several listens", len(distinct), wire.MaxSubscriptions)
		}
	}
	return p.Notifications, t.Notifications.TaskIDs, nil
}

// followTasks makes l follow the tasks of ids that owner may see, for a
// listen whose request's _meta is meta: the extension must be declared
// (else -32021). Without tasks on the server, or ids, nothing is followed.
func (e *Edge) followTasks(l *listener, ids []string, meta json.RawMessage, owner tasks.Owner) *jsonrpc.Error {
	if ids == nil || e.tasks == nil {
		return nil
	}
	m, jerr := decodeMeta(meta)
	if jerr != nil {
		return jerr
	}
	if !declaresTasks(m) {
		return missingTasks("subscriptions/listen with notifications.taskIds")
	}
	tl, accepted, err := e.tasks.Listen(owner, ids)
	if err != nil {
		return tasks.RPCError(err)
	}
	l.tasks, l.taskIDs = tl, accepted
	if l.taskIDs == nil {
		l.taskIDs = []string{}
	}
	return nil
}

// subscribe registers a listener for the request id of a caller with
// principal (nil: none) that asked for want, and returns it with what it
// will deliver: every kind of list change (Hangar offers them all), and
// the resources some plugin the caller may use serves.
func (e *Edge) subscribe(id jsonrpc.ID, principal *sdkauth.TokenInfo, want *mcp.NotificationSubscriptions) (*listener, mcp.NotificationSubscriptions) {
	l := &listener{id: id, grant: auth.GrantOf(principal), uris: map[string]bool{}, wake: make(chan struct{}, 1)}
	ack := mcp.NotificationSubscriptions{
		ToolsListChanged:     want.ToolsListChanged,
		PromptsListChanged:   want.PromptsListChanged,
		ResourcesListChanged: want.ResourcesListChanged,
	}
	l.lists[plugin.ToolList], l.lists[plugin.PromptList], l.lists[plugin.ResourceList] = ack.ToolsListChanged, ack.PromptsListChanged, ack.ResourcesListChanged
	rq := core.Request{Principal: principal}
	for _, uri := range want.ResourceSubscriptions {
		if !l.uris[uri] && e.core.Admit(rq, "resources/read", uri) == nil {
			l.uris[uri] = true
			ack.ResourceSubscriptions = append(ack.ResourceSubscriptions, uri)
		}
	}
	for _, k := range []plugin.ListKind{plugin.ToolList, plugin.ResourceList, plugin.PromptList} {
		if l.lists[k] {
			l.seen[k] = e.core.Fingerprint(k, l.grant)
		}
	}
	e.lmu.Lock()
	e.listeners[l] = struct{}{}
	e.lmu.Unlock()
	return l, ack
}

func (e *Edge) unsubscribe(l *listener) {
	e.lmu.Lock()
	delete(e.listeners, l)
	e.lmu.Unlock()
}

// active reports whether the listener delivers anything.
func (l *listener) active() bool {
	return l.lists[plugin.ToolList] || l.lists[plugin.PromptList] || l.lists[plugin.ResourceList] || len(l.uris) > 0 || len(l.taskIDs) > 0
}

// ListChanged implements core.Listener: the listeners that asked for the
// list are told, those with a limited grant only if what they may see
// changed. It runs in a plugin's call: it only queues.
func (e *Edge) ListChanged(k plugin.ListKind) {
	for _, l := range e.listenersNow() {
		if !l.lists[k] {
			continue
		}
		fp := e.core.Fingerprint(k, l.grant)
		l.mu.Lock()
		if fp != l.seen[k] {
			l.seen[k], l.changed[k] = fp, true
			l.signal()
		}
		l.mu.Unlock()
	}
}

// ResourceUpdated implements core.Listener: the listeners of uri are told.
func (e *Edge) ResourceUpdated(uri string) error {
	for _, l := range e.listenersNow() {
		if !l.uris[uri] {
			continue
		}
		l.mu.Lock()
		if !slices.Contains(l.updated, uri) {
			l.updated = append(l.updated, uri)
			l.signal()
		}
		l.mu.Unlock()
	}
	return nil
}

func (e *Edge) listenersNow() []*listener {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	ls := make([]*listener, 0, len(e.listeners))
	for l := range e.listeners {
		ls = append(ls, l)
	}
	return ls
}

// signal wakes the listener's writer. l.mu must be held.
func (l *listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take returns the notifications waiting, encoded.
func (l *listener) take() [][]byte {
	l.mu.Lock()
	changed, updated := l.changed, l.updated
	l.changed, l.updated = [4]bool{}, nil
	l.mu.Unlock()
	meta := mcp.Meta{wire.MetaSubscriptionID: l.id.Raw()}
	var out [][]byte
	for _, n := range []struct {
		k      plugin.ListKind
		method string
	}{{plugin.ToolList, "notifications/tools/list_changed"}, {plugin.PromptList, "notifications/prompts/list_changed"}, {plugin.ResourceList, "notifications/resources/list_changed"}} {
		if changed[n.k] {
			b, _ := wire.EncodeNotification(n.method, &mcp.ToolListChangedParams{Meta: meta})
			out = append(out, b)
		}
	}
	for _, uri := range updated {
		b, _ := wire.EncodeNotification("notifications/resources/updated", &mcp.ResourceUpdatedNotificationParams{Meta: meta, URI: uri})
		out = append(out, b)
	}
	return out
}

// ack is the acknowledgment, the stream's first message.
func (l *listener) ack(n mcp.NotificationSubscriptions) []byte {
	params := &mcp.SubscriptionsAcknowledgedParams{
		Meta:          mcp.Meta{wire.MetaSubscriptionID: l.id.Raw()},
		Notifications: n,
	}
	if l.taskIDs == nil {
		b, _ := wire.EncodeNotification("notifications/subscriptions/acknowledged", params)
		return b
	}
	// The tasks extension's taskIds, beside what the go-sdk's type holds.
	var fields map[string]json.RawMessage
	var notes map[string]json.RawMessage
	raw, _ := json.Marshal(params)
	json.Unmarshal(raw, &fields)
	json.Unmarshal(fields["notifications"], &notes)
	if notes == nil {
		notes = map[string]json.RawMessage{}
	}
	notes["taskIds"], _ = json.Marshal(l.taskIDs)
	fields["notifications"], _ = json.Marshal(notes)
	b, _ := wire.EncodeNotification("notifications/subscriptions/acknowledged", fields)
	return b
}

// taskNote encodes a task's view as notifications/tasks, with the listen
// request's id in _meta.
func (l *listener) taskNote(d *tasks.Detailed) []byte {
	var fields map[string]json.RawMessage
	raw, _ := json.Marshal(d)
	json.Unmarshal(raw, &fields)
	fields["_meta"], _ = json.Marshal(mcp.Meta{wire.MetaSubscriptionID: l.id.Raw()})
	b, _ := wire.EncodeNotification("notifications/tasks", fields)
	return b
}

// result is the listen request's answer, which ends the stream.
func (e *Edge) listenResult(l *listener) []byte {
	res := &mcp.SubscriptionsListenResult{Meta: e.withServerInfo(mcp.Meta{wire.MetaSubscriptionID: l.id.Raw()})}
	res.ResultType = "complete"
	body, _ := wire.MarshalPlain(res)
	b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: l.id, Result: body})
	return b
}

// Stop ends every subscriptions/listen stream with its result, and those
// that open later at once: the server is stopping.
func (e *Edge) Stop() {
	e.stopOnce.Do(func() { close(e.stop) })
}

// listen serves a listener until ctx ends (the client went away or
// cancelled: nothing more is sent) or the server stops: it returns the
// listen request's result then, to end the stream with, or nil. write
// sends a message, and ping (nil over stdio) an SSE comment when the
// stream was quiet for keepAlive; the stream ends with its result too when
// evicted is closed (listenCaps).
func (e *Edge) listen(ctx context.Context, l *listener, ack mcp.NotificationSubscriptions, write func([]byte) error, ping func() error, evicted <-chan struct{}) []byte {
	defer e.unsubscribe(l)
	var events <-chan *tasks.Detailed
	if l.tasks != nil {
		defer l.tasks.Close()
		events = l.tasks.Events()
	}
	if write(l.ack(ack)) != nil {
		return nil
	}
	if !l.active() {
		return e.listenResult(l) // nothing to wait for
	}
	var tick <-chan time.Time
	if ping != nil {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.wake:
			for _, b := range l.take() {
				if write(b) != nil {
					return nil
				}
			}
		case d, ok := <-events:
			if !ok {
				events = nil // the table closed: the server stops
				continue
			}
			if write(l.taskNote(d)) != nil {
				return nil
			}
		case <-tick:
			if ping() != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-e.stop:
			return e.listenResult(l)
		case <-evicted:
			// The streams are at their cap and this client holds the
			// most: the stream ends as at a stop, and the client may
			// listen again (see listenCaps).
			return e.listenResult(l)
		}
	}
}

// serveListen answers a subscriptions/listen over HTTP.
func (e *Edge) serveListen(w http.ResponseWriter, r *http.Request, m *message) {
	want, taskIDs, jerr := listenFilter(m.params)
	if jerr != nil {
		writeError(w, http.StatusBadRequest, m.id, jerr)
		return
	}
	if taskIDs != nil && e.tasks != nil {
		if mm, _ := decodeMeta(m.meta); !declaresTasks(mm) {
			writeError(w, http.StatusBadRequest, m.id, missingTasks("subscriptions/listen with notifications.taskIds"))
			return
		}
	}
	slot, status, jerr := e.listens.take(listenClient(r))
	if jerr != nil {
		// The refused client's connection is closed after the answer: a
		// client that opens listens it does not read must not keep the
		// connections it was refused on either.
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "10")
		writeError(w, status, m.id, jerr)
		return
	}
	defer e.listens.release(slot)
	principal := sdkauth.TokenInfoFromContext(r.Context())
	l, ack := e.subscribe(m.id, principal, want)
	if jerr := e.followTasks(l, taskIDs, m.meta, tasks.Owner{Principal: core.Subject(principal), Client: clientKey(r.Context())}); jerr != nil {
		e.unsubscribe(l)
		status := errorStatus(jerr)
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, m.id, jerr)
		return
	}
	st := newEventStream(w)
	res := e.listen(r.Context(), l, ack, st.event, st.ping, slot.evicted)
	if res != nil {
		st.final(res)
	}
}

// listenLine serves a subscriptions/listen over stdio; it returns the
// listen's result, or nil if the client cancelled it.
func (e *Edge) listenLine(ctx context.Context, m *message, write func([]byte)) []byte {
	want, taskIDs, jerr := listenFilter(m.params)
	if jerr != nil {
		return wire.EncodeError(m.id, jerr)
	}
	l, ack := e.subscribe(m.id, nil, want)
	if jerr := e.followTasks(l, taskIDs, m.meta, tasks.Owner{Client: localClient}); jerr != nil {
		e.unsubscribe(l)
		return wire.EncodeError(m.id, jerr)
	}
	return e.listen(ctx, l, ack, func(b []byte) error { write(b); return nil }, nil, nil)
}

// CodeTooManyListens is Hangar's JSON-RPC error code (in the range
// JSON-RPC leaves to implementations) for a subscriptions/listen refused
// at a cap on listen streams.
const CodeTooManyListens = -32011

// Defaults of the caps on listen streams over HTTP (LimitListens).
const (
	// DefaultMaxListensPerClient bounds one client's listen streams: a
	// client needs one, a few while it replaces one; anything beyond is
	// a client that does not close them.
	DefaultMaxListensPerClient = 16
)

// listenCaps bounds the subscriptions/listen streams over HTTP, each of
// which holds a connection for as long as its client keeps it: in all, so
// that streams never take every connection (http.max_connections), and
// per client (a token's subject; without authentication, the address the
// request came from), so that one client cannot take every stream. At the
// cap in all, a client that holds fewer streams than another is not
// refused: the oldest stream of the client that holds the most ends (with
// its result, as at a stop) for it, so that clients who each hold few
// streams share them, and no set of clients locks another out. Over stdio
// a listen is its one client's, bounded by its session.
type listenCaps struct {
	mu        sync.Mutex
	max       int                      // 0: no cap in all
	perClient int                      // 0: DefaultMaxListensPerClient
	open      int                      // streams open
	byClient  map[string][]*listenSlot // streams open by client, oldest first

	refusedServer, refusedClient, evicted atomic.Uint64
}

// listenSlot is one stream's place under the caps.
type listenSlot struct {
	client  string
	evicted chan struct{} // closed when the stream must end for another client's
	gone    bool          // evicted: its place is already free
}

// LimitListens sets the caps on listen streams over HTTP: at most max in
// all (0: none but the connection cap), and perClient for one client (0:
// DefaultMaxListensPerClient). Streams already open are kept.
func (e *Edge) LimitListens(max, perClient int) {
	e.listens.mu.Lock()
	defer e.listens.mu.Unlock()
	e.listens.max, e.listens.perClient = max, perClient
}

// ListenStats are the listen streams open over HTTP now, those refused at
// the cap in all ("server") and per client ("client"), and those ended
// for another client's at the cap in all.
type ListenStats struct {
	Open                                  int
	RefusedServer, RefusedClient, Evicted uint64
}

// ListenStats reports the listen streams over HTTP, for metrics.
func (e *Edge) ListenStats() ListenStats {
	e.listens.mu.Lock()
	open := e.listens.open
	e.listens.mu.Unlock()
	return ListenStats{Open: open, RefusedServer: e.listens.refusedServer.Load(), RefusedClient: e.listens.refusedClient.Load(), Evicted: e.listens.evicted.Load()}
}

// listenClient names the client of a request for the caps on listens: its
// token's subject, or without authentication the address it came from (the
// connection's, or behind a trusted proxy the one its X-Forwarded-For
// names: a client cannot choose it, as it could any other header), and
// how to tell the client which it is.
func listenClient(r *http.Request) (key, who string) {
	if ti := sdkauth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "user " + ti.UserID, "your token's subject"
	}
	host := mrtr.ClientOf(r.Context()) // the HTTP layer's: behind a trusted proxy, X-Forwarded-For's
	if host == "" {
		var err error
		if host, _, err = net.SplitHostPort(r.RemoteAddr); err != nil {
			host = r.RemoteAddr
		}
	}
	return "address " + host, "requests without a token from " + host
}

// take gives a new stream of client its place, or refuses it with the
// HTTP status and the JSON-RPC error to answer.
func (c *listenCaps) take(client, who string) (slot *listenSlot, status int, jerr *jsonrpc.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	per := c.perClient
	if per <= 0 {
		per = DefaultMaxListensPerClient
	}
	mine := len(c.byClient[client])
	if mine >= per {
		c.refusedClient.Add(1)
		return nil, http.StatusTooManyRequests, &jsonrpc.Error{Code: CodeTooManyListens, Message: fmt.Sprintf(
			"too many subscriptions/listen streams: %d are open for %s, the limit per client (http.max_listens_per_client); end one (cancel its request or close its connection) or ask for more notifications in one listen, then listen again", per, who)}
	}
	if c.max > 0 && c.open >= c.max {
		// The client holding the most streams gives its oldest up, if it
		// holds more than this one will.
		var most string
		for k, ss := range c.byClient {
			if len(ss) > len(c.byClient[most]) {
				most = k
			}
		}
		if len(c.byClient[most]) <= mine+1 {
			c.refusedServer.Add(1)
			return nil, http.StatusServiceUnavailable, &jsonrpc.Error{Code: CodeTooManyListens, Message: fmt.Sprintf(
				"too many subscriptions/listen streams: this server holds at most %d (http.max_listens), and %s hold as many as any client; end one of yours, or try again later", c.max, who)}
		}
		old := c.byClient[most][0]
		old.gone = true
		close(old.evicted)
		c.remove(old)
		c.evicted.Add(1)
	}
	if c.byClient == nil {
		c.byClient = map[string][]*listenSlot{}
	}
	slot = &listenSlot{client: client, evicted: make(chan struct{})}
	c.open++
	c.byClient[client] = append(c.byClient[client], slot)
	return slot, 0, nil
}

// release frees the place of a stream that ended.
func (c *listenCaps) release(s *listenSlot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !s.gone {
		c.remove(s)
	}
}

// remove takes s out of the account. c.mu must be held.
func (c *listenCaps) remove(s *listenSlot) {
	ss := c.byClient[s.client]
	if i := slices.Index(ss, s); i >= 0 {
		ss = slices.Delete(ss, i, i+1)
		c.open--
	}
	if len(ss) == 0 {
		delete(c.byClient, s.client)
	} else {
		c.byClient[s.client] = ss
	}
}
