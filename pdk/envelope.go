package pdk

import (
	"bytes"
	"unicode/utf8"
)

// The v1 envelope, {"request": {...}, "context": {"id": ..., "_meta": ...}},
// is decoded on every call. encoding/json does it with reflection and a
// scanner that makes a function call per byte; in a Go guest under Hangar
// every function call is also a check that the call may go on (wazero's
// termination check), so that decoding the envelope cost as much as the
// rest of an echo tool's call. splitEnvelope finds the parts by a single
// pass over the bytes instead, and leaves to encoding/json only what it
// must build (the _meta maps, and the handler's own arguments).
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
}

// splitEnvelope splits a v1 input, or reports false.
func splitEnvelope(in []byte) (envelopeParts, bool) {
	var e envelopeParts
	var seen, seenInContext uint8
	ok := eachMember(in, func(key string, value []byte) bool {
		switch key {
		case "request":
			e.request = value
			return once(&seen, 1)
		case "_meta":
			e.topMeta = value
			return once(&seen, 2)
		case "context":
			return once(&seen, 4) && eachMember(value, func(key string, value []byte) bool {
				switch key {
				case "id":
					e.id = value
					return once(&seenInContext, 1)
				case "_meta":
					e.meta = value
					return once(&seenInContext, 2)
				default:
					return !foldsTo(key, "id", "_meta")
				}
			})
		default:
			return !foldsTo(key, "request", "_meta", "context")
		}
	})
	return e, ok
}

// splitCallTool splits a tools/call request into its name and arguments, or
// reports false.
func splitCallTool(request []byte) (name string, arguments []byte, ok bool) {
	var rawName []byte
	var seen uint8
	ok = eachMember(request, func(key string, value []byte) bool {
		switch key {
		case "name":
			rawName = value
			return once(&seen, 1)
		case "arguments":
			arguments = value
			return once(&seen, 2)
		default:
			return !foldsTo(key, "name", "arguments")
		}
	})
	if !ok || rawName == nil {
		return "", nil, false
	}
	name, ok = plainString(rawName)
	return name, arguments, ok
}

// once records bit in seen and reports whether it was not there yet: a key
// given twice is left to encoding/json, which merges objects.
func once(seen *uint8, bit uint8) bool {
	dup := *seen&bit != 0
	*seen |= bit
	return !dup
}

// foldsTo reports whether key matches one of names the way encoding/json
// matches object keys to fields (without regard to case) without being
// spelled the same: such keys are left to encoding/json.
func foldsTo(key string, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold([]byte(key), []byte(n)) {
			return true
		}
	}
	return false
}

// plainString returns the JSON string s (quotes included) as a Go string
// when it needs no unescaping and is valid UTF-8, and false otherwise.
func plainString(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	body := s[1 : len(s)-1]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// isEmptyObject reports whether the JSON value v is {}.
func isEmptyObject(v []byte) bool {
	v = bytes.TrimSpace(v)
	return len(v) >= 2 && v[0] == '{' && len(bytes.TrimSpace(v[1:len(v)-1])) == 0 && v[len(v)-1] == '}'
}

// eachMember calls fn with each member of the JSON object in (after
// checking that all of in is one valid JSON object) and reports whether in
// was such an object, every key needed no unescaping, and fn returned true
// for every member.
func eachMember(in []byte, fn func(key string, value []byte) bool) bool {
	i := skipSpace(in, 0)
	if i >= len(in) || in[i] != '{' {
		return false
	}
	end, ok := skipValue(in, i)
	if !ok || skipSpace(in, end) != len(in) {
		return false
	}
	i = skipSpace(in, i+1)
	if in[i] == '}' {
		return true
	}
	for {
		keyEnd, _ := skipValue(in, i) // valid: checked above
		key, ok := plainString(in[i:keyEnd])
		if !ok {
			return false
		}
		i = skipSpace(in, keyEnd) + 1 // past ':'
		i = skipSpace(in, i)
		valueEnd, _ := skipValue(in, i)
		if !fn(key, in[i:valueEnd]) {
			return false
		}
		i = skipSpace(in, valueEnd)
		if in[i] == '}' {
			return true
		}
		i = skipSpace(in, i+1) // past ','
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue checks the JSON value starting at b[i] and returns the index
// just past it. It accepts exactly the JSON grammar (RFC 8259), as
// encoding/json does, except that it refuses what it does not need to
// accept: nesting deeper than maxDepth.
func skipValue(b []byte, i int) (int, bool) {
	// The nesting is kept in a small stack of '{' and '[' instead of by
	// recursion: one loop, so one termination check per byte in a guest.
	var stack [maxDepth]byte
	depth := 0
	// After a value, expect ',' or the closing bracket (or the end at depth
	// 0); inside an object, a key and ':' come before each value.
	expectValue := true
	for {
		if !expectValue && depth == 0 {
			return i, true
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		if !expectValue {
			c := b[i]
			top := stack[depth-1]
			switch {
			case c == ',':
				i++
				if top == '{' {
					var ok bool
					if i, ok = skipKey(b, i); !ok {
						return 0, false
					}
				}
				expectValue = true
				continue
			case c == '}' && top == '{', c == ']' && top == '[':
				depth--
				i++
				continue
			default:
				return 0, false
			}
		}
		// A value.
		c := b[i]
		switch {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return 0, false
			}
			stack[depth] = c
			depth++
			i = skipSpace(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				depth--
				i++
				expectValue = false
				continue
			}
			if c == '{' {
				var ok bool
				if i, ok = skipKey(b, i); !ok {
					return 0, false
				}
			}
			continue
		case c == '"':
			end, ok := skipString(b, i)
			if !ok {
				return 0, false
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end, ok := skipNumber(b, i)
			if !ok {
				return 0, false
			}
			i = end
		case bytes.HasPrefix(b[i:], []byte("true")):
			i += 4
		case bytes.HasPrefix(b[i:], []byte("false")):
			i += 5
		case bytes.HasPrefix(b[i:], []byte("null")):
			i += 4
		default:
			return 0, false
		}
		expectValue = false
	}
}

// maxDepth bounds the nesting skipValue accepts; deeper inputs take the
// slow path.
const maxDepth = 64

// skipKey checks `"key" :` at b[i] (after spaces) and returns the index
// after the colon.
func skipKey(b []byte, i int) (int, bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	end, ok := skipString(b, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return i + 1, true
}

// skipString checks the JSON string at b[i] (which is '"') and returns the
// index after its closing quote.
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return 0, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// skipNumber checks the JSON number at b[i] and returns the index after it.
func skipNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i, i > start
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return 0, false
		}
	}
	if i < len(b) && b[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return 0, false
		}
	}
	return i, true
}

// appendTextResult encodes a result whose content is only plain text
// blocks (no annotations, no _meta, no structured content), the common
// case, the way json.Marshal does, byte for byte, without its reflection
// and the re-scan of each block's MarshalJSON output; it reports false for
// any other result. FuzzAppendTextResult checks it against json.Marshal.
func appendTextResult(b []byte, r *CallToolResult) ([]byte, bool) {
	if r.StructuredContent != nil || r.Meta != nil {
		return nil, false
	}
	for _, c := range r.Content {
		t, ok := c.(*TextContent)
		if !ok || t == nil || t.Annotations != nil || t.Meta != nil {
			return nil, false
		}
	}
	b = append(b, `{"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = appendJSONString(b, c.(*TextContent).Text)
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), true
}

// appendJSONString appends s as encoding/json writes a string, HTML
// escaping included.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
