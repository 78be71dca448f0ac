package fastpath

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/server/rawjson"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The fast path reads messages with the edges' reader (wire.ReadMessage
// and wire.ReadParams), which is strict: it recognizes the common shapes
// of the few messages the fast path acts on, and parseMessage calls
// everything else msgOther, for the go-sdk to read as it would have.
// Whenever parseMessage does recognize a message, the go-sdk would have
// read the same id, method and params from it; and a call it makes
// msgCall has the name or URI, arguments and _meta the go-sdk would read
// (params it does not read whole, such as a key with an escape, leave
// the request to the go-sdk). FuzzParseMessage checks this against the
// go-sdk's own decoder.

// msgKind is what the fast path makes of a message.
type msgKind int

const (
	msgOther        msgKind = iota // anything else
	msgCall                        // a tools/call or resources/read the fast path may serve
	msgRequest                     // another request with an id
	msgCancel                      // notifications/cancelled
	msgNotification                // another notification
	msgResponse                    // a response (from the client, to a server request)
)

// message is a message as parseMessage read it.
type message struct {
	kind   msgKind
	id     jsonrpc.ID      // of a request or a response; of the request cancelled
	method string          // of a request or notification
	key    string          // a request's params.name (tools/call) or params.uri (resources/read)
	args   json.RawMessage // tools/call's params.arguments; nil if absent
	meta   json.RawMessage // params._meta; nil if absent
	bare   bool            // a notification whose params are absent, or only _meta
}

// parseMessage reads one JSON-RPC message, b, which must be exactly one
// JSON object (no white space around it), with the edges' reader
// (wire.ReadMessage).
func parseMessage(b []byte) message {
	w, ok := wire.ReadMessage(b)
	if !ok {
		return message{}
	}
	m := message{id: w.ID, method: w.Method}
	hasResult := w.HasResult || w.HasError
	switch {
	case w.HasMethod && !hasResult && m.id.IsValid():
		m.kind = msgRequest
		if w.Params != nil && w.Params[0] == '{' {
			m.readParams(w.Params)
		}
	case w.HasMethod && !hasResult && !w.HasID:
		m.kind = msgNotification
		switch {
		case m.method == "notifications/cancelled" && w.Params != nil:
			if id, ok := cancelledID(w.Params); ok {
				m.kind, m.id = msgCancel, id
			}
		case w.Params == nil:
			m.bare = true
		case w.Params[0] == '{':
			m.meta, m.bare = metaOnly(w.Params)
		}
	case !w.HasMethod && w.Params == nil && hasResult && m.id.IsValid():
		if w.HasError {
			// The error must be one the go-sdk reads (rare: the client
			// failed a server request).
			if _, err := jsonrpc.DecodeMessage(b); err != nil {
				return message{}
			}
		}
		m.kind = msgResponse
	}
	return m
}

// readParams reads a request's params (wire.ReadParams), and makes it a
// msgCall if it is a tools/call or resources/read the fast path can take:
// its name or URI, and if given its arguments (an object) and a plain
// _meta, each given once, and nothing else.
func (m *message) readParams(params []byte) {
	p, ok := wire.ReadParams(m.method, params)
	m.key = p.Key
	callable := ok && (m.method == "tools/call" || m.method == "resources/read") &&
		!p.Dup && !p.Other && !p.BadKey && p.State == nil && p.Answers == nil
	if p.Args != nil {
		if m.method == "tools/call" && p.Args[0] == '{' {
			m.args = p.Args
		} else {
			callable = false
		}
	}
	if p.Meta != nil {
		if p.Meta[0] == '{' && plainMeta(p.Meta) {
			m.meta = p.Meta
		} else {
			callable = false
		}
	}
	if callable && m.key != "" {
		m.kind = msgCall
	}
}

// plainMeta reports whether a request's _meta is plain: no escapes in it,
// and none of the keys by which a request of the 2026-07-28 protocol
// identifies itself.
func plainMeta(v []byte) bool {
	return bytes.IndexByte(v, '\\') < 0 && !bytes.Contains(v, []byte(`"io.modelcontextprotocol/`))
}

// metaOnly returns the _meta of a notification's params, and reports
// whether the params hold nothing else (a plain _meta, or nothing).
func metaOnly(params []byte) (json.RawMessage, bool) {
	var meta json.RawMessage
	ok := rawjson.Object(params, func(key, v []byte) bool {
		if string(key) != "_meta" || meta != nil || v[0] != '{' || !plainMeta(v) {
			return false
		}
		meta = v
		return true
	})
	return meta, ok
}

// cancelledID reads the requestId of notifications/cancelled params as the
// go-sdk does (a number is truncated to an integer). Params of any other
// shape are left to the go-sdk.
func cancelledID(params []byte) (jsonrpc.ID, bool) {
	var (
		id    jsonrpc.ID
		seen  rawjson.Keys
		found bool
	)
	ok := rawjson.Object(params, func(key, v []byte) bool {
		if !seen.Add(key) {
			return false
		}
		switch string(key) {
		case "requestId":
			found = true
			if s, ok := rawjson.String(v); ok {
				id, _ = jsonrpc.MakeID(s)
				return true
			}
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil || f > 1<<53 || f < -(1<<53) {
				return false
			}
			id, _ = jsonrpc.MakeID(f)
			return true
		case "reason":
			_, ok := rawjson.String(v)
			return ok
		case "_meta":
			return v[0] == '{' && plainMeta(v)
		}
		return false
	})
	return id, ok && found
}
