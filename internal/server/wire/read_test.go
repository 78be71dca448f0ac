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
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n\u0061me":"other"}}`,
}

// FuzzRead holds the edges' reader to the go-sdk's: a request or
// notification ReadMessage reads (a method, no result or error) is one
// jsonrpc.DecodeMessage decodes, with the same id, method and params, and
// so is a response (an id, a result or an error, nothing else) but for an
// error the go-sdk cannot read; params that
// ReadParams reads with no member given twice, none it does not know and
// a plain key have the name or URI, arguments, _meta, requestState and
// inputResponses of those exact names (the go-sdk's decoder matches
// members case-sensitively); params it refuses leave nothing read.
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
		if ok && m.Params[0] != '{' {
			t.Fatalf("%q: ReadParams read params %q, which are not an object", b, m.Params)
		}
		if !ok {
			// Not an object, or a key it does not read in place: nothing
			// of what it read may be left for a caller to serve.
			if p.HasKey || p.Key != "" || p.Args != nil || p.Meta != nil || p.State != nil || p.Answers != nil {
				t.Fatalf("%q: ReadParams refused params %q but left %+v", b, m.Params, p)
			}
			return
		}
		if p.Other || p.BadKey {
			return
		}
		// The members by their exact names, as the go-sdk's decoder matches
		// them (case-sensitively).
		var sdk map[string]json.RawMessage
		if err := json.Unmarshal(m.Params, &sdk); err != nil {
			t.Fatalf("%q: params read, but encoding/json cannot read them: %v", b, err)
		}
		keyName := "name"
		if m.Method == "resources/read" {
			keyName = "uri"
		}
		var key *string
		if raw, found := sdk[keyName]; found {
			if err := json.Unmarshal(raw, &key); err != nil {
				t.Fatalf("%q: a plain key read, but encoding/json cannot read it: %v", b, err)
			}
		}
		if p.HasKey != (key != nil) || key != nil && *key != p.Key {
			t.Fatalf("%q: read key %q (%v), encoding/json read %v", b, p.Key, p.HasKey, key)
		}
		if p.Dup {
			return // the key is the last given, as above; the other members are left to the go-sdk
		}
		for _, c := range []struct {
			name      string
			read, sdk json.RawMessage
		}{{"arguments", p.Args, sdk["arguments"]}, {"_meta", p.Meta, sdk["_meta"]}, {"requestState", p.State, sdk["requestState"]}, {"inputResponses", p.Answers, sdk["inputResponses"]}} {
			if !bytes.Equal(c.read, c.sdk) {
				t.Fatalf("%q: read %s %q, encoding/json read %q", b, c.name, c.read, c.sdk)
			}
		}
	})
}
