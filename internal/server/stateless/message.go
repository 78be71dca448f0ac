package stateless

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// message is a JSON-RPC message of MCP 2026-07-28, as the edge reads it: the
// members it checks and routes by, and whether the fast path may serve it.
type message struct {
	id jsonrpc.ID // invalid for a notification
	// refused, if set, is the answer to a request whose id would not come
	// back as it was sent (wire.RefuseID): nothing else is read.
	refused []byte
	method  string
	params  json.RawMessage // nil if absent

	// From params.
	key     string          // params.name (tools/call, prompts/get) or params.uri (resources/read)
	hasKey  bool            // key was given, as a string
	args    json.RawMessage // tools/call's params.arguments; nil if absent
	meta    json.RawMessage // params._meta; nil if absent
	state   bool            // params.requestState is given (not null)
	answers bool            // params.inputResponses is given (not null)
	checked bool            // readPlain checked the message valid JSON and UTF-8, meta with it

	// plain: the fast path may serve it. The message is one the fast path
	// reads exactly as the go-sdk does (its keys are the ones the go-sdk
	// reads, each once, unescaped), a tools/call or resources/read.
	plain bool
}

// readMessage reads one JSON-RPC message, b (an object, white space
// around it allowed). It reports false if b is not a single JSON-RPC
// request or notification that the go-sdk could decode.
func readMessage(b []byte) (*message, bool) {
	b = bytes.TrimSpace(b)
	if m, ok := readPlain(b); ok {
		return m, true
	}
	// Any other shape is read as the go-sdk reads it.
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return nil, false
	}
	m := &message{id: req.ID, method: req.Method, params: req.Params}
	if req.ID.IsValid() {
		// An id the go-sdk's reader does not keep exactly (1.5, 2^53+1)
		// would be answered as another id.
		m.refused = wire.RefuseID(b)
	}
	if len(req.Params) > 0 && req.Params[0] == '{' {
		// Members by their exact names, the last of a name given twice:
		// as the go-sdk reads params (its decoder matches field names
		// case-sensitively), not as a struct of encoding/json would, which
		// takes "Name" for "name".
		var p map[string]json.RawMessage
		if json.Unmarshal(req.Params, &p) == nil {
			m.meta = nonNull(p["_meta"])
			m.args = p["arguments"]
			m.state = nonNull(p["requestState"]) != nil
			m.answers = nonNull(p["inputResponses"]) != nil
			keyName := "name"
			if m.method == "resources/read" {
				keyName = "uri"
			}
			var key *string
			if raw, ok := p[keyName]; ok && json.Unmarshal(raw, &key) == nil && key != nil {
				m.key, m.hasKey = *key, true
			}
		}
	}
	return m, true
}

// bare reports whether m's params hold none of the members the Manager
// reads (mrtr.Request.Bare): no requestState, no inputResponses, and no
// progressToken in the _meta rm was read from (a progressToken of null
// counts as one: the Manager reads it; a _meta scanMeta read has none).
// Only a message readPlain read is known well enough for that.
func (m *message) bare(rm *reqMeta) bool {
	if !m.checked || m.state || m.answers {
		return false
	}
	_, token := rm.meta["progressToken"]
	return !token
}

func nonNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// readPlain reads the common shapes of a message quickly, in place, with
// the edges' reader (wire.ReadMessage, wire.ReadParams), and sets plain
// for the tools/call and resources/read the fast path may serve. It
// reports false for any other shape, which readMessage then reads as the
// go-sdk does.
func readPlain(b []byte) (*message, bool) {
	w, ok := wire.ReadMessage(b)
	if !ok || !w.HasMethod || w.HasResult || w.HasError {
		return nil, false
	}
	m := &message{id: w.ID, method: w.Method, params: w.Params, checked: true}
	if w.Params == nil {
		return m, true
	}
	p, ok := wire.ReadParams(m.method, w.Params)
	if !ok || p.Dup || p.BadKey {
		return nil, false // the go-sdk's reader says what is wrong
	}
	callable := m.id.IsValid() && (m.method == "tools/call" || m.method == "resources/read") && !p.Other
	if p.Meta != nil {
		switch {
		case p.Meta[0] == '{':
			m.meta = p.Meta
		case string(p.Meta) != "null":
			return nil, false
		}
	}
	m.key, m.hasKey = p.Key, p.HasKey
	if p.Args != nil {
		if m.method != "tools/call" || (p.Args[0] != '{' && string(p.Args) != "null") {
			callable = false
		}
		if string(p.Args) != "null" {
			m.args = p.Args
		}
	}
	if p.State != nil {
		if p.State[0] != '"' && string(p.State) != "null" {
			callable = false
		}
		m.state = string(p.State) != "null"
	}
	if p.Answers != nil {
		if p.Answers[0] != '{' && string(p.Answers) != "null" {
			callable = false
		}
		m.answers = string(p.Answers) != "null"
	}
	m.plain = callable && m.hasKey
	return m, true
}
