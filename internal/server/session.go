package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
