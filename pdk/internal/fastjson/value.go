package fastjson

import (
	"bytes"
	"strconv"
)

// Object decodes the JSON object b (white space around it allowed) into a
// map, as json.Unmarshal decodes it into a map[string]any: nested objects
// as map[string]any, arrays as []any, numbers as float64, strings with
// their escapes resolved as Unquote does. It reports false, and the
// caller decodes with encoding/json, for anything else: invalid JSON,
// another type of value, a number float64 cannot hold, nesting deeper
// than MaxDepth.
//
// A request's _meta is decoded on every call: encoding/json, with a
// reflective walk and a scanner that makes a function call per byte, took
// a Go guest tens of microseconds for a few members.
func Object(b []byte) (map[string]any, bool) {
	i := Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	v, end, ok := value(b, i, 0)
	if !ok || !Whole(b, end) {
		return nil, false
	}
	return v.(map[string]any), true
}

// value decodes the JSON value at b[i] (after white space), at the given
// depth of nesting, and returns the index after it.
func value(b []byte, i, depth int) (any, int, bool) {
	switch c := b[i]; {
	case c == '{':
		if depth == MaxDepth {
			return nil, 0, false
		}
		m := map[string]any{}
		end, ok := Members(b, i, func(key []byte, f Flags, i int) (int, bool) {
			v, end, ok := value(b, i, depth+1)
			if ok {
				m[Unquote(key, f)] = v
			}
			return end, ok
		})
		return m, end, ok
	case c == '[':
		if depth == MaxDepth {
			return nil, 0, false
		}
		a := []any{}
		i = Space(b, i+1)
		if i < len(b) && b[i] == ']' {
			return a, i + 1, true
		}
		for {
			if i >= len(b) {
				return nil, 0, false
			}
			v, end, ok := value(b, i, depth+1)
			if !ok {
				return nil, 0, false
			}
			a = append(a, v)
			if i = Space(b, end); i >= len(b) {
				return nil, 0, false
			}
			switch b[i] {
			case ',':
				i = Space(b, i+1)
			case ']':
				return a, i + 1, true
			default:
				return nil, 0, false
			}
		}
	case c == '"':
		end, f, ok := String(b, i)
		if !ok {
			return nil, 0, false
		}
		return Unquote(b[i+1:end-1], f), end, true
	case c == '-' || c >= '0' && c <= '9':
		end, ok := Number(b, i)
		if !ok {
			return nil, 0, false
		}
		n, err := strconv.ParseFloat(string(b[i:end]), 64)
		return n, end, err == nil
	case bytes.HasPrefix(b[i:], []byte("true")):
		return true, i + 4, true
	case bytes.HasPrefix(b[i:], []byte("false")):
		return false, i + 5, true
	case bytes.HasPrefix(b[i:], []byte("null")):
		return nil, i + 4, true
	}
	return nil, 0, false
}
