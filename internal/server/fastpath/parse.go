package fastpath

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/server/rawjson"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The fast path reads messages with a parser of its own, which is strict:
// it recognizes the common shapes of the few messages the fast path acts
// on, and calls everything else msgOther, for the go-sdk to read as it
// would have. Whenever parseMessage does recognize a message, the go-sdk
// would have read the same id, method and params from it (FuzzParseMessage
// checks this against the SDK's own decoder).

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
// JSON object (no white space around it).
func parseMessage(b []byte) message {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || !rawjson.Valid(b) || !utf8.Valid(b) {
		return message{}
	}
	var (
		m                    message
		version, params      []byte
		hasID, hasMethod     bool
		hasResult, hasParams bool
		hasError             bool
		seen                 rawjson.Keys
	)
	ok := rawjson.Object(b, func(key, v []byte) bool {
		if !seen.Add(key) {
			return false // a duplicate key
		}
		switch string(key) {
		case "jsonrpc":
			version = v
		case "id":
			hasID = true
			var ok bool
			if m.id, ok = wire.ParseID(v); !ok {
				return false
			}
		case "method":
			hasMethod = true
			s, ok := rawjson.String(v)
			if !ok {
				return false
			}
			m.method = s
		case "params":
			hasParams = true
			params = v
		case "result":
			hasResult = true
		case "error":
			hasResult, hasError = true, true
		default:
			return false // a key the fast path does not expect
		}
		return true
	})
	if !ok || string(version) != `"2.0"` {
		return message{}
	}
	switch {
	case hasMethod && !hasResult && m.id.IsValid():
		m.kind = msgRequest
		if hasParams && params[0] == '{' {
			m.readParams(params)
		}
	case hasMethod && !hasResult && !hasID:
		m.kind = msgNotification
		switch {
		case m.method == "notifications/cancelled" && hasParams:
			if id, ok := cancelledID(params); ok {
				m.kind, m.id = msgCancel, id
			}
		case !hasParams:
			m.bare = true
		case params[0] == '{':
			m.meta, m.bare = metaOnly(params)
		}
	case !hasMethod && !hasParams && hasResult && m.id.IsValid():
		if hasError {
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

// readParams reads a request's params, and makes it a msgCall if it is a
// tools/call or resources/read the fast path can take.
func (m *message) readParams(params []byte) {
	callable := m.method == "tools/call" || m.method == "resources/read"
	keyName := "name"
	if m.method == "resources/read" {
		keyName = "uri"
	}
	ok := rawjson.Object(params, func(key, v []byte) bool {
		switch {
		case string(key) == keyName && m.key == "":
			if s, ok := rawjson.String(v); ok {
				m.key = s
				return true
			}
		case string(key) == "arguments" && m.method == "tools/call" && m.args == nil && v[0] == '{':
			m.args = v
			return true
		case string(key) == "_meta" && m.meta == nil && v[0] == '{' && plainMeta(v):
			m.meta = v
			return true
		}
		callable = false // a key the fast path does not take
		return true
	})
	if ok && callable && m.key != "" {
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
