package stateless

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// body is a 2026-07-28 request's JSON: method, params (a JSON object's
// members, without _meta) and the _meta members.
func body(method, params, meta string) []byte {
	if meta == "" {
		meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	}
	if params != "" {
		params += ","
	}
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `"_meta":{` + meta + `}}}`)
}

// headers are a well-behaved client's headers for a request of method on
// name ("" for none), with set applied ("" removes a header).
func headers(method, name string, set map[string][]string) http.Header {
	h := http.Header{}
	h.Set(headerVersion, Version)
	h.Set(headerMethod, method)
	if name != "" {
		h.Set(headerName, name)
	}
	for k, v := range set {
		if v == nil {
			h.Del(k)
		} else {
			h[http.CanonicalHeaderKey(k)] = v
		}
	}
	return h
}

func b64(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }

// The checks of a request's headers against its body and _meta, and of
// the Mcp-Param headers of a tool with x-mcp-header parameters (region, a
// string; n, an integer; on, a boolean; deep.zone, nested), answer each
// request with the revision's code: 0 for a request that passes.
func TestCheck(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
		"n":      map[string]any{"type": "integer", "x-mcp-header": "N"},
		"on":     map[string]any{"type": "boolean", "x-mcp-header": "On"},
		"deep":   map[string]any{"type": "object", "properties": map[string]any{"zone": map[string]any{"type": "string", "x-mcp-header": "Zone"}}},
		"free":   map[string]any{"type": "string"},
	}}
	bs, err := headerBindings(schema)
	if err != nil || len(bs) != 4 {
		t.Fatalf("headerBindings: %v, %v; want 4 bindings", bs, err)
	}
	e := &Edge{headers: map[string][]binding{"bound": bs}}
	call := func(args string) []byte { return body("tools/call", `"name":"bound","arguments":`+args, "") }
	all := `{"region":"eu","n":42,"on":true,"deep":{"zone":"a"}}`
	allHeaders := map[string][]string{"Mcp-Param-Region": {"eu"}, "Mcp-Param-N": {"42"}, "Mcp-Param-On": {"true"}, "Mcp-Param-Zone": {"a"}}
	with := func(k string, v []string) map[string][]string {
		m := map[string][]string{}
		for k2, v2 := range allHeaders {
			m[k2] = v2
		}
		m[k] = v
		return m
	}
	for _, c := range []struct {
		name   string
		body   []byte
		header http.Header
		code   int64
	}{
		{"tools/call", body("tools/call", `"name":"echo"`, ""), headers("tools/call", "echo", nil), 0},
		{"resources/read names the URI", body("resources/read", `"uri":"test://a b"`, ""), headers("resources/read", "test://a b", nil), 0},
		{"Mcp-Name in Base64", body("prompts/get", `"name":"é"`, ""), headers("prompts/get", b64("é"), nil), 0},
		{"tools/list needs no Mcp-Name", body("tools/list", "", ""), headers("tools/list", "", nil), 0},
		{"no Mcp-Method", body("tools/list", "", ""), headers("tools/list", "", map[string][]string{headerMethod: nil}), CodeHeaderMismatch},
		{"Mcp-Method twice", body("tools/list", "", ""), headers("tools/list", "", map[string][]string{headerMethod: {"tools/list", "tools/list"}}), CodeHeaderMismatch},
		{"Mcp-Method of another method", body("tools/list", "", ""), headers("prompts/list", "", nil), CodeHeaderMismatch},
		{"no Mcp-Name", body("tools/call", `"name":"echo"`, ""), headers("tools/call", "", nil), CodeHeaderMismatch},
		{"Mcp-Name of another tool", body("tools/call", `"name":"echo"`, ""), headers("tools/call", "other", nil), CodeHeaderMismatch},
		{"Mcp-Name twice", body("tools/call", `"name":"echo"`, ""), headers("tools/call", "", map[string][]string{headerName: {"echo", "echo"}}), CodeHeaderMismatch},
		{"Mcp-Name in bad Base64", body("tools/call", `"name":"echo"`, ""), headers("tools/call", "=?base64?!!!?=", nil), CodeHeaderMismatch},
		{"Mcp-Name with a control character", body("tools/call", `"name":"echo"`, ""), headers("tools/call", "ec\x01ho", nil), CodeHeaderMismatch},
		{"no MCP-Protocol-Version", body("tools/list", "", ""), headers("tools/list", "", map[string][]string{headerVersion: nil}), CodeHeaderMismatch},
		{"MCP-Protocol-Version of another version", body("tools/list", "", ""), headers("tools/list", "", map[string][]string{headerVersion: {"2025-11-25"}}), CodeHeaderMismatch},
		{"no protocol version in _meta", body("tools/list", "", `"io.modelcontextprotocol/clientCapabilities":{}`), headers("tools/list", "", nil), jsonrpc.CodeInvalidParams},
		{"no client capabilities in _meta", body("tools/list", "", `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`), headers("tools/list", "", nil), jsonrpc.CodeInvalidParams},
		{"a version Hangar does not serve", body("tools/list", "", `"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}`), headers("tools/list", "", map[string][]string{headerVersion: {"2099-01-01"}}), CodeUnsupportedProtocolVersion},
		{"an unknown log level", body("tools/list", "", `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"`), headers("tools/list", "", nil), jsonrpc.CodeInvalidParams},

		{"every parameter header", call(all), headers("tools/call", "bound", allHeaders), 0},
		{"parameter headers in Base64 and as numbers", call(all), headers("tools/call", "bound", with("Mcp-Param-Region", []string{b64("eu")})), 0},
		{"an integer written as a float", call(all), headers("tools/call", "bound", with("Mcp-Param-N", []string{"42.0"})), 0},
		{"absent parameters need no header", call(`{"free":"x"}`), headers("tools/call", "bound", nil), 0},
		{"a null parameter needs none", call(`{"region":null}`), headers("tools/call", "bound", nil), 0},
		{"a missing parameter header", call(all), headers("tools/call", "bound", with("Mcp-Param-Region", nil)), CodeHeaderMismatch},
		{"a missing nested parameter header", call(all), headers("tools/call", "bound", with("Mcp-Param-Zone", nil)), CodeHeaderMismatch},
		{"a parameter header of another value", call(all), headers("tools/call", "bound", with("Mcp-Param-Region", []string{"us"})), CodeHeaderMismatch},
		{"a parameter header twice", call(all), headers("tools/call", "bound", with("Mcp-Param-Region", []string{"eu", "eu"})), CodeHeaderMismatch},
		{"a boolean as 1", call(all), headers("tools/call", "bound", with("Mcp-Param-On", []string{"1"})), CodeHeaderMismatch},
		{"a parameter header for an absent parameter", call(`{}`), headers("tools/call", "bound", map[string][]string{"Mcp-Param-Region": {"eu"}}), CodeHeaderMismatch},
		{"an integer beyond 2^53", call(`{"n":9007199254740993}`), headers("tools/call", "bound", map[string][]string{"Mcp-Param-N": {"9007199254740993"}}), CodeHeaderMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, ok := readMessage(c.body)
			if !ok {
				t.Fatalf("readMessage(%s) failed", c.body)
			}
			_, jerr := e.check(c.header, m)
			var got int64
			if jerr != nil {
				got = jerr.Code
			}
			if got != c.code {
				t.Errorf("check: code %d (%v), want %d", got, jerr, c.code)
			}
		})
	}
}

