package sessions

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The go-sdk keeps each session's resource subscriptions in a map by URI,
// and when a session ends removes the session from each URI's entry but
// never the URI itself: every URI ever subscribed stayed in the map, and
// each session's end walked them all under the server's lock. Hangar
// counts each session's subscriptions, refuses those past
// wire.MaxSubscriptions, and when the session ends unsubscribes it from each,
// through the go-sdk's own resources/unsubscribe handler, which drops a
// URI nobody is subscribed to.

// subscriptions are the resources each session is subscribed to.
type subscriptions struct {
	mu        sync.Mutex
	bySession map[*mcp.ServerSession]map[string]bool

	// unsubscribe is the go-sdk's handler of resources/unsubscribe (the
	// method handler inside keepUnsubscribe).
	unsubscribe mcp.MethodHandler

	dropping sync.WaitGroup // sessions that ended, being unsubscribed
}

// keepUnsubscribe is receiving middleware, the innermost: it keeps the
// go-sdk's own method handler, through which the subscriptions of a
// session that ended are dropped.
func (s *Server) keepUnsubscribe(next mcp.MethodHandler) mcp.MethodHandler {
	s.subs.unsubscribe = next
	return next
}

// subscribe accepts subscriptions to URIs that some plugin the caller may
// use serves, up to wire.MaxSubscriptions for a session. The go-sdk keeps
// them; plugins report updates with notify_resource_updated.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if err := s.core.Subscribe(core.Request{Principal: tokenOf(req.Extra)}, req.Params.URI); err != nil {
		return err
	}
	ss := req.Session
	if ss == nil {
		return nil
	}
	subs := &s.subs
	subs.mu.Lock()
	defer subs.mu.Unlock()
	set := subs.bySession[ss]
	if set[req.Params.URI] {
		return nil
	}
	if len(set) >= wire.MaxSubscriptions {
		return &jsonrpc.Error{Code: core.CodeServerStopping, Message: fmt.Sprintf("too many subscriptions: a session may be subscribed to at most %d resources; unsubscribe from some first", wire.MaxSubscriptions)}
	}
	if set == nil {
		set = map[string]bool{}
		subs.bySession[ss] = set
		subs.dropping.Go(func() {
			ss.Wait()
			s.dropSubscriptions(ss)
		})
	}
	set[req.Params.URI] = true
	return nil
}

// unsubscribeHandler forgets a subscription the client ended.
func (s *Server) unsubscribeHandler(_ context.Context, req *mcp.UnsubscribeRequest) error {
	subs := &s.subs
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if set := subs.bySession[req.Session]; set != nil {
		delete(set, req.Params.URI)
	}
	return nil
}

// dropSubscriptions unsubscribes a session that ended from every resource
// it was subscribed to. The go-sdk's session handles no request any more
// (ServerSession.Wait returned), so none comes after.
func (s *Server) dropSubscriptions(ss *mcp.ServerSession) {
	subs := &s.subs
	subs.mu.Lock()
	set := subs.bySession[ss]
	delete(subs.bySession, ss)
	subs.mu.Unlock()
	ctx := context.Background()
	for uri := range set {
		if _, err := subs.unsubscribe(ctx, "resources/unsubscribe", &mcp.UnsubscribeRequest{Session: ss, Params: &mcp.UnsubscribeParams{URI: uri}}); err != nil {
			s.log.Warn("dropping the subscription of a session that ended", "uri", uri, "error", err)
		}
	}
}

// Subscriptions returns how many resource subscriptions the sessions hold.
func (s *Server) Subscriptions() int {
	subs := &s.subs
	subs.mu.Lock()
	defer subs.mu.Unlock()
	n := 0
	for _, set := range subs.bySession {
		n += len(set)
	}
	return n
}
