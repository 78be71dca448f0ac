package mrtr

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

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
		p := *params
		if sameToken(p.ProgressToken, h.c.token0) {
			if p.ProgressToken = a.token; p.ProgressToken == nil {
				return note{}, false // the waiting request asked for no progress
			}
		}
		return note{progress: &p}, true
	})
	return nil
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
	n, send := mk(a)
	if !send {
		return
	}
	switch a.push(n) {
	case full:
		c.m.stats.queueFull.Add(1)
		c.m.stats.dropped.Add(1)
	case answered:
		c.m.stats.dropped.Add(1)
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
// capabilities, to the call, and waits for its answer. The call is parked
// (InputRequired) until then. A client that did not declare the
// capability k needs fails the waiting request with a CapabilityError and
// the plugin gets an error, as does a call refused by the caps.
func (c *Call) ask(ctx context.Context, k kind, build func(*mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error)) (json.RawMessage, error) {
	c.mu.Lock()
	if c.status.Final() {
		c.mu.Unlock()
		return nil, ErrCallEnded
	}
	if e := missingCapability(k, c.caps); e != nil {
		c.m.stats.capabilityRefusals.Add(1)
		c.endLocked(Failed, nil, e)
		c.mu.Unlock()
		return nil, e.pluginError()
	}
	req, schema, err := build(c.caps)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if c.counted && c.m.isClosed() {
		// Answered once and asking again while the server drains: no
		// retry can be waited for.
		c.endLocked(Failed, nil, ErrClosed)
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if !c.counted {
		evict, err := c.m.acquire(c)
		if err != nil {
			c.endLocked(Failed, nil, err)
			c.mu.Unlock()
			return nil, err
		}
		if evict != nil {
			go evict.evict() // it has a lock of its own
		}
		c.held, c.counted = true, true
	}
	c.seq++
	in := &input{key: fmt.Sprintf("%s-%d", k.keyPrefix(), c.seq), kind: k, request: req, schema: schema, answer: make(chan json.RawMessage, 1)}
	if c.pending == nil {
		c.pending = map[string]*input{}
	}
	c.pending[in.key] = in
	if c.use == "" {
		// A new round: a new single-use state. While the state of the
		// previous round is still out (the plugin stopped waiting for it
		// and asked again before the client came back), the client's
		// retry with it finds this request instead.
		c.use = rand.Text()
		c.expiry = c.m.now().Add(c.m.parkTimeout)
		use := c.use
		c.timer = time.AfterFunc(c.m.parkTimeout, func() { c.expire(use) })
	}
	c.m.stats.parkedTotal.Add(1)
	c.setLocked(InputRequired)
	c.mu.Unlock()

	// ctx is the plugin's wait, which the plugin layer derives from the
	// call's context; the call's own is watched too, so that the park
	// timeout and Close end the wait whatever context the edge ran the
	// plugin with.
	done := ctx
	select {
	case a := <-in.answer:
		return a, nil
	case <-ctx.Done():
	case <-c.ctx.Done():
		done = c.ctx
	}
	c.mu.Lock()
	if c.pending[in.key] == in {
		delete(c.pending, in.key)
		if len(c.pending) == 0 && c.status == InputRequired {
			// The plugin stopped waiting for its client: the call is no
			// longer parked, and its place under the caps is free. (A
			// retry with its state still finds it, in the table.)
			c.setLocked(Working)
			c.uncountLocked()
		}
	}
	c.mu.Unlock()
	return nil, context.Cause(done)
}
