package stateless

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
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
}

// listenFilter reads the notifications a subscriptions/listen asks for.
func listenFilter(params json.RawMessage) (*mcp.NotificationSubscriptions, *jsonrpc.Error) {
	var p struct {
		Notifications *mcp.NotificationSubscriptions `json:"notifications"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("invalid subscriptions/listen params: %v", err)
	}
	if p.Notifications == nil {
		return nil, invalidParams("subscriptions/listen needs params.notifications: the notifications to deliver")
	}
	// A listen holds its resources for as long as it runs: as many as a
	// session of an older version may subscribe to.
	if uris := p.Notifications.ResourceSubscriptions; len(uris) > wire.MaxSubscriptions {
		distinct := map[string]bool{}
		for _, uri := range uris {
			distinct[uri] = true
		}
		if len(distinct) > wire.MaxSubscriptions {
			return nil, invalidParams("subscriptions/listen asks for %d resources; a listen may deliver the updates of at most %d: listen to fewer, or split them over several listens", len(distinct), wire.MaxSubscriptions)
		}
	}
	return p.Notifications, nil
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
	return l.lists[plugin.ToolList] || l.lists[plugin.PromptList] || l.lists[plugin.ResourceList] || len(l.uris) > 0
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
	b, _ := wire.EncodeNotification("notifications/subscriptions/acknowledged", &mcp.SubscriptionsAcknowledgedParams{
		Meta:          mcp.Meta{wire.MetaSubscriptionID: l.id.Raw()},
		Notifications: n,
	})
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
// stream was quiet for keepAlive.
func (e *Edge) listen(ctx context.Context, l *listener, ack mcp.NotificationSubscriptions, write func([]byte) error, ping func() error) []byte {
	defer e.unsubscribe(l)
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
		case <-tick:
			if ping() != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-e.stop:
			return e.listenResult(l)
		}
	}
}

// serveListen answers a subscriptions/listen over HTTP.
func (e *Edge) serveListen(w http.ResponseWriter, r *http.Request, m *message) {
	want, jerr := listenFilter(m.params)
	if jerr != nil {
		writeError(w, http.StatusBadRequest, m.id, jerr)
		return
	}
	l, ack := e.subscribe(m.id, sdkauth.TokenInfoFromContext(r.Context()), want)
	st := newEventStream(w)
	res := e.listen(r.Context(), l, ack, st.event, st.ping)
	if res != nil {
		st.final(res)
	}
}

// listenLine serves a subscriptions/listen over stdio; it returns the
// listen's result, or nil if the client cancelled it.
func (e *Edge) listenLine(ctx context.Context, m *message, write func([]byte)) []byte {
	want, jerr := listenFilter(m.params)
	if jerr != nil {
		return wire.EncodeError(m.id, jerr)
	}
	l, ack := e.subscribe(m.id, nil, want)
	return e.listen(ctx, l, ack, func(b []byte) error { write(b); return nil }, nil)
}
