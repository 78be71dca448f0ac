package stateless

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var messageSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"test://x","_meta":{"progressToken":7}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{},"requestState":"s","inputResponses":{"elicitation-1":{"action":"accept"}}}}`,
	` {"jsonrpc":"2.0","id":3,"method":"tools/list"} `,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":"\u0061","method":"tools/call","params":{"name":"e\u0063ho"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"other"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":null,"inputResponses":null,"_meta":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n\u0061me":"other"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b","Name":"c"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":null}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"ProgressToken":1,"progress\u0054oken":2}}}`,
}

// FuzzReadMessage holds the 2026-07-28 edge's reader to the go-sdk's: a
// message it reads is one the go-sdk decodes, with the same id (unless
// the edge refuses the id), method and params; and a request it marks
// plain, which the edge then serves without the go-sdk, has the name or
// URI, arguments, _meta, requestState and inputResponses the go-sdk would
// read.
func FuzzReadMessage(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := readMessage(b)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(b))
		if err != nil {
			t.Fatalf("readMessage read %q, which the go-sdk refuses: %v", b, err)
		}
		req, isReq := msg.(*jsonrpc.Request)
		if !isReq || req.Method != m.method || !bytes.Equal(req.Params, m.params) && !(len(req.Params) == 0 && len(m.params) == 0) {
			t.Fatalf("%q: read method %q params %q, the go-sdk read %#v", b, m.method, m.params, msg)
		}
		if m.refused == nil && req.ID != m.id {
			t.Fatalf("%q: read id %v, the go-sdk read %v", b, m.id.Raw(), req.ID.Raw())
		}
		if m.plain {
			checkPlain(t, b, m, req.Params)
		}
		if meta, jerr := decodeMessageMeta(m); jerr == nil && m.bare(&reqMeta{meta: meta}) {
			checkBare(t, b, req.Params)
		}
	})
}

// checkBare checks a message the edge found bare (message.bare): its
// params, as the go-sdk reads them (members by their exact names, the
// last of a name given twice), hold no requestState, no inputResponses
// and no _meta.progressToken, the members the Manager would read.
func checkBare(t *testing.T, b []byte, params json.RawMessage) {
	t.Helper()
	if len(params) == 0 || string(params) == "null" {
		return
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(params, &members); err != nil {
		t.Fatalf("%q: bare, but its params are not an object: %v", b, err)
	}
	for _, k := range []string{"requestState", "inputResponses"} {
		if nonNull(members[k]) != nil {
			t.Fatalf("%q: bare, but it has %s", b, k)
		}
	}
	var meta map[string]any
	if raw := nonNull(members["_meta"]); raw != nil {
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatalf("%q: bare, but its _meta is not an object: %v", b, err)
		}
	}
	if _, ok := meta["progressToken"]; ok {
		t.Fatalf("%q: bare, but its _meta has a progressToken", b)
	}
}

