package fastpath

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var parseSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{ "text" : "hi" },"_meta":{"progressToken":3}}}`,
	`{"method":"tools/call","params":{"arguments":{},"name":"x"},"id":9007199254740992,"jsonrpc":"2.0"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","Name":"y"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x\u0041"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://static-text"}}`,
	`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test:\/\/x"}}`,
	`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"no"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3.7}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x","reason":5}}`,
	`{"jsonrpc":"2.0","id":1000000001,"result":{"model":"m"}}`,
	`{"jsonrpc":"2.0","id":"r","error":{"code":-1,"message":"no"}}`,
	`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[[[[[[[]]]]]]]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\xff"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
	`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"_meta":{"a":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`,
	`{"jsonrpc":"2.0","id":1,"error":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n\u0061me":"other"}}`,
}

// FuzzParseMessage checks the fast path's parser against the go-sdk's own
// decoder (jsonrpc.DecodeMessage) and the params' types: whenever
// parseMessage recognizes a message, the go-sdk reads the same id, method,
// name or URI, arguments (the same bytes) and _meta from it.
func FuzzParseMessage(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := parseMessage(b)
		if m.kind == msgOther {
			return
		}
		msg, err := jsonrpc.DecodeMessage(b)
		if err != nil {
			t.Fatalf("parseMessage read %q (kind %d), which the go-sdk refuses: %v", b, m.kind, err)
		}
		switch m.kind {
		case msgCall, msgRequest:
			req, ok := msg.(*jsonrpc.Request)
			if !ok || req.ID != m.id || req.Method != m.method || !req.IsCall() {
				t.Fatalf("%q: parsed id %v method %q, the go-sdk read %#v", b, m.id.Raw(), m.method, msg)
			}
			if m.kind == msgCall {
				checkCallParams(t, b, &m, req.Params)
			}
		case msgCancel:
			req, ok := msg.(*jsonrpc.Request)
			if !ok || req.IsCall() || req.Method != "notifications/cancelled" {
				t.Fatalf("%q: parsed a cancellation, the go-sdk read %#v", b, msg)
			}
			var p mcp.CancelledParams
			if err := json.Unmarshal(req.Params, &p); err != nil {
				t.Fatalf("%q: parsed a cancellation of %v, the go-sdk cannot read its params: %v", b, m.id.Raw(), err)
			}
			if id, err := jsonrpc.MakeID(p.RequestID); err != nil || id != m.id {
				t.Fatalf("%q: parsed a cancellation of %v, the go-sdk cancels %v (%v)", b, m.id.Raw(), p.RequestID, err)
			}
		case msgNotification:
			req, ok := msg.(*jsonrpc.Request)
			if !ok || req.IsCall() || req.Method != m.method {
				t.Fatalf("%q: parsed a notification %q, the go-sdk read %#v", b, m.method, msg)
			}
			if m.bare {
				var p struct {
					Meta mcp.Meta `json:"_meta"`
				}
				if len(req.Params) > 0 {
					if err := json.Unmarshal(req.Params, &p); err != nil {
						t.Fatalf("%q: parsed bare params, the go-sdk cannot read them: %v", b, err)
					}
				}
				var parsed mcp.Meta
				if m.meta != nil {
					json.Unmarshal(m.meta, &parsed)
				}
				if !reflect.DeepEqual(parsed, p.Meta) {
					t.Fatalf("%q: parsed _meta %v, the go-sdk read %v", b, parsed, p.Meta)
				}
			}
		case msgResponse:
			resp, ok := msg.(*jsonrpc.Response)
			if !ok || resp.ID != m.id {
				t.Fatalf("%q: parsed a response to %v, the go-sdk read %#v", b, m.id.Raw(), msg)
			}
		}
	})
}

func checkCallParams(t *testing.T, b []byte, m *message, params json.RawMessage) {
	t.Helper()
	var key string
	var meta mcp.Meta
	if m.method == "tools/call" {
		var p mcp.CallToolParamsRaw
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatalf("%q: the go-sdk cannot read the params: %v", b, err)
		}
		if !bytes.Equal(p.Arguments, m.args) {
			t.Fatalf("%q: parsed arguments %q, the go-sdk read %q", b, m.args, p.Arguments)
		}
		key, meta = p.Name, p.Meta
	} else {
		var p mcp.ReadResourceParams
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatalf("%q: the go-sdk cannot read the params: %v", b, err)
		}
		key, meta = p.URI, p.Meta
	}
	if key != m.key {
		t.Fatalf("%q: parsed %q, the go-sdk read %q", b, m.key, key)
	}
	var parsed mcp.Meta
	if m.meta != nil {
		if err := json.Unmarshal(m.meta, &parsed); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(parsed, meta) {
		t.Fatalf("%q: parsed _meta %v, the go-sdk read %v", b, parsed, meta)
	}
}

