package pdk

import (
	"bytes"
	"encoding/json"

	"github.com/hangar-mcp/hangar/pdk/internal/fastjson"
)

// The v1 envelope, {"request": {...}, "context": {"id": ..., "_meta": ...}},
// is decoded on every call. encoding/json does it with reflection and a
// scanner that makes a function call per byte, and a Go guest pays dearly
// for both: in Go's WebAssembly every function call and every loop
// iteration costs several times what it does natively. splitEnvelope finds
// the parts, and the name and arguments of a tools/call request, in a
// single pass over the bytes that also checks them (package fastjson),
// and leaves to encoding/json only what it must build (the _meta maps, and
// the handler's own arguments).
//
// It is a fast path, not a second decoder: it accepts only inputs whose
// meaning it is sure of (valid JSON, keys spelled exactly, strings that
// need no unescaping where it reads them) and says no to anything else,
// and the caller then decodes with encoding/json as before, errors
// included. FuzzSplitEnvelope checks that, whenever it says yes, it agrees
// with encoding/json.

// envelopeParts are the byte spans of an envelope's parts; nil when absent.
type envelopeParts struct {
	request, id, meta, topMeta []byte
	// call is the request split as a tools/call request, if it is one
	// whose name and arguments splitCall could read.
	call callParts
}

// callParts are the name and arguments of a tools/call request.
type callParts struct {
	name      []byte // the name's bytes, between its quotes
	arguments []byte // nil when absent
	ok        bool   // the request was read: name and arguments are right
}

// splitEnvelope splits a v1 input, or reports false.
func splitEnvelope(in []byte) (envelopeParts, bool) {
	var e envelopeParts
	var seen, seenInContext uint8
	end, ok := fastjson.Members(in, 0, func(key []byte, f fastjson.Flags, i int) (int, bool) {
		switch string(key) {
		case "request":
			end, call, ok := splitCall(in, i)
			if !ok {
				return 0, false
			}
			e.request, e.call = in[i:end], call
			return end, once(&seen, 1)
		case "_meta":
			end, ok := fastjson.Skip(in, i)
			if !ok {
				return 0, false
			}
			e.topMeta = in[i:end]
			return end, once(&seen, 2)
		case "context":
			if !once(&seen, 4) {
				return 0, false
			}
			return fastjson.Members(in, i, func(key []byte, f fastjson.Flags, i int) (int, bool) {
				end, ok := fastjson.Skip(in, i)
				if !ok {
					return 0, false
				}
				switch string(key) {
				case "id":
					e.id = in[i:end]
					return end, once(&seenInContext, 1)
				case "_meta":
					e.meta = in[i:end]
					return end, once(&seenInContext, 2)
				}
				return end, otherKey(key, f, "id", "_meta")
			})
		}
		if !otherKey(key, f, "request", "_meta", "context") {
			return 0, false
		}
		return fastjson.Skip(in, i)
	})
	return e, ok && fastjson.Whole(in, end)
}

// splitCall checks the JSON value at b[i] and returns the index after it.
// If the value is a tools/call request whose name is a plain string and
// whose keys encoding/json reads as splitCall does, it also returns its
// name and arguments, with ok set.
func splitCall(b []byte, i int) (end int, c callParts, ok bool) {
	if b[i] != '{' {
		end, ok = fastjson.Skip(b, i)
		return end, c, ok
	}
	var seen uint8
	c.ok = true
	named := false
	end, ok = fastjson.Members(b, i, func(key []byte, f fastjson.Flags, i int) (int, bool) {
		if string(key) == "name" && b[i] == '"' {
			end, nf, ok := fastjson.String(b, i)
			if !ok {
				return 0, false
			}
			c.name = b[i+1 : end-1]
			named = fastjson.Plain(c.name, nf)
			c.ok = c.ok && once(&seen, 1)
			return end, true
		}
		end, ok := fastjson.Skip(b, i)
		if !ok {
			return 0, false
		}
		switch string(key) {
		case "name": // not a string: a type error for encoding/json
			c.ok = false
		case "arguments":
			c.arguments = b[i:end]
			c.ok = c.ok && once(&seen, 2)
		default:
			c.ok = c.ok && otherKey(key, f, "name", "arguments")
		}
		return end, true
	})
	if !ok {
		return 0, callParts{}, false
	}
	if !c.ok || !named {
		c = callParts{}
	}
	return end, c, true
}

// splitCallTool splits a tools/call request into its name and arguments, or
// reports false.
func splitCallTool(request []byte) (name string, arguments []byte, ok bool) {
	i := fastjson.Space(request, 0)
	if i >= len(request) {
		return "", nil, false
	}
	end, c, ok := splitCall(request, i)
	if !ok || !c.ok || !fastjson.Whole(request, end) {
		return "", nil, false
	}
	return string(c.name), c.arguments, true
}

// once records bit in seen and reports whether it was not there yet: a key
// given twice is left to encoding/json, which merges objects.
func once(seen *uint8, bit uint8) bool {
	dup := *seen&bit != 0
	*seen |= bit
	return !dup
}

// otherKey reports whether encoding/json reads key (with flags f) as none
// of names: it needs no unescaping, is valid UTF-8, and does not match one
// of names the way encoding/json matches object keys to fields (without
// regard to case). Other keys are left to encoding/json.
func otherKey(key []byte, f fastjson.Flags, names ...string) bool {
	if !fastjson.Plain(key, f) {
		return false
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return true
}

// isEmptyObject reports whether the JSON value v is {}.
func isEmptyObject(v []byte) bool {
	if string(v) == "{}" {
		return true
	}
	i := fastjson.Space(v, 0)
	if i == len(v) || v[i] != '{' {
		return false
	}
	i = fastjson.Space(v, i+1)
	return i < len(v) && v[i] == '}' && fastjson.Whole(v, i+1)
}

// appendTextResult encodes a result whose content is only plain text
// blocks (no annotations, no _meta), the common case, with no structured
// content or with structured content that json.Marshal writes as it is (a
// compact json.RawMessage, as package typed makes), the way json.Marshal
// does, byte for byte, without its reflection and the re-scan of each
// block's MarshalJSON output; it reports false for any other result.
// FuzzAppendTextResult and FuzzAppendStructuredResult check it against
// json.Marshal.
func appendTextResult(b []byte, r *CallToolResult) ([]byte, bool) {
	if r.Meta != nil {
		return nil, false
	}
	var structured json.RawMessage
	if r.StructuredContent != nil {
		raw, ok := r.StructuredContent.(json.RawMessage)
		if !ok || raw == nil || !fastjson.Verbatim(raw) {
			return nil, false
		}
		structured = raw
	}
	// The size, with room for a few escapes: one allocation.
	n := len(`{"content":[],"structuredContent":,"isError":true}`) + len(structured)
	for _, c := range r.Content {
		t, ok := c.(*TextContent)
		if !ok || t == nil || t.Annotations != nil || t.Meta != nil {
			return nil, false
		}
		n += len(`{"type":"text","text":""},`) + len(t.Text) + len(t.Text)/16 + 8
	}
	if cap(b)-len(b) < n {
		b = append(make([]byte, 0, len(b)+n), b...)
	}
	b = append(b, `{"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = fastjson.AppendString(b, c.(*TextContent).Text)
		b = append(b, '}')
	}
	b = append(b, ']')
	if structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, structured...)
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), true
}
