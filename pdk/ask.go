package pdk

import (
	"encoding/json"
	"errors"
	"strconv"
)

// The methods of the requests for input, as MCP names them.
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	MethodListRoots     = "roots/list"
)

// InputRequest is one request for the client's input in a call to
// [Context.Ask]. Exactly one of its fields is set.
type InputRequest struct {
	// Elicit asks the user to fill in a form ([Context.Elicit]).
	Elicit *ElicitParams
	// ElicitURL asks the user to open a URL ([Context.ElicitURL]).
	ElicitURL *ElicitURLParams
	// CreateMessage asks the client to sample a language model
	// ([Context.CreateMessage]).
	CreateMessage *CreateMessageParams
	// ListRoots asks the client for its roots ([Context.ListRoots]).
	ListRoots bool
}

// InputResponse is the client's answer to one [InputRequest]: the field
// that matches the request is set, or Err.
type InputResponse struct {
	Elicit        *ElicitResult // for Elicit and ElicitURL
	CreateMessage *CreateMessageResult
	ListRoots     *ListRootsResult
	// Err is why this request got no answer, a *HostError.
	Err error
}

// askRequest is one request of the ask_client import's input.
type askRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// askAnswer is one answer of the ask_client import's output.
type askAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Ask asks the client for several inputs at once, each under the key the
// plugin gives it, and waits until every one is answered. A client of MCP
// 2026-07-28 gets them together, in one input_required result whose
// inputRequests carry the plugin's keys, and answers them in one retry; a
// session of an older version is asked one request after another, in the
// order of the keys. [Context.Elicit], [Context.CreateMessage] and
// [Context.ListRoots] are Ask with one request and a key Hangar chooses.
//
// Ask uses ask_client, an import of Hangar's beyond the plugin schema's: a
// plugin that calls Ask runs under Hangar only (a plugin that does not
// call it does not import it).
//
// The elicitations' timeouts bound the whole round: the shortest applies.
// Ask fails as a whole, with a *HostError, when the client lacks a
// capability one of the requests needs (at 2026-07-28 the request then
// fails with MissingRequiredClientCapability, and no request is sent), or
// when the input is invalid: no requests, an empty key, or a request with
// none or several of its fields set. A request the client answers with an
// error, in a session, has its InputResponse.Err set.
func (c *Context) Ask(requests map[string]*InputRequest) (map[string]*InputResponse, error) {
	if len(requests) == 0 {
		return nil, errors.New("pdk: Ask: no requests")
	}
	in := make(map[string]askRequest, len(requests))
	for key, r := range requests {
		if key == "" {
			return nil, errors.New("pdk: Ask: a request has an empty key")
		}
		req, err := r.wire()
		if err != nil {
			return nil, wrapError(err, "pdk: Ask: request "+strconv.Quote(key))
		}
		in[key] = req
	}
	enableAsk()
	var out struct {
		Answers map[string]askAnswer `json:"answers"`
	}
	if err := callJSON(c.hostAPI(), importAskClient, struct {
		Requests map[string]askRequest `json:"requests"`
	}{in}, &out); err != nil {
		return nil, err
	}
	res := make(map[string]*InputResponse, len(requests))
	for key, r := range requests {
		a, ok := out.Answers[key]
		resp := &InputResponse{}
		res[key] = resp
		switch {
		case !ok:
			resp.Err = &HostError{Import: importAskClient, Message: "no answer for " + strconv.Quote(key)}
			continue
		case a.Error != "":
			resp.Err = &HostError{Import: importAskClient, Message: a.Error}
			continue
		}
		var err error
		switch {
		case r.Elicit != nil || r.ElicitURL != nil:
			resp.Elicit = new(ElicitResult)
			err = json.Unmarshal(a.Result, resp.Elicit)
		case r.CreateMessage != nil:
			resp.CreateMessage = new(CreateMessageResult)
			err = json.Unmarshal(a.Result, resp.CreateMessage)
		default:
			resp.ListRoots = new(ListRootsResult)
			err = json.Unmarshal(a.Result, resp.ListRoots)
		}
		if err != nil {
			*resp = InputResponse{Err: wrapError(err, "pdk: decoding the answer to "+strconv.Quote(key))}
		}
	}
	return res, nil
}

