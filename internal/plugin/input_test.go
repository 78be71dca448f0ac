package plugin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestCallToolInputAsMarshalled holds appendCallToolInput equal to
// json.Marshal of the envelopes it replaces: byte for byte where the
// arguments are compact and free of the characters json.Marshal escapes
// for HTML, and as JSON values always.
func TestCallToolInputAsMarshalled(t *testing.T) {
	type params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	calls := []*Call{
		nil,
		{},
		{ID: "42"},
		{ID: `"quoted" \\ and <html> & \u2028`, Meta: map[string]any{"progressToken": "t-1"}},
		{ID: "\x00\x1f\x7f é \xff", Meta: map[string]any{"progressToken": 7.0, "x": []any{"a", nil}}},
		{ID: "9", MetaJSON: json.RawMessage(`{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{}}}`)},
	}
	names := []string{"echo", "p0_echo", `we"ird\name`, "ünïcode", "<b>&"}
	args := []struct {
		raw     string
		compact bool
	}{
		{`{}`, true},
		{`{"text":"The quick brown fox jumps over the lazy dog."}`, true},
		{`{"n":1.5e3,"a":[1,2,{"b":null}],"s":"\"\\\u00e9"}`, true},
		{" {\n  \"text\" : \"spaced\"\n} ", false},
		{`{"html":"<script>&</script>"}`, false},
	}
	for _, v1 := range []bool{true, false} {
		for _, c := range calls {
			for _, name := range names {
				for _, a := range args {
					got, err := appendCallToolInput(nil, v1, c, name, json.RawMessage(a.raw))
					if err != nil {
						t.Fatal(err)
					}
					p := params{name, json.RawMessage(a.raw)}
					var in any = servletRequest{Method: "tools/call", Params: p}
					if v1 {
						in = v1Request{Request: p, Context: c.v1()}
					}
					want, err := json.Marshal(in)
					if err != nil {
						t.Fatal(err)
					}
					if a.compact && !bytes.Equal(got, want) {
						t.Errorf("v1=%v call %+v name %q args %s:\n got %s\nwant %s", v1, c, name, a.raw, got, want)
					}
					var g, w any
					if err := json.Unmarshal(got, &g); err != nil {
						t.Fatalf("v1=%v name %q args %q: not JSON: %v: %s", v1, name, a.raw, err, got)
					}
					if err := json.Unmarshal(want, &w); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(g, w) {
						t.Errorf("v1=%v call %+v name %q args %s: reads as\n %v\nwant %v", v1, c, name, a.raw, g, w)
					}
				}
			}
		}
	}
}

// FuzzPlainMapAsMarshalled holds appendPlainMap to json.Marshal: for any
// _meta a client may send (any JSON object, as decoded), what it writes
// is json.Marshal's, byte for byte, or it declines.
func FuzzPlainMapAsMarshalled(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"progressToken":7,"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}}`,
		`{"progressToken":"t-1","b":true,"c":null,"d":-0,"e":1.5,"f":9007199254740993,"g":-12}`,
		`{"<":"&","x":"\u00e9","y":"a\"b"}`,
		`{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}`,
		`{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var m map[string]any
		if json.Unmarshal(in, &m) != nil || m == nil {
			return
		}
		got, ok := appendPlainMap([]byte("x"), m, 0)
		if !ok {
			if string(got) != "x" {
				t.Fatalf("declined %s but wrote %q", in, got)
			}
			return
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(got[1:]) != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", in, got[1:], want)
		}
	})
}

// The _meta of a 2026-07-28 call, and a session's progress token, are
// written without json.Marshal; anything else falls back to it.
func TestPlainMapCovers(t *testing.T) {
	for _, tc := range []struct {
		meta map[string]any
		ok   bool
	}{
		{map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{}}, true},
		{map[string]any{"progressToken": 7.0}, true},
		{map[string]any{"progressToken": "t"}, true},
		{map[string]any{"x": []any{1.0}}, false},
		{map[string]any{"x": 1.5}, false},
		{map[string]any{"x": "<"}, false},
		{map[string]any{"x": map[string]any(nil), "y": map[string]any{}}, true},
	} {
		got, ok := appendPlainMap(nil, tc.meta, 0)
		if ok != tc.ok {
			t.Errorf("appendPlainMap(%v) ok = %v, want %v", tc.meta, ok, tc.ok)
		}
		if want, _ := json.Marshal(tc.meta); ok && string(got) != string(want) {
			t.Errorf("appendPlainMap(%v) = %s, json.Marshal %s", tc.meta, got, want)
		}
	}
}
