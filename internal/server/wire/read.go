package wire

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/server/rawjson"
)

// The edges read the common shapes of a JSON-RPC message in place, with
// ReadMessage and ReadParams, and leave any other shape to the go-sdk's
// decoder. What they read is what the go-sdk would read: the fuzzers of
// the edges' readers (FuzzParseMessage in package fastpath,
// FuzzReadMessage in package stateless) check it against
// jsonrpc.DecodeMessage and the go-sdk's params types, and FuzzRead here
// against jsonrpc.DecodeMessage and the params' members by their exact
// names (a map of encoding/json: the go-sdk's decoder matches names
// case-sensitively).

// Message is a JSON-RPC message as ReadMessage reads it.
type Message struct {
	ID        jsonrpc.ID      // invalid if absent
	Method    string          // "" if absent
	Params    json.RawMessage // nil if absent
	HasID     bool            // an id was given
	HasMethod bool            // a method was given
	HasResult bool            // a result was given
	HasError  bool            // an error was given
}

// ReadMessage reads one JSON-RPC message, b, which must be exactly one
// JSON object (no white space around it), valid UTF-8: its members
// jsonrpc ("2.0"), id (one ParseID reads), method (a string without
// escapes), params, result and error, each at most once. It reports
// false for anything else (another member, a member given twice, an id
// or method it does not read so), which only the go-sdk's decoder reads.
func ReadMessage(b []byte) (Message, bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || !rawjson.Valid(b) || !utf8.Valid(b) {
		return Message{}, false
	}
	var (
		m       Message
		version []byte
		seen    rawjson.Keys
	)
	ok := rawjson.Object(b, func(key, v []byte) bool {
		if !seen.Add(key) {
			return false // a duplicate key
		}
		switch string(key) {
		case "jsonrpc":
			version = v
		case "id":
			m.HasID = true
			id, ok := ParseID(v)
			if !ok {
				return false
			}
			m.ID = id
		case "method":
			m.HasMethod = true
			s, ok := rawjson.String(v)
			if !ok {
				return false
			}
			m.Method = s
		case "params":
			m.Params = v
		case "result":
			m.HasResult = true
		case "error":
			m.HasError = true
		default:
			return false // a key no edge reads in place
		}
		return true
	})
	if !ok || string(version) != `"2.0"` {
		return Message{}, false
	}
	return m, true
}

// Params are the members of a request's params that the edges read in
// place, as ReadParams found them. Each value is raw, nil if absent. A
// member given twice under the same key, written alike, has its last
// value, as the go-sdk's decoder reads it (and Dup is set); a key written
// with an escape ("n\u0061me") is not read at all (ReadParams reports
// false), and one in another case ("Name") is another member (Other), as
// the go-sdk's decoder matches names case-sensitively.
type Params struct {
	// Key is params.name, or params.uri for resources/read, when HasKey:
	// a string without escapes.
	Key    string
	HasKey bool
	// BadKey: name (or uri) was given, but not as a string without
	// escapes.
	BadKey bool
	// Args, Meta, State and Answers are arguments, _meta, requestState and
	// inputResponses.
	Args, Meta, State, Answers json.RawMessage
	// Dup: a member was given twice.
	Dup bool
	// Other: a member none of the above.
	Other bool
}

// ReadParams reads the params of a request of method, params (valid
// JSON). It reports false, with zero Params, if they are not an object,
// hold a key it does not read in place (one with an escape, "n\u0061me")
// or nest deeper than rawjson.MaxDepth: the members read before such a
// key are not all the params, and a caller that served them would read
// another name than the go-sdk.
func ReadParams(method string, params []byte) (Params, bool) {
	var p Params
	if len(params) == 0 || params[0] != '{' {
		return p, false
	}
	keyName := "name"
	if method == "resources/read" {
		keyName = "uri"
	}
	var seen rawjson.Keys
	ok := rawjson.Object(params, func(key, v []byte) bool {
		if !seen.Add(key) {
			p.Dup = true
		}
		switch string(key) {
		case keyName:
			s, ok := rawjson.String(v)
			p.Key, p.HasKey, p.BadKey = s, ok, !ok
		case "arguments":
			p.Args = v
		case "_meta":
			p.Meta = v
		case "requestState":
			p.State = v
		case "inputResponses":
			p.Answers = v
		default:
			p.Other = true
		}
		return true
	})
	if !ok {
		return Params{}, false
	}
	return p, true
}