// wire returns r as the ask_client import takes it.
func (r *InputRequest) wire() (askRequest, error) {
	if r == nil {
		return askRequest{}, errors.New("nil request")
	}
	n := 0
	var req askRequest
	if r.Elicit != nil {
		n++
		schema := r.Elicit.RequestedSchema
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		req = askRequest{MethodElicit, &elicitRequest{Mode: "form", Message: r.Elicit.Message, RequestedSchema: schema,
			Timeout: timeoutMillis(r.Elicit.Timeout), Meta: r.Elicit.Meta}}
	}
	if r.ElicitURL != nil {
		n++
		if r.ElicitURL.ElicitationID == "" {
			return askRequest{}, errors.New("ElicitURL: ElicitationID is required")
		}
		req = askRequest{MethodElicit, &elicitRequest{Mode: "url", Message: r.ElicitURL.Message, URL: r.ElicitURL.URL,
			ElicitationID: r.ElicitURL.ElicitationID, Timeout: timeoutMillis(r.ElicitURL.Timeout), Meta: r.ElicitURL.Meta}}
	}
	if r.CreateMessage != nil {
		n++
		req = askRequest{MethodCreateMessage, r.CreateMessage}
	}
	if r.ListRoots {
		n++
		req = askRequest{Method: MethodListRoots}
	}
	if n != 1 {
		return askRequest{}, errors.New("set exactly one of Elicit, ElicitURL, CreateMessage and ListRoots")
	}
	return req, nil
}

// ClientCapabilities are what the client declared it can do, as far as a
// plugin's requests for input go. A nil field is a capability the client
// did not declare.
type ClientCapabilities struct {
	// Sampling: the client samples language models ([Context.CreateMessage]).
	Sampling map[string]any `json:"sampling,omitempty"`
	// Elicitation: the client asks its user. Its "form" and "url" members
	// name the modes it supports; with neither, it supports forms.
	Elicitation map[string]any `json:"elicitation,omitempty"`
	// Roots: the client lists its roots ([Context.ListRoots]).
	Roots map[string]any `json:"roots,omitempty"`
	// Extensions holds the extensions the client supports, by id, each
	// with its settings ([ClientCapabilities.CanShowApps]).
	Extensions map[string]any `json:"extensions,omitempty"`
}

// MetaClientCapabilities is the _meta key under which a request of MCP
// 2026-07-28 declares the client's capabilities.
const MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// ClientCapabilities returns the capabilities the client declared with the
// request, and whether it declared them: at MCP 2026-07-28 every request
// does, in its _meta. A request of an older version's session carries none
// (its client declared them once, when the session began), and ok is
// false: a plugin then asks, and a client without the capability makes the
// request for input fail.
//
// A plugin that can do without some input asks only for what the client
// can give; one that cannot simply asks, and Hangar refuses the request
// at 2026-07-28 with MissingRequiredClientCapability (-32021).
func (c *Context) ClientCapabilities() (caps *ClientCapabilities, ok bool) {
	v, present := c.Meta[MetaClientCapabilities]
	if !present || v == nil {
		return &ClientCapabilities{}, false
	}
	b, err := json.Marshal(v)
	caps = &ClientCapabilities{}
	if err != nil || json.Unmarshal(b, caps) != nil {
		return &ClientCapabilities{}, false
	}
	return caps, true
}

// CanElicit reports whether the client takes form elicitations.
func (c *ClientCapabilities) CanElicit() bool {
	if c.Elicitation == nil {
		return false
	}
	_, form := c.Elicitation["form"]
	_, url := c.Elicitation["url"]
	return form || !url
}
