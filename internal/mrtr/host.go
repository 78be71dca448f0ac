package mrtr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// Host returns the plugin.Host the call's plugin runs with (Manager.Serve
// passes it to Run). Its CreateMessage, Elicit and ListRoots turn into
// input requests of the call and block until the answers come, the
// plugin's context ends (its own timeout, or the call's end), or the park
// timeout cancels the call. Log and NotifyProgress go to the request that
// currently waits for the call, through its queue; while none does, or
// its queue is full, they are dropped and counted
// (Stats.DroppedNotifications). NotifyElicitationComplete fails
// with ErrNoElicitationComplete.
func (c *Call) Host() plugin.Host { return host{c} }

type host struct{ c *Call }

var _ plugin.Host = host{}

func (h host) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if params == nil {
		params = &mcp.CreateMessageParams{}
	}
	raw, err := h.c.ask(ctx, kindSampling, func(caps *mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error) {
		req, err := samplingRequest(params, caps)
		return req, nil, err
	})
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the client's sampling answer: %w", err)
	}
	return &res, nil
}

func (h host) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if params == nil {
		params = &mcp.ElicitParams{}
	}
	k, req, schema, err := elicitRequest(params)
	if err != nil {
		return nil, err
	}
	raw, err := h.c.ask(ctx, k, func(*mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error) {
		return req, schema, nil
	})
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the client's elicitation answer: %w", err)
	}
	return &res, nil
}

func (h host) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	raw, err := h.c.ask(ctx, kindRoots, func(*mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error) {
		return rootsRequest, nil, nil
	})
	if err != nil {
		return nil, err
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the client's roots answer: %w", err)
	}
	return &res, nil
}

func (h host) Log(_ context.Context, params *mcp.LoggingMessageParams) error {
	h.c.notify(func(*attachment) (note, bool) { return note{log: params}, true })
	return nil
}

// NotifyProgress sends the plugin's progress to the waiting request. A
// notification with the token of the request that started the call (what
// the plugin layer fills in when the plugin gives none) gets the waiting
// request's token instead, so that progress after a resume belongs to the
// retry; when the retry sent no token, it is not sent.
func (h host) NotifyProgress(_ context.Context, params *mcp.ProgressNotificationParams) error {
	h.c.notify(func(a *attachment) (note, bool) {
		p, send := progressFor(params, h.c.token0, a.token)
		return note{progress: p}, send
	})
	return nil
}

// progressFor returns the progress notification params to send to the
// request that waits, whose token is token, for a call started with
// token0, and whether to send it: the plugin's own token goes as it is,
// and token0 becomes token, or nothing when that request sent none.
func progressFor(params *mcp.ProgressNotificationParams, token0, token any) (*mcp.ProgressNotificationParams, bool) {
	p := *params
	if sameToken(p.ProgressToken, token0) {
		if p.ProgressToken = token; p.ProgressToken == nil {
			return nil, false // the waiting request asked for no progress
		}
	}
	return &p, true
}

func (h host) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return ErrNoElicitationComplete
}

// notify queues the notification made by mk for the waiting request, on
// the plugin's goroutine, which it never blocks: it is dropped and
// counted when no request waits, when the request was answered, or when
// its queue is full.
func (c *Call) notify(mk func(a *attachment) (note, bool)) {
	c.mu.Lock()
	a := c.att
	c.mu.Unlock()
	if a == nil {
		c.m.stats.dropped.Add(1)
		return
	}
	if n, send := mk(a); send {
		c.m.stats.queue(a, n)
	}
}

func sameToken(a, b any) bool {
	if a == nil || b == nil {
		return false
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// ask adds an input request of kind k, built by build for the client's
// capabilities, to the call under a key of Hangar's, and waits for its
// answer (see askAll).
func (c *Call) ask(ctx context.Context, k kind, build func(*mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error)) (json.RawMessage, error) {
	answers, err := c.askAll(ctx, []asking{{kind: k, build: build}})
	if err != nil {
		return nil, err
	}
	return answers[0], nil
}
