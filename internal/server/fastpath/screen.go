package fastpath

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The fast path screens what it hands the go-sdk, on both transports, and
// answers itself what the go-sdk would mishandle:
//
//   - over stdio, a message the go-sdk cannot decode ({}, 5, [], an object
//     id, 1e400, "method": 5, "jsonrpc": "1.0", nesting deeper than 1000)
//     would end its connection, and with it the process: it is answered
//     with a JSON-RPC parse error (-32700) or invalid request (-32600), and
//     the session goes on;
//   - a request whose id the go-sdk would not give back as it came (1.5,
//     2^53+1, 123456789012345678901234567890: it keeps ids as int64 made
//     from a float64) is answered with an invalid request error that
//     carries the id byte for byte;
//   - a batch is refused when it holds initialize (2025-03-26 forbids it;
//     a batch that opens a session and calls a tool in one request is
//     what let a plugin reach another replica's plugins), and in sessions
//     whose protocol version has no batches (2025-06-18 and later).
//
// RATIONALE.md, "Why does the fast path screen what the go-sdk reads?".

// CodeParseError and CodeInvalidRequest are JSON-RPC's codes for text that
// is not JSON, and for JSON that is not a valid request.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
)

// maxDepth is the go-sdk's bound on the nesting of a message.
const maxDepth = 1000

// refusal is the answer to a message the fast path refuses: a JSON-RPC
// error, and the raw id to answer it under (nil: null).
type refusal struct {
	id  json.RawMessage
	err *jsonrpc.Error
}

// encode encodes the refusal's error response, with its id as it came.
func (r *refusal) encode() []byte { return wire.EncodeRawError(r.id, r.err) }

func refuse(id json.RawMessage, code int64, format string, args ...any) *refusal {
	return &refusal{id: id, err: &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// BatchesAllowed reports whether sessions of protocol version v may send
// JSON-RPC batches: 2025-03-26 defines them, 2024-11-05 takes JSON-RPC 2.0
// as it is (batches included), and 2025-06-18 removed them. Before
// initialize (v is ""), a batch is read as the go-sdk would.
func BatchesAllowed(v string) bool { return !wire.AtLeast(v, core.Version20250618) }

// screenMessage checks one message (not a batch) as the go-sdk decodes it,
// and the id of a request. b is the message without surrounding white
// space.
func screenMessage(b []byte) *refusal {
	if !json.Valid(b) {
		return refuse(nil, CodeParseError, "Parse error: the message is not valid JSON")
	}
	if tooDeep(b) {
		return refuse(nil, CodeInvalidRequest, "Invalid Request: the message is nested more than %d levels deep", maxDepth)
	}
	if b[0] != '{' {
		return refuse(nil, CodeInvalidRequest, "Invalid Request: a JSON-RPC message is an object")
	}
	id := wire.RawID(b)
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return refuse(echoable(id), CodeInvalidRequest, "Invalid Request: %v", err)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		return screenID(id)
	}
	return nil
}

// echoable returns id if an error answer may carry it (a string or a
// number), else nil (null).
func echoable(id json.RawMessage) json.RawMessage {
	if len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9') {
		return id
	}
	return nil
}

// screenID refuses a request id that the go-sdk would not answer as it
// came (wire.BadID).
func screenID(id json.RawMessage) *refusal {
	if e := wire.BadID(id); e != nil {
		return &refusal{id: id, err: e}
	}
	return nil
}

// tooDeep reports whether the JSON text b nests objects and arrays more
// than maxDepth deep, as the go-sdk counts.
func tooDeep(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > maxDepth {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// batch is what screenBatch read of a batch.
type batch struct {
	ids           []jsonrpc.ID // of its requests
	notifications int
	requests      int
	elems         []json.RawMessage
}

// screenBatch checks a batch (b starts with '['), sent in a session of
// protocol version v, as the go-sdk reads it, and refuses one it would
// not serve.
func screenBatch(b []byte, v string) (*batch, *refusal) {
	if !json.Valid(b) {
		return nil, refuse(nil, CodeParseError, "Parse error: the batch is not valid JSON")
	}
	if tooDeep(b) {
		return nil, refuse(nil, CodeInvalidRequest, "Invalid Request: the batch is nested more than %d levels deep", maxDepth)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(b, &elems); err != nil || len(elems) == 0 {
		return nil, refuse(nil, CodeInvalidRequest, "Invalid Request: an empty batch")
	}
	bt := &batch{elems: elems}
	seen := map[jsonrpc.ID]bool{}
	for i, raw := range elems {
		raw = bytes.TrimSpace(raw)
		if r := screenMessage(raw); r != nil {
			return nil, refuse(nil, CodeInvalidRequest, "Invalid Request: message %d of the batch: %s", i+1, r.err.Message)
		}
		msg, _ := jsonrpc.DecodeMessage(raw) // screenMessage decoded it
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			continue // a response to a server request
		}
		if req.Method == "initialize" {
			return nil, refuse(nil, CodeInvalidRequest, "Invalid Request: initialize must not be part of a JSON-RPC batch; send it alone")
		}
		if !req.IsCall() {
			bt.notifications++
			continue
		}
		if seen[req.ID] {
			return nil, refuse(nil, CodeInvalidRequest, "Invalid Request: the batch holds two requests with id %v", req.ID.Raw())
		}
		seen[req.ID] = true
		bt.requests++
		bt.ids = append(bt.ids, req.ID)
	}
	if !BatchesAllowed(v) {
		return nil, refuse(nil, CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not part of protocol version %s (2025-06-18 removed them); send each message alone", v)
	}
	return bt, nil
}
