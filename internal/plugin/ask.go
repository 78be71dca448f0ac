package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The methods of the requests a plugin may send with ask_client.
const (
	methodElicit        = "elicitation/create"
	methodCreateMessage = "sampling/createMessage"
	methodListRoots     = "roots/list"
)

// Bounds of one ask_client round.
const (
	// MaxInputRequests bounds the requests of one round.
	MaxInputRequests = 16
	// MaxInputKey bounds the length of a request's key, in bytes.
	MaxInputKey = 128
)

// InputRequest is one request for the client's input among those a plugin
// asks at once (the ask_client import), under the key the plugin chose.
// Exactly one of CreateMessage, Elicit and ListRoots is set.
type InputRequest struct {
	Key           string
	CreateMessage *mcp.CreateMessageParams
	Elicit        *mcp.ElicitParams
	ListRoots     bool
}

// InputAnswer is the client's answer to one InputRequest: the result that
// matches the request, or Err.
type InputAnswer struct {
	CreateMessage *mcp.CreateMessageResult
	Elicit        *mcp.ElicitResult
	ListRoots     *mcp.ListRootsResult
	Err           error
}

// An Asker is a Host that asks its client several things at once, under the
// plugin's keys: MCP 2026-07-28's input_required result, whose inputRequests
// are keyed. Ask returns one answer per request, in order, or fails the
// round as a whole. A Host that is not an Asker is asked one request after
// another, with its CreateMessage, Elicit and ListRoots.
type Asker interface {
	Ask(ctx context.Context, reqs []InputRequest) ([]InputAnswer, error)
}

// Ask asks through the session's Host, as one wait for the client.
func (hh heldHost) Ask(ctx context.Context, reqs []InputRequest) ([]InputAnswer, error) {
	ctx, done := hh.hold(ctx)
	if ctx.Err() != nil { // ended as it parked: the client is not asked
		return nil, done(context.Cause(ctx))
	}
	res, err := askHost(ctx, hh.Host, reqs)
	return res, done(err)
}

// askHost asks h for reqs: at once if it is an Asker, else one after
// another; a request that fails then has its answer's Err set, and the
// requests after it are still asked.
func askHost(ctx context.Context, h Host, reqs []InputRequest) ([]InputAnswer, error) {
	if a, ok := h.(Asker); ok {
		return a.Ask(ctx, reqs)
	}
	out := make([]InputAnswer, len(reqs))
	for i, r := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		a := &out[i]
		switch {
		case r.CreateMessage != nil:
			a.CreateMessage, a.Err = h.CreateMessage(ctx, r.CreateMessage)
		case r.Elicit != nil:
			a.Elicit, a.Err = h.Elicit(ctx, r.Elicit)
		default:
			a.ListRoots, a.Err = h.ListRoots(ctx)
		}
	}
	return out, nil
}

// askInput is ask_client's input: the requests by key, each the method
// and the input of the import that asks it alone (create_elicitation's,
// create_message's; roots/list has none).
type askInput struct {
	Requests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"requests"`
}

// askAnswer is one answer of ask_client's output: the output the import
// that asks alone would give, or the error.
type askAnswer struct {
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// askClient is the ask_client import: several requests for input at once,
// under the plugin's keys.
func (p *Plugin) askClient(_ context.Context, s *callState, in []byte) (any, error) {
	var input askInput
	if err := decodeInput(in, &input); err != nil {
		return nil, err
	}
	reqs, timeout, err := inputRequests(input)
	if err != nil {
		return nil, err
	}
	out, err := p.wait(s, timeout, func(ctx context.Context) (any, error) {
		return askHost(ctx, s.call.Host, reqs)
	})
	if err != nil {
		return nil, err
	}
	answers, ok := out.([]InputAnswer)
	if !ok || len(answers) != len(reqs) {
		return nil, errors.New("the client's answers do not match the requests")
	}
	res := make(map[string]askAnswer, len(reqs))
	for i, r := range reqs {
		res[r.Key] = answerOutput(r, answers[i])
	}
	return struct {
		Answers map[string]askAnswer `json:"answers"`
	}{res}, nil
}

// inputRequests checks ask_client's input and returns its requests, in
// the order of their keys, and the shortest timeout of its elicitations
// (0: none).
func inputRequests(input askInput) ([]InputRequest, time.Duration, error) {
	switch n := len(input.Requests); {
	case n == 0:
		return nil, 0, errors.New("invalid input: requests: expected an object of at least one request by key")
	case n > MaxInputRequests:
		return nil, 0, fmt.Errorf("invalid input: requests: %d requests, more than %d", n, MaxInputRequests)
	}
	keys := make([]string, 0, len(input.Requests))
	for k := range input.Requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var timeout time.Duration
	reqs := make([]InputRequest, 0, len(keys))
	for _, k := range keys {
		if k == "" || len(k) > MaxInputKey {
			return nil, 0, fmt.Errorf("invalid input: requests: a key must be 1 to %d bytes, not %d", MaxInputKey, len(k))
		}
		r := input.Requests[k]
		req := InputRequest{Key: k}
		switch r.Method {
		case methodElicit:
			var e elicitInput
			if err := decodeInput(r.Params, &e); err != nil {
				return nil, 0, fmt.Errorf("requests[%q]: %w", k, err)
			}
			params, t, err := elicitParams(e)
			if err != nil {
				return nil, 0, fmt.Errorf("requests[%q]: %w", k, err)
			}
			if t > 0 && (timeout == 0 || t < timeout) {
				timeout = t
			}
			req.Elicit = params
		case methodCreateMessage:
			params, err := createMessageParams(r.Params)
			if err != nil {
				return nil, 0, fmt.Errorf("requests[%q]: %w", k, err)
			}
			req.CreateMessage = params
		case methodListRoots:
			req.ListRoots = true
		default:
			return nil, 0, fmt.Errorf("invalid input: requests[%q].method: %q is not %q, %q or %q", k, r.Method, methodElicit, methodCreateMessage, methodListRoots)
		}
		reqs = append(reqs, req)
	}
	return reqs, timeout, nil
}

// answerOutput returns the answer to r as ask_client gives it: the output
// of the import that asks alone, or the error.
func answerOutput(r InputRequest, a InputAnswer) askAnswer {
	if a.Err != nil {
		return askAnswer{Error: a.Err.Error()}
	}
	switch {
	case r.CreateMessage != nil:
		if a.CreateMessage == nil || a.CreateMessage.Content == nil {
			return askAnswer{Error: "the client answered sampling without content"}
		}
		res := a.CreateMessage
		return askAnswer{Result: v1CreateMessageResult{Content: res.Content, Model: res.Model, Role: res.Role, StopReason: res.StopReason}}
	case r.Elicit != nil:
		if a.Elicit == nil {
			return askAnswer{Error: "the client answered elicitation with nothing"}
		}
		return askAnswer{Result: v1ElicitResult{Action: a.Elicit.Action, Content: a.Elicit.Content}}
	}
	if a.ListRoots == nil {
		return askAnswer{Error: "the client answered roots/list with nothing"}
	}
	roots := make([]v1Root, 0, len(a.ListRoots.Roots))
	for _, r := range a.ListRoots.Roots {
		if r != nil {
			roots = append(roots, v1Root{URI: r.URI, Name: r.Name})
		}
	}
	return askAnswer{Result: v1ListRootsResult{Roots: roots}}
}