// TestParseMessage pins what the parser takes and what it leaves to the
// go-sdk.
func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind msgKind
		key  string
	}{
		{parseSeeds[0], msgCall, "echo"},
		{parseSeeds[1], msgCall, "echo"},
		{parseSeeds[2], msgCall, "x"},
		{parseSeeds[3], msgCall, "x"},
		{parseSeeds[4], msgOther, ""},    // a fractional id
		{parseSeeds[5], msgRequest, "x"}, // a key of another case
		{parseSeeds[6], msgRequest, "y"}, // a duplicate key in params: the last, as the go-sdk reads it (the HTTP request records it for its id)
		{parseSeeds[7], msgOther, ""},    // a duplicate id
		{parseSeeds[8], msgRequest, "x"}, // arguments: null
		{parseSeeds[9], msgRequest, ""},  // an escape in the name
		{parseSeeds[10], msgRequest, "x"},
		{parseSeeds[11], msgCall, "test://static-text"},
		{parseSeeds[12], msgRequest, ""},
		{parseSeeds[13], msgRequest, "p"},
		{parseSeeds[14], msgCancel, ""},
		{parseSeeds[15], msgCancel, ""},
		{parseSeeds[16], msgNotification, ""}, // a reason the go-sdk cannot read: a notification it reads as it would
		{parseSeeds[17], msgResponse, ""},
		{parseSeeds[18], msgResponse, ""},
		{parseSeeds[19], msgOther, ""},
		{parseSeeds[20], msgOther, ""},
		{parseSeeds[21], msgCall, "x"},
		{parseSeeds[22], msgOther, ""}, // not UTF-8
		{parseSeeds[23], msgOther, ""}, // a batch
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`, msgOther, ""},
		{` ` + parseSeeds[0], msgOther, ""},
		{parseSeeds[24], msgNotification, ""},
		{parseSeeds[25], msgNotification, ""},
		{parseSeeds[26], msgNotification, ""},
		{parseSeeds[28], msgRequest, ""}, // an escaped key after the name: the go-sdk's, which reads "other"
	} {
		m := parseMessage([]byte(tc.in))
		if m.kind != tc.kind || m.key != tc.key {
			t.Errorf("%s: kind %d key %q, want %d %q", tc.in, m.kind, m.key, tc.kind, tc.key)
		}
	}
	// A cancellation's id is truncated as the go-sdk truncates it.
	if m := parseMessage([]byte(parseSeeds[15])); m.id.Raw() != int64(3) {
		t.Errorf("requestId 3.7 read as %v", m.id.Raw())
	}
}

// TestResponseID reads the ids of the go-sdk's responses, and only of
// responses.
func TestResponseID(t *testing.T) {
	for _, id := range []any{float64(7), "x,y", `q"uote`, float64(-3)} {
		jid, _ := jsonrpc.MakeID(id)
		for _, msg := range []jsonrpc.Message{
			&jsonrpc.Response{ID: jid, Result: json.RawMessage(`{"a":1}`)},
			&jsonrpc.Response{ID: jid, Error: &jsonrpc.Error{Code: 1, Message: "m"}},
		} {
			b, err := jsonrpc.EncodeMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := responseID(b)
			// An id with escapes is left alone, as parseID leaves it.
			s, isString := id.(string)
			escaped := isString && strings.ContainsAny(s, `"\`)
			if ok == escaped || ok && got != jid {
				t.Errorf("responseID(%s) = %v, %v", b, got.Raw(), ok)
			}
		}
		b, _ := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: jid, Method: "ping"})
		if _, ok := responseID(b); ok {
			t.Errorf("responseID(%s) took a request", b)
		}
	}
}

// TestJSONScan follows values that span lines and strings holding
// brackets.
func TestJSONScan(t *testing.T) {
	var s jsonScan
	for _, line := range []string{"{\n", `"a": "}\"{[",` + "\n", `"b": [1, {"c": 2}]` + "\n"} {
		s.feed([]byte(line))
		if s.atTop() {
			t.Fatalf("at top after %q", line)
		}
	}
	s.feed([]byte("}\n"))
	if !s.atTop() {
		t.Fatal("not at top after the value")
	}
}

// FuzzPlainResult checks the direct encoding of plain text results
// against the go-sdk's marshaling: the same bytes.
func FuzzPlainResult(f *testing.F) {
	for _, s := range []string{"hi", "", "a<b>&c", "tab\there", "quote\"back\\slash", "é ü", "\u2028\u2029", "\x00\x1f", "\xff bad"} {
		f.Add(s, "second", true)
	}
	f.Fuzz(func(t *testing.T, a, b string, isError bool) {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a}, &mcp.TextContent{Text: b}}, IsError: isError}
		var direct, sdk bytes.Buffer
		if !appendPlainResult(&direct, res) {
			t.Fatal("a plain result was not written directly")
		}
		if err := marshalTo(&sdk, res); err != nil {
			t.Fatal(err)
		}
		if direct.String() != sdk.String() {
			t.Fatalf("direct %s\ngo-sdk %s", direct.Bytes(), sdk.Bytes())
		}
	})
}

// TestEncodeResultIDs: the answer's id is written as the go-sdk writes it,
// numbers directly and strings through the encoder.
func TestEncodeResultIDs(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{float64(0), float64(7), float64(-1), float64(1 << 53), float64(math.MinInt32), "", "7", "a\"<b>\u2028"} {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, isNumber := v.(float64); isNumber {
			if _, ok := id.Raw().(int64); !ok {
				t.Fatalf("id %v is held as %T: the direct writing of numbers is not tested", v, id.Raw())
			}
		}
		got, err := encodeResult(id, res)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: raw})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("id %#v:\nfast   %s\ngo-sdk %s", v, got, want)
		}
	}
}
