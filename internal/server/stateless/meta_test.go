package stateless

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestCapabilitiesKeepExtensions: the extensions a 2026-07-28 request
// declares reach the core (it serves a UI host the tools only views call);
// an extension's settings must be an object.
func TestCapabilitiesKeepExtensions(t *testing.T) {
	ui := map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}}
	caps, err := capabilities(map[string]any{"extensions": map[string]any{
		"io.modelcontextprotocol/ui":    ui,
		"io.modelcontextprotocol/tasks": map[string]any{},
		"com.example/off":               nil,
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"io.modelcontextprotocol/ui": ui, "io.modelcontextprotocol/tasks": map[string]any{}}
	if !reflect.DeepEqual(caps.Extensions, want) {
		t.Errorf("extensions %v, want %v", caps.Extensions, want)
	}
	if caps, err := capabilities(map[string]any{}); err != nil || caps.Extensions != nil {
		t.Errorf("no extensions: %v %v", caps.Extensions, err)
	}
	for _, bad := range []any{"ui", []any{}, map[string]any{"io.modelcontextprotocol/ui": true}} {
		if _, err := capabilities(map[string]any{"extensions": bad}); err == nil {
			t.Errorf("extensions %v accepted", bad)
		}
	}
}

// FuzzPlainObject: whenever plainObject decodes a _meta, json.Unmarshal
// decodes the same, and the common shapes of a 2026-07-28 _meta are
// decoded without encoding/json; decodeMeta, which does not build the
// clientInfo it checks, checks what json.Unmarshal's map says as
// checkFields checks that map, and leaves plugins the same _meta.
func FuzzPlainObject(f *testing.F) {
	common := []string{
		`{}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`,
		`{"progressToken":3,"x":-1.5e3,"t":true,"f":false,"n":null,"o":{"p":{}}} `,
		`{"a":1,"a":"é"}`,
	}
	for _, s := range common {
		if _, ok := plainObject([]byte(s), false); !ok {
			f.Errorf("plainObject(%s) declined", s)
		}
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":1}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":1,"name":null,"version":"2","x":{"y":[]}}}`,
		`{"a":[1]}`, `{"a":"\n"}`, `{"k\u0041":1}`, `{"big":1e400}`, `{"a":1`, `[]`, `null`, "{\"a\":\"\xff\"}", `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want map[string]any
		err := json.Unmarshal(in, &want)
		if got, ok := plainObject(in, false); ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("plainObject(%q) = %#v; json.Unmarshal %#v, %v", in, got, want, err)
		}
		if err != nil || want == nil {
			return
		}
		// decodeMeta, which checks clientInfo in place, checks the same
		// and gives plugins the same _meta.
		meta, jerr := decodeMeta(in)
		if jerr != nil {
			t.Fatalf("decodeMeta(%q): %v", in, jerr)
		}
		rm, jerr := checkFields(meta)
		wm, werr := checkFields(want)
		if (jerr == nil) != (werr == nil) || jerr != nil && jerr.Message != werr.Message {
			t.Fatalf("checkFields of decodeMeta(%q): %v; of json.Unmarshal's: %v", in, jerr, werr)
		}
		if rm != nil && !reflect.DeepEqual(rm, wm) {
			t.Fatalf("checkFields of decodeMeta(%q) = %#v; of json.Unmarshal's %#v", in, rm, wm)
		}
	})
}

// FuzzScanMeta holds scanMeta to decodeMessageMeta and checkFields, which
// read a _meta it declines: whenever it reads one, they accept it too,
// with the same protocol version, capabilities and log level, and plugins
// get the same _meta (rm.metaJSON decodes to what their map encodes to,
// numbers spelled alike). The usual shapes of a 2026-07-28 call's _meta
// are read by scanMeta.
func FuzzScanMeta(f *testing.F) {
	usual := []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{"context":{},"tools":{}},"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/logLevel":"warning"}`,
		`{ "io.modelcontextprotocol/protocolVersion" : "2026-07-28" , "io.modelcontextprotocol/clientCapabilities" : { "extensions" : { "io.modelcontextprotocol/tasks" : { } } } }`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"com.example/x":{"k":7,"neg":-3,"zero":0,"on":true,"s":"<b>"}}}}`,
	}
	for _, s := range usual {
		if _, ok := scanMeta(plainCall(f, s)); !ok {
			f.Errorf("scanMeta declined %s", s)
		}
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{},"roots":{"listChanged":true}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":true}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"x":"\u00e9","n":1.50}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"\u0064ebug"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"com.example/x":{"max":1e2}}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"com.example/x":{"n":1.0,"z":-0}}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"com.example/x":{"big":12345678901234567}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m := plainCall(t, string(in))
		if m == nil {
			return
		}
		rm, ok := scanMeta(m)
		if !ok {
			return
		}
		meta, jerr := decodeMessageMeta(m)
		if jerr != nil {
			t.Fatalf("scanMeta read %s, which decodeMessageMeta refuses: %v", in, jerr)
		}
		wm, jerr := checkFields(meta)
		if jerr != nil {
			t.Fatalf("scanMeta read %s, which checkFields refuses: %v", in, jerr)
		}
		if rm.meta != nil || rm.version != wm.version || rm.logLevel != wm.logLevel || !reflect.DeepEqual(rm.capsValue, wm.capsValue) || rm.caps != &rm.capsValue {
			t.Fatalf("scanMeta(%s) = %#v; checkFields %#v", in, rm, wm)
		}
		encoded, err := json.Marshal(wm.meta)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := decodeNumbers(t, rm.metaJSON), decodeNumbers(t, encoded); !reflect.DeepEqual(got, want) {
			t.Fatalf("scanMeta(%s) gives plugins %s; checkFields %s", in, rm.metaJSON, encoded)
		}
		if m.bare(rm) != m.bare(wm) {
			t.Fatalf("%s: bare %v, with checkFields's %v", in, m.bare(rm), m.bare(wm))
		}
	})
}

// decodeNumbers decodes the JSON b with its numbers as written.
func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// plainCall is the tools/call with _meta meta that the edge may serve
// itself, or nil if meta makes it one it may not (or no message).
func plainCall(tb testing.TB, meta string) *message {
	m, ok := readMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":` + meta + `}}`))
	if !ok || !m.plain {
		return nil
	}
	return m
}
