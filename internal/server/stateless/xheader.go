package stateless

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Over Streamable HTTP, a 2026-07-28 client mirrors the values of the tool
// parameters a tool's input schema marks with x-mcp-header into
// Mcp-Param-{Name} headers, and the server checks each against the body
// (basic/transports/streamable-http, "Custom Headers from Tool
// Parameters"). A tool whose annotations break the revision's rules is
// refused when a plugin offers it, with the reason in the log (Edge.Offer):
// clients must drop such a tool anyway, and a server that kept it could
// not check its calls.

// binding is a parameter a tool mirrors into a header.
type binding struct {
	path   []string // property names from the schema's root
	header string   // Mcp-Param-{Name}, canonical
}

// headerBindings returns the x-mcp-header bindings of a tool's input
// schema, or why the annotations are invalid: a value that is not a
// non-empty HTTP token, one given twice (whatever the case), one on a
// property whose type is not integer, string or boolean, or one anywhere
// but on a property reached from the root through properties alone (not
// through items, a composition, a condition, $ref or $defs).
func headerBindings(schema any) ([]binding, error) {
	raw, err := json.Marshal(schema)
	if err != nil || !bytes.Contains(raw, []byte(`"x-mcp-header"`)) && !bytes.Contains(raw, []byte(`\u`)) {
		return nil, nil // none (or a schema core refuses anyway)
	}
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, nil
	}
	w := &headerWalk{seen: map[string]string{}}
	w.schema(root, nil, true, "")
	if w.err != nil {
		return nil, w.err
	}
	return w.out, nil
}

type headerWalk struct {
	out  []binding
	seen map[string]string // lower-case name -> property path
	err  error
}

// schema walks a subschema at where (a JSON pointer, for messages). path
// is its property path when it is reached through properties alone from
// the root (reachable), and the schema is a property when path is not
// empty.
func (w *headerWalk) schema(v any, path []string, reachable bool, where string) {
	s, ok := v.(map[string]any)
	if !ok || w.err != nil {
		return
	}
	if h, ok := s["x-mcp-header"]; ok {
		w.annotation(s, h, path, reachable, where)
	}
	for k, sub := range s {
		switch k {
		case "properties":
			if props, ok := sub.(map[string]any); ok {
				for _, name := range sortedKeys(props) {
					w.schema(props[name], append(slices.Clone(path), name), reachable, where+"/properties/"+name)
				}
			}
		case "patternProperties", "$defs", "definitions", "dependentSchemas":
			if m, ok := sub.(map[string]any); ok {
				for _, name := range sortedKeys(m) {
					w.schema(m[name], nil, false, where+"/"+k+"/"+name)
				}
			}
		case "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
			"unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentSchema":
			if list, ok := sub.([]any); ok {
				for i, e := range list {
					w.schema(e, nil, false, fmt.Sprintf("%s/%s/%d", where, k, i))
				}
				continue
			}
			w.schema(sub, nil, false, where+"/"+k)
		case "allOf", "anyOf", "oneOf", "prefixItems":
			if list, ok := sub.([]any); ok {
				for i, e := range list {
					w.schema(e, nil, false, fmt.Sprintf("%s/%s/%d", where, k, i))
				}
			}
		}
	}
}

func (w *headerWalk) annotation(s map[string]any, h any, path []string, reachable bool, where string) {
	at := where
	if at == "" {
		at = "the schema's root"
	}
	name, ok := h.(string)
	switch {
	case !reachable || len(path) == 0:
		w.err = fmt.Errorf("x-mcp-header at %s: it may only mark a property reached from the root through properties alone (not through items, a composition, a condition, $ref or $defs)", at)
	case !ok || name == "":
		w.err = fmt.Errorf("x-mcp-header at %s must be a non-empty string", at)
	case !isToken(name):
		w.err = fmt.Errorf("x-mcp-header %q at %s is not an HTTP header name token", name, at)
	case !primitive(s["type"]):
		w.err = fmt.Errorf("x-mcp-header %q at %s: the property's type must be integer, string or boolean, not %v", name, at, s["type"])
	}
	if w.err != nil {
		return
	}
	lower := strings.ToLower(name)
	if prev, dup := w.seen[lower]; dup {
		w.err = fmt.Errorf("x-mcp-header %q at %s: %s already uses that name (names are compared without case)", name, at, prev)
		return
	}
	w.seen[lower] = at
	w.out = append(w.out, binding{path: path, header: http.CanonicalHeaderKey("Mcp-Param-" + name)})
}

// primitive reports whether a schema's type is integer, string or boolean
// (alone, or with null).
func primitive(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "integer" || t == "string" || t == "boolean"
	case []any:
		n := 0
		for _, e := range t {
			switch e {
			case "null":
			case "integer", "string", "boolean":
				n++
			default:
				return false
			}
		}
		return n == 1
	}
	return false
}

// isToken reports whether s is an HTTP token (RFC 9110's 1*tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// headerValue decodes a header value that may carry the Base64 sentinel
// (=?base64?...?=), and reports false for a value with characters a header
// may not carry or a sentinel that does not decode to UTF-8.
func headerValue(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", false
		}
	}
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call of a
// tool with bindings against its arguments: a parameter given (not null)
// needs its header, with its value; a parameter absent or null, none.
func checkParamHeaders(h http.Header, bs []binding, args json.RawMessage) error {
	var obj map[string]any
	if len(args) > 0 {
		d := json.NewDecoder(bytes.NewReader(args))
		d.UseNumber()
		d.Decode(&obj) // not an object: every parameter is absent
	}
	for _, b := range bs {
		val, present := lookup(obj, b.path)
		hv, sent := h[b.header]
		param := strings.Join(b.path, ".")
		if !present || val == nil {
			if sent {
				return fmt.Errorf("header mismatch: %s is sent but parameter %q is absent or null", b.header, param)
			}
			continue
		}
		if !sent {
			return fmt.Errorf("header mismatch: missing %s header for parameter %q", b.header, param)
		}
		if len(hv) != 1 {
			return fmt.Errorf("header mismatch: %s is sent %d times", b.header, len(hv))
		}
		got, ok := headerValue(hv[0])
		if !ok {
			return fmt.Errorf("header mismatch: %s contains invalid characters or an invalid Base64 value", b.header)
		}
		if !sameValue(got, val) {
			return fmt.Errorf("header mismatch: %s value %q does not match parameter %q", b.header, hv[0], param)
		}
	}
	return nil
}

func lookup(obj map[string]any, path []string) (any, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// maxSafe bounds the integers a header value may carry (JavaScript's safe
// integers).
const maxSafe = 1<<53 - 1

// sameValue reports whether a (decoded) header value matches a parameter's
// value: a string as it is, a boolean as "true" or "false", an integer
// compared as a number ("42.0" matches 42).
func sameValue(h string, v any) bool {
	switch v := v.(type) {
	case string:
		return h == v
	case bool:
		return h == strconv.FormatBool(v)
	case json.Number:
		want, err := strconv.ParseFloat(v.String(), 64)
		if err != nil || want != math.Trunc(want) || math.Abs(want) > maxSafe {
			return false
		}
		got, err := strconv.ParseFloat(strings.TrimSpace(h), 64)
		return err == nil && got == want
	}
	return false
}