// An x-mcp-header annotation breaking one of the revision's rules makes
// the tool's bindings an error; valid ones bind their property's path.
func TestHeaderBindings(t *testing.T) {
	prop := func(typ string, name any) map[string]any {
		return map[string]any{"type": typ, "x-mcp-header": name}
	}
	object := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	for _, c := range []struct {
		name   string
		schema map[string]any
		want   []string // header: path, or nil for an error
	}{
		{"none", object(map[string]any{"a": map[string]any{"type": "string"}}), []string{}},
		{"a string, an integer and a boolean", object(map[string]any{"a": prop("string", "A"), "b": prop("integer", "b-2"), "c": prop("boolean", "C")}), []string{"Mcp-Param-A: a", "Mcp-Param-B-2: b", "Mcp-Param-C: c"}},
		{"nested in properties", object(map[string]any{"o": object(map[string]any{"z": prop("string", "Z")})}), []string{"Mcp-Param-Z: o.z"}},
		{"an empty name", object(map[string]any{"a": prop("string", "")}), nil},
		{"a name that is no token", object(map[string]any{"a": prop("string", "a b")}), nil},
		{"a name that is no string", object(map[string]any{"a": prop("string", 7)}), nil},
		{"a name twice, in other case", object(map[string]any{"a": prop("string", "Zone"), "b": prop("string", "zone")}), nil},
		{"on an object", object(map[string]any{"a": prop("object", "A")}), nil},
		{"on a number", object(map[string]any{"a": prop("number", "A")}), nil},
		{"inside items", object(map[string]any{"a": map[string]any{"type": "array", "items": prop("string", "A")}}), nil},
		{"inside anyOf", object(map[string]any{"a": map[string]any{"anyOf": []any{prop("string", "A")}}}), nil},
		{"inside $defs", map[string]any{"type": "object", "$defs": map[string]any{"d": prop("string", "A")}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs, err := headerBindings(c.schema)
			if c.want == nil {
				if err == nil {
					t.Errorf("headerBindings: %v, want an error", bs)
				}
				return
			}
			if err != nil {
				t.Fatalf("headerBindings: %v", err)
			}
			got := []string{}
			for _, b := range bs {
				got = append(got, b.header+": "+strings.Join(b.path, "."))
			}
			if strings.Join(sorted(got), "|") != strings.Join(sorted(c.want), "|") {
				t.Errorf("bindings %q, want %q", got, c.want)
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Takes gives the 2026-07-28 edge a request whose MCP-Protocol-Version
// names 2026-07-28 or a later revision (a date), or whose body's _meta
// names a protocol version; a header that names no revision ("latest",
// a draft) or an older one leaves the request to the sessions.
func TestTakes(t *testing.T) {
	e := &Edge{}
	for _, c := range []struct {
		method, version string
		body            []byte
		want            bool
	}{
		{http.MethodPost, Version, body("tools/list", "", ""), true},
		{http.MethodGet, Version, nil, true},
		{http.MethodPost, "2099-01-01", body("tools/list", "", ""), true},
		{http.MethodPost, "", body("tools/list", "", ""), true},
		{http.MethodPost, "2025-11-25", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), false},
		{http.MethodPost, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`), false},
		{http.MethodPost, "latest", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), false},
		{http.MethodPost, "DRAFT-2026-v1", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), false},
		{http.MethodGet, "latest", nil, false},
		{http.MethodDelete, "2025-06-18", nil, false},
	} {
		r, err := http.NewRequest(c.method, "http://127.0.0.1/mcp", bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.version != "" {
			r.Header.Set(headerVersion, c.version)
		}
		if got := e.Takes(r); got != c.want {
			t.Errorf("%s with MCP-Protocol-Version %q and body %s: Takes = %v, want %v", c.method, c.version, c.body, got, c.want)
		}
		if c.body != nil {
			// What Takes read is left for the next reader.
			var v any
			if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
				t.Errorf("the body after Takes: %v", err)
			}
		}
	}
}
