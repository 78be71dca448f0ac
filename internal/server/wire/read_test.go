package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var readSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"test://x","_meta":{"progressToken":7},"requestState":"s","inputResponses":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y","Name":"z"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x\u0041","arguments":null}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","id":7,"result":{}}`,
	`{"jsonrpc":"2.0","id":"r","error":{"code":-1,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`,
}

// FuzzRead holds the edges' reader to the go-sdk's: a request or
// notification ReadMessage reads (a method, no result or error) is one
// jsonrpc.DecodeMessage decodes, with the same id, method and params, and
// so is a response (an id, a result or an error, nothing else) but for an
// error the go-sdk cannot read; params that
// ReadParams reads with no member given twice, none it does not know and
// a plain key have the name or URI, arguments, _meta, requestState and
// inputResponses that encoding/json (the go-sdk's params decoding) reads.
func FuzzRead(f *testing.F) {
	for _, s := range readSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := ReadMessage(b)
		request := m.HasMethod && !m.HasResult && !m.HasError
		response := !m.HasMethod && m.Params == nil && (m.HasResult != m.HasError) && m.ID.IsValid()
		if !ok || !request && !response {
			return // not a shape the edges act on: they leave it to the go-sdk
		}
		msg, err := jsonrpc.DecodeMessage(b)
		if err != nil {
			if response && m.HasError {
				return // an error the go-sdk cannot read: the fast path asks it (parseMessage)
			}
			t.Fatalf("ReadMessage read %q, which the go-sdk refuses: %v", b, err)
		}
		switch msg := msg.(type) {
		case *jsonrpc.Request:
			if !request || msg.ID != m.ID || msg.Method != m.Method || !bytes.Equal(msg.Params, m.Params) {
				t.Fatalf("%q: read id %v method %q params %q, the go-sdk read %#v", b, m.ID.Raw(), m.Method, m.Params, msg)
			}
		case *jsonrpc.Response:
			if !response || msg.ID != m.ID {
				t.Fatalf("%q: read id %v (result %v, error %v), the go-sdk read a response %#v", b, m.ID.Raw(), m.HasResult, m.HasError, msg)
			}
			return
		}
		if m.Params == nil {
			return
		}
		p, ok := ReadParams(m.Method, m.Params)
		if ok != (m.Params[0] == '{') {
			t.Fatalf("%q: ReadParams reports %v for params %q", b, ok, m.Params)
		}
		if !ok || p.Dup || p.Other || p.BadKey {
			return
		}
		var sdk struct {
			Name           *string         `json:"name"`
			URI            *string         `json:"uri"`
			Arguments      json.RawMessage `json:"arguments"`
			Meta           json.RawMessage `json:"_meta"`
			RequestState   json.RawMessage `json:"requestState"`
			InputResponses json.RawMessage `json:"inputResponses"`
		}
		if err := json.Unmarshal(m.Params, &sdk); err != nil {
			t.Fatalf("%q: params read, but encoding/json cannot read them: %v", b, err)
		}
		key := sdk.Name
		if m.Method == "resources/read" {
			key = sdk.URI
		}
		if p.HasKey != (key != nil) || key != nil && *key != p.Key {
			t.Fatalf("%q: read key %q (%v), encoding/json read %v", b, p.Key, p.HasKey, key)
		}
		for _, c := range []struct {
			name      string
			read, sdk json.RawMessage
		}{{"arguments", p.Args, sdk.Arguments}, {"_meta", p.Meta, sdk.Meta}, {"requestState", p.State, sdk.RequestState}, {"inputResponses", p.Answers, sdk.InputResponses}} {
			if !bytes.Equal(c.read, c.sdk) {
				t.Fatalf("%q: read %s %q, encoding/json read %q", b, c.name, c.read, c.sdk)
			}
		}
	})
}
