package mrtr

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

var _ plugin.Asker = host{}

// asking is one input request a plugin makes: under key ("": a key of
// Hangar's, "elicitation-1"), of kind k, built by build for the client's
// capabilities.
type asking struct {
	key   string
	kind  kind
	build func(*mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error)
}

// Ask makes the plugin's requests one round of input requests, under the
// plugin's keys, and waits for all their answers: the client gets them in
// one input_required result and answers them in one retry.
func (h host) Ask(ctx context.Context, reqs []plugin.InputRequest) ([]plugin.InputAnswer, error) {
	items := make([]asking, len(reqs))
	for i, r := range reqs {
		items[i].key = r.Key
		switch {
		case r.CreateMessage != nil:
			params := r.CreateMessage
			items[i].kind = kindSampling
			items[i].build = func(caps *mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error) {
				req, err := samplingRequest(params, caps)
				return req, nil, err
			}
		case r.Elicit != nil:
			k, req, schema, err := elicitRequest(r.Elicit)
			if err != nil {
				return nil, fmt.Errorf("request %q: %w", r.Key, err)
			}
			items[i].kind = k
			items[i].build = func(*mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error) {
				return req, schema, nil
			}
		default:
			items[i].kind = kindRoots
			items[i].build = func(*mcp.ClientCapabilities) (json.RawMessage, *jsonschema.Resolved, error) {
				return rootsRequest, nil, nil
			}
		}
	}
	raws, err := h.c.askAll(ctx, items)
	if err != nil {
		return nil, err
	}
	out := make([]plugin.InputAnswer, len(reqs))
	for i, raw := range raws {
		a := &out[i]
		switch items[i].kind {
		case kindSampling:
			a.CreateMessage = new(mcp.CreateMessageResult)
			a.Err = json.Unmarshal(raw, a.CreateMessage)
		case kindRoots:
			a.ListRoots = new(mcp.ListRootsResult)
			a.Err = json.Unmarshal(raw, a.ListRoots)
		default:
			a.Elicit = new(mcp.ElicitResult)
			a.Err = json.Unmarshal(raw, a.Elicit)
		}
		if a.Err != nil {
			*a = plugin.InputAnswer{Err: fmt.Errorf("decoding the client's answer to %q: %w", reqs[i].Key, a.Err)}
		}
	}
	return out, nil
}

// askAll adds the input requests items to the call, as one round, and
// waits for all their answers, which come together (a retry delivers a
// round's answers only when all are there). The call is parked
// (InputRequired) until then. A client that did not declare a capability
// one of them needs fails the waiting request with a CapabilityError, and
// the plugin gets an error, as does a call refused by the caps; then no
// request is added.
func (c *Call) askAll(ctx context.Context, items []asking) ([]json.RawMessage, error) {
	c.mu.Lock()
	if c.status.Final() {
		c.mu.Unlock()
		return nil, ErrCallEnded
	}
	for _, it := range items {
		if e := missingCapability(it.kind, c.caps); e != nil {
			c.m.stats.capabilityRefusals.Add(1)
			c.endLocked(Failed, nil, e)
			c.mu.Unlock()
			return nil, e.pluginError()
		}
	}
	ins := make([]*input, len(items))
	for i, it := range items {
		req, schema, err := it.build(c.caps)
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if it.key != "" && c.pending[it.key] != nil {
			c.mu.Unlock()
			return nil, fmt.Errorf("input request key %q is in use by a request still waiting for its answer", it.key)
		}
		ins[i] = &input{key: it.key, kind: it.kind, request: req, schema: schema, answer: make(chan json.RawMessage, 1)}
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
	if c.pending == nil {
		c.pending = map[string]*input{}
	}
	for _, in := range ins {
		c.seq++
		if in.key == "" {
			in.key = fmt.Sprintf("%s-%d", in.kind.keyPrefix(), c.seq)
		}
		c.pending[in.key] = in
	}
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
	c.m.stats.parkedTotal.Add(uint64(len(ins)))
	c.setLocked(InputRequired)
	c.mu.Unlock()

	// ctx is the plugin's wait, which the plugin layer derives from the
	// call's context; the call's own is watched too, so that the park
	// timeout and Close end the wait whatever context the edge ran the
	// plugin with.
	answers := make([]json.RawMessage, len(ins))
	done := ctx
	for i, in := range ins {
		select {
		case answers[i] = <-in.answer:
			continue
		case <-ctx.Done():
		case <-c.ctx.Done():
			done = c.ctx
		}
		c.mu.Lock()
		for _, in := range ins {
			if c.pending[in.key] == in {
				delete(c.pending, in.key)
			}
		}
		if len(c.pending) == 0 && c.status == InputRequired {
			// The plugin stopped waiting for its client: the call is no
			// longer parked, and its place under the caps is free. (A
			// retry with its state still finds it, in the table.)
			c.setLocked(Working)
			c.uncountLocked()
		}
		c.mu.Unlock()
		return nil, context.Cause(done)
	}
	return answers, nil
}
