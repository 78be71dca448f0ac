package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// sessionHost is the client of one session, as plugins' host imports see
// it. It refuses what the client did not declare it can do.
type sessionHost struct {
	ss    *mcp.ServerSession
	notes *notifier // the session's; nil means send at once
	last  uint64    // the call's last queued notification
}

func (h *sessionHost) caps() *mcp.ClientCapabilities {
	if p := h.ss.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

func (h *sessionHost) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if h.caps().Sampling == nil {
		return nil, errors.New("the client does not support sampling")
	}
	return h.ss.CreateMessage(ctx, params)
}

func (h *sessionHost) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if h.caps().Elicitation == nil {
		return nil, errors.New("the client does not support elicitation")
	}
	// A client may declare elicitation while speaking a version without
	// it; Hangar sends a session nothing its version does not define.
	v := sessionVersion(h.ss)
	if v < version20250618 {
		return nil, fmt.Errorf("the client does not support elicitation: the session's protocol version %s has none (it came with %s)", v, version20250618)
	}
	if params != nil && v < version20251125 && (params.Mode == "url" || params.Mode == "" && (params.URL != "" || params.ElicitationID != "")) {
		return nil, fmt.Errorf(`the client does not support "url" elicitation: the session's protocol version %s has only form elicitation ("url" came with %s)`, v, version20251125)
	}
	return h.ss.Elicit(ctx, params)
}

func (h *sessionHost) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	if h.caps().RootsV2 == nil {
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
	if v := sessionVersion(h.ss); v < version20251125 {
		return fmt.Errorf("the client does not support elicitation completion notices: the session's protocol version %s has no URL elicitation (it came with %s)", v, version20251125)
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

// flush waits, briefly, for the call's notifications to be written.
func (h *sessionHost) flush() {
	if h.notes != nil {
		h.notes.flush(h.last)
	}
}

// templateOwner returns the mount of a registered resource template (RFC
// 6570) that uri matches, or nil.
func (s *Server) templateOwner(uri string) *mount {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, m := range s.templates {
		if tmpl, err := uritemplate.New(t); err == nil && tmpl.Regexp().MatchString(uri) {
			return m
		}
	}
	return nil
}

// The go-sdk keeps the JSON-RPC id of the request being handled in the
// handler's context, under a key of an unexported type. v1 plugins are
// promised that id, so requestID finds the key's type once, by looking at
// the context chain, and then reads the value the ordinary way. If a future
// SDK stops storing it, requestID returns "" (and a test fails).
var idKey atomic.Pointer[any]

func requestID(ctx context.Context) string {
	key := idKey.Load()
	if key == nil {
		k := findIDKey(ctx)
		if k == nil {
			return ""
		}
		idKey.Store(&k)
		key = &k
	}
	id, ok := ctx.Value(*key).(jsonrpc.ID)
	if !ok || !id.IsValid() {
		return ""
	}
	switch v := id.Raw().(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	default:
		return fmt.Sprint(v)
	}
}

// findIDKey walks ctx's chain of values for a key of the SDK's type
// idContextKey and returns a value of that type.
func findIDKey(ctx context.Context) any {
	const pkg, name = "github.com/modelcontextprotocol/go-sdk/mcp", "idContextKey"
	for v := reflect.ValueOf(ctx); v.IsValid(); {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return nil
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil
		}
		if k := v.FieldByName("key"); k.IsValid() && k.Kind() == reflect.Interface && !k.IsNil() {
			if t := k.Elem().Type(); t.PkgPath() == pkg && t.Name() == name {
				return reflect.Zero(t).Interface()
			}
		}
		v = v.FieldByName("Context")
	}
	return nil
}
