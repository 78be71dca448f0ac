package pdk

import (
	"encoding/json"
	"reflect"
	"testing"
)

var envelopeSeeds = []string{
	`{"request":{"name":"echo","arguments":{"text":"hello"}},"context":{"id":"17","_meta":{}}}`,
	`{"request":{"name":"echo","arguments":{"text":"a \"quoted\" \u00e9 text","n":[1,2.5,-3e+2,0.1E-3,true,false,null]}},"context":{"id":"x","_meta":{"progressToken":7}}}`,
	` { "request" : { "name" : "e" } , "context" : { "id" : 3 , "_meta" : null } } `,
	`{"_meta":{"a":1}}`,
	`{}`,
	`{"request":null,"context":null}`,
	`{"Request":{"name":"echo"}}`,
	`{"request":{"NAME":"echo"}}`,
	`{"request":{"name":"echo","name":"other"}}`,
	`{"context":{"_meta":{"a":1}},"context":{"_meta":{"b":2}}}`,
	`{"request":{"name":"ech\u006f"}}`,
	`{"request":{"name":"\xff"}}`,
	`{"request":{"name":5}}`,
	`{"request":{"arguments":{}}}`,
	`{"request":[1,2,{"a":[]}],"context":{"id":null}}`,
	`{"request":{"name":"x"}`,
	`{"request":{"name":"x"}} x`,
	`{"request":01}`,
	`{"request":-}`,
	`{"request":"\x01"}`,
	`{"request":"\q"}`,
	`{"request":1.}`,
	`{"req\u0075est":{}}`,
	`{"ſ":1,"request":{"name":"ſ"}}`,
	`[]`,
	`null`,
	``,
}

// FuzzSplitEnvelope checks the fast path against encoding/json: whenever
// splitEnvelope (or splitCallTool) accepts an input, encoding/json must
// decode it to the same values.
func FuzzSplitEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var slow, fast envelope
		slowErr := json.Unmarshal(in, &slow)
		if fastEnvelope(in, &fast) {
			if slowErr != nil {
				t.Fatalf("fast path accepted %q, encoding/json: %v", in, slowErr)
			}
			if !reflect.DeepEqual(normalize(fast), normalize(slow)) {
				t.Fatalf("%q:\nfast %#v\nslow %#v", in, fast, slow)
			}
			if requestID(fast.Context.ID, nil) != requestID(slow.Context.ID, nil) {
				t.Fatalf("%q: id %q, encoding/json's %q", in, requestID(fast.Context.ID, nil), requestID(slow.Context.ID, nil))
			}
			// The request split in the same pass, as a tools/call.
			if c := fast.call; c.ok {
				var want CallToolRequest
				if err := json.Unmarshal(slow.Request, &want); err != nil {
					t.Fatalf("%q: call split, encoding/json: %v", in, err)
				}
				if string(c.name) != want.Name || string(c.arguments) != string(want.Arguments) {
					t.Fatalf("%q: call split as name %q args %q, encoding/json's %q %q", in, c.name, c.arguments, want.Name, want.Arguments)
				}
			} else if _, _, ok := splitCallTool(slow.Request); ok {
				t.Fatalf("%q: splitCallTool takes the request, splitEnvelope did not split it", in)
			}
		}
		// The request of a call, and the input itself as one.
		for _, req := range [][]byte{in, slow.Request} {
			name, args, ok := splitCallTool(req)
			if !ok {
				continue
			}
			var want CallToolRequest
			if err := json.Unmarshal(req, &want); err != nil {
				t.Fatalf("splitCallTool accepted %q, encoding/json: %v", req, err)
			}
			if name != want.Name || string(args) != string(want.Arguments) {
				t.Fatalf("%q: name %q args %q, encoding/json's %q %q", req, name, args, want.Name, want.Arguments)
			}
		}
	})
}

// normalize makes RawMessages that are empty but not nil nil, as
// encoding/json leaves absent ones, and drops the call split by the fast
// path (checked apart).
func normalize(e envelope) envelope {
	e.call = callParts{}
	if len(e.Request) == 0 {
		e.Request = nil
	}
	if len(e.Context.ID) == 0 {
		e.Context.ID = nil
	}
	return e
}