// TestBare: a call with none of the members the Manager reads is bare,
// and one with any of them (a progressToken of null included) is not.
func TestBare(t *testing.T) {
	for _, tc := range []struct {
		params string
		bare   bool
	}{
		{`{"name":"echo","arguments":{}}`, true},
		{`{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, true},
		{`{"name":"echo","requestState":null,"inputResponses":null}`, true},
		{`{"name":"echo","_meta":{"ProgressToken":1}}`, true},
		{`{"name":"echo","arguments":{"text":"requestState progressToken"}}`, true},
		{`{"name":"echo","_meta":{"progressToken":1}}`, false},
		{`{"name":"echo","_meta":{"progressToken":null}}`, false},
		{`{"name":"echo","_meta":{"progress\u0054oken":"t"}}`, false},
		{`{"name":"echo","requestState":"s"}`, false},
		{`{"name":"echo","inputResponses":{}}`, false},
	} {
		b := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + `}`)
		m, ok := readMessage(b)
		if !ok {
			t.Fatalf("%s: not read", tc.params)
		}
		meta, jerr := decodeMessageMeta(m)
		if jerr != nil {
			t.Fatalf("%s: %v", tc.params, jerr)
		}
		if got := m.bare(&reqMeta{meta: meta}); got != tc.bare {
			t.Errorf("%s: bare %v, want %v", tc.params, got, tc.bare)
		}
	}
}

func checkPlain(t *testing.T, b []byte, m *message, params json.RawMessage) {
	t.Helper()
	var (
		key     string
		meta    mcp.Meta
		state   string
		answers bool
	)
	// A retry's inputResponses are not the go-sdk's to read on the fast
	// path: the core reads each against the input request it answers,
	// ignores keys never asked and refuses a wrong answer naming its key
	// (attacks 18.5.4 and 18.5.5), where the go-sdk's reader refuses the
	// whole request. The rest of the params is compared without them.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(params, &members); err != nil {
		t.Fatalf("%q: plain, but the go-sdk cannot read the params: %v", b, err)
	}
	answers = nonNull(members["inputResponses"]) != nil
	delete(members, "inputResponses")
	// Encoded again as they came: json.Marshal would escape "&", "<"
	// and ">" in the arguments, which the go-sdk keeps as sent.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(members); err != nil {
		t.Fatal(err)
	}
	params = bytes.TrimSpace(buf.Bytes())
	switch m.method {
	case "tools/call":
		var p mcp.CallToolParamsRaw
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatalf("%q: plain, but the go-sdk cannot read the params: %v", b, err)
		}
		if !bytes.Equal(p.Arguments, m.args) {
			t.Fatalf("%q: read arguments %q, the go-sdk read %q", b, m.args, p.Arguments)
		}
		key, meta, state = p.Name, p.Meta, p.RequestState
	case "resources/read":
		var p mcp.ReadResourceParams
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatalf("%q: plain, but the go-sdk cannot read the params: %v", b, err)
		}
		key, meta, state = p.URI, p.Meta, p.RequestState
	default:
		t.Fatalf("%q: a plain %s: only tools/call and resources/read are", b, m.method)
	}
	if key != m.key || !m.hasKey {
		t.Fatalf("%q: read key %q (%v), the go-sdk read %q", b, m.key, m.hasKey, key)
	}
	if m.state != (state != "") && !(m.state && state == "") {
		t.Fatalf("%q: read requestState %v, the go-sdk read %q", b, m.state, state)
	}
	if answers && !m.answers {
		t.Fatalf("%q: the go-sdk read inputResponses the edge did not see", b)
	}
	var read mcp.Meta
	if m.meta != nil {
		if err := json.Unmarshal(m.meta, &read); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(read, meta) {
		t.Fatalf("%q: read _meta %v, the go-sdk read %v", b, read, meta)
	}
}

// TestReadMessageKey: the name or URI the edge reads, checks against the
// Mcp-Name header and records for the call's id, is the one the go-sdk
// runs: the last of a member given twice, matched case-sensitively, an
// escaped key read as its text.
func TestReadMessageKey(t *testing.T) {
	for _, tc := range []struct {
		params string
		key    string
		hasKey bool
	}{
		{`{"name":"echo"}`, "echo", true},
		{`{"name":"a","name":"b","Name":"c"}`, "b", true},
		{`{"Name":"c"}`, "", false},
		{`{"name":"echo","n\u0061me":"other"}`, "other", true},
		{`{"name":5}`, "", false},
		{`{"name":null,"arguments":{}}`, "", false},
	} {
		b := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + `}`)
		m, ok := readMessage(b)
		if !ok {
			t.Fatalf("%s: not read", tc.params)
		}
		if m.key != tc.key || m.hasKey != tc.hasKey {
			t.Errorf("%s: key %q (%v), want %q (%v)", tc.params, m.key, m.hasKey, tc.key, tc.hasKey)
		}
		if m.plain && tc.params != `{"name":"echo"}` {
			t.Errorf("%s: served by the edge itself, not the go-sdk", tc.params)
		}
	}
}