// TestSplitEnvelopeFastPath: what Hangar sends takes the fast path.
func TestSplitEnvelopeFastPath(t *testing.T) {
	in := []byte(`{"request":{"name":"echo","arguments":{"text":"hello"}},"context":{"id":"17","_meta":{"progressToken":"p"}}}`)
	p, ok := splitEnvelope(in)
	if !ok {
		t.Fatal("splitEnvelope refused Hangar's envelope")
	}
	if string(p.request) != `{"name":"echo","arguments":{"text":"hello"}}` || string(p.id) != `"17"` || string(p.meta) != `{"progressToken":"p"}` || p.topMeta != nil {
		t.Errorf("parts: request %s id %s meta %s topMeta %s", p.request, p.id, p.meta, p.topMeta)
	}
	name, args, ok := splitCallTool(p.request)
	if !ok || name != "echo" || string(args) != `{"text":"hello"}` {
		t.Errorf("splitCallTool = %q, %s, %v", name, args, ok)
	}
	for _, refused := range []string{`{"Request":{}}`, `{"request":{}`, `{"a":1,"a":2}x`, `{"request":{"name":"\u0065"}}`} {
		if _, ok := splitEnvelope([]byte(refused)); ok {
			if _, _, ok := splitCallTool([]byte(refused)); ok {
				t.Errorf("both fast paths accepted %s", refused)
			}
		}
	}
}

// FuzzAppendTextResult: the fast encoding of text results is json.Marshal's,
// byte for byte.
func FuzzAppendTextResult(f *testing.F) {
	for _, s := range []string{"", "hello", "a \"quoted\" \\ text", "<b>&amp;</b>", "\x00\x01\b\f\n\r\t\x1f\x7f", "é 世界 \u2028\u2029", "\xff\xfe bad", "\xed\xa0\x80"} {
		f.Add(s, "second", false)
		f.Add(s, "", true)
	}
	f.Fuzz(func(t *testing.T, a, b string, isError bool) {
		r := &CallToolResult{Content: []Content{&TextContent{Text: a}, &TextContent{Text: b}}, IsError: isError}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendTextResult(nil, r)
		if !ok || string(got) != string(want) {
			t.Fatalf("appendTextResult = %s, %v\njson.Marshal    = %s", got, ok, want)
		}
	})
}

func TestAppendTextResultRefuses(t *testing.T) {
	for _, r := range []*CallToolResult{
		{Content: []Content{&ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		{Content: []Content{&TextContent{Text: "x", Meta: Meta{"a": 1}}}},
		{Content: []Content{&TextContent{Text: "x", Annotations: &Annotations{}}}},
		{Content: []Content{}, StructuredContent: map[string]any{"a": 1}},
		{Content: []Content{}, Meta: Meta{}},
	} {
		if got, ok := appendTextResult(nil, r); ok {
			t.Errorf("appendTextResult(%+v) = %s, want refusal", r, got)
		}
	}
	got, ok := appendTextResult(nil, &CallToolResult{Content: []Content{}})
	if want, _ := json.Marshal(&CallToolResult{Content: []Content{}}); !ok || string(got) != string(want) {
		t.Errorf("empty result: %s, want %s", got, want)
	}
}

// FuzzAppendStructuredResult: a text result with structured content in a
// json.RawMessage, as package typed makes them, is encoded as json.Marshal
// encodes it whenever the fast encoding takes it.
func FuzzAppendStructuredResult(f *testing.F) {
	for _, s := range []string{`{"sum":3}`, `{"a":"b c","list":[1,2.5e3,null,true,{}]}`, `{"html":"<b>"}`, ` {"space":1}`, `{"x":1} `, `[1]`, `"s"`, `{`, ``, "{\"u\":\"\u2028\"}"} {
		f.Add(s, []byte(s), false)
		f.Add("text", []byte(s), true)
	}
	f.Fuzz(func(t *testing.T, text string, raw []byte, isError bool) {
		r := &CallToolResult{Content: []Content{&TextContent{Text: text}}, StructuredContent: json.RawMessage(raw), IsError: isError}
		got, ok := appendTextResult(nil, r)
		if !ok {
			return
		}
		want, err := json.Marshal(r)
		if err != nil || string(got) != string(want) {
			t.Fatalf("appendTextResult = %s\njson.Marshal    = %s, %v", got, want, err)
		}
	})
}

// TestAppendStructuredResult: what package typed makes takes the fast
// encoding.
func TestAppendStructuredResult(t *testing.T) {
	raw := json.RawMessage(`{"sum":3,"note":"a \"b\" c","list":[1,2.5]}`)
	r := TextResult(string(raw))
	r.StructuredContent = raw
	got, ok := appendTextResult(nil, r)
	want, _ := json.Marshal(r)
	if !ok || string(got) != string(want) {
		t.Errorf("appendTextResult = %s, %v; want %s", got, ok, want)
	}
}

// TestIsEmptyObject: {} with any JSON white space in and around it, and
// nothing else.
func TestIsEmptyObject(t *testing.T) {
	for v, want := range map[string]bool{
		`{}`: true, ` {} `: true, "{ \t\r\n}": true, "\n{}\n": true,
		``: false, ` `: false, `{`: false, `}`: false, `[]`: false, `{"a":1}`: false,
		`{}}`: false, `{} x`: false, "{\v}": false, "{\u00a0}": false, `null`: false,
	} {
		if got := isEmptyObject([]byte(v)); got != want {
			t.Errorf("isEmptyObject(%q) = %v, want %v", v, got, want)
		}
	}
}
