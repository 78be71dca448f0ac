package plugin

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// appendCallToolInput appends the input of a tools/call to b: for a v1
// plugin the envelope
//
//	{"request":{"name":NAME,"arguments":ARGS},"context":{"id":ID,"_meta":META}}
//
// and for a servlet or legacy plugin {"method":"tools/call","params":{...}},
// the bytes json.Marshal makes of v1Request and servletRequest but for the
// arguments, which go as the client sent them, whitespace and all. It is
// the hottest encoding of a call, and json.Marshal of the envelope cost
// about 3% of a stdio call's CPU (a reflective walk, a map for _meta and a
// pass over the arguments to compact them). args must be a JSON object:
// every caller has parsed it, and checked it against the tool's schema.
// TestCallToolInputAsMarshalled holds it equal to json.Marshal.
func appendCallToolInput(b []byte, v1 bool, c *Call, name string, args json.RawMessage) ([]byte, error) {
	if !v1 {
		b = append(b, `{"method":"tools/call","params":{"name":`...)
	} else {
		b = append(b, `{"request":{"name":`...)
	}
	b = appendJSONString(b, name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if !v1 {
		return append(b, "}}"...), nil
	}
	b = append(b, `},"context":{"id":`...)
	var id string
	var meta map[string]any
	if c != nil {
		id, meta = c.ID, c.Meta
	}
	b = appendJSONString(b, id)
	b = append(b, `,"_meta":`...)
	if c != nil && c.MetaJSON != nil {
		b = append(b, c.MetaJSON...)
	} else if len(meta) == 0 {
		b = append(b, "{}"...)
	} else if out, ok := appendPlainMap(b, meta, 0); ok {
		b = out
	} else {
		m, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
		b = append(b, m...)
	}
	return append(b, "}}"...), nil
}

// maxPlainKeys bounds the members of an object appendPlainMap writes
// itself: it sorts their keys in an array on the stack.
const maxPlainKeys = 8

// appendPlainMap appends m as json.Marshal writes it, if m holds only what
// a request's _meta usually does: at most maxPlainKeys members at each
// level, of strings and keys json.Marshal writes as they are (no escape),
// integers below 2^53, booleans, null and such objects. Otherwise it
// returns b unchanged and false, and the caller marshals m. A 2026-07-28
// request gives every call a _meta ({"io.modelcontextprotocol/
// clientCapabilities":{}} at least), whose reflective encoding was 2% of
// a stdio call's CPU. TestCallToolInputAsMarshalled and
// FuzzPlainMapAsMarshalled hold it equal to json.Marshal.
func appendPlainMap(b []byte, m map[string]any, depth int) ([]byte, bool) {
	if len(m) > maxPlainKeys || depth > 4 {
		return b, false
	}
	var arr [maxPlainKeys]string
	keys := arr[:0]
	for k := range m {
		if !plainString(k) {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := len(b)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), k...), '"', ':')
		var ok bool
		if b, ok = appendPlainValue(b, m[k], depth); !ok {
			return b[:start], false
		}
	}
	return append(b, '}'), true
}

// appendPlainValue appends a value of appendPlainMap.
func appendPlainValue(b []byte, v any, depth int) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		if !plainString(v) {
			return b, false
		}
		return append(append(append(b, '"'), v...), '"'), true
	case float64:
		if v != math.Trunc(v) || math.Abs(v) >= 1<<53 || v == 0 && math.Signbit(v) {
			return b, false
		}
		return strconv.AppendInt(b, int64(v), 10), true
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true // as json.Marshal writes a nil map
		}
		return appendPlainMap(b, v, depth+1)
	}
	return b, false
}

// plainString reports whether json.Marshal writes s as it is, in quotes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendJSONString appends s as a JSON string, as json.Marshal writes it.
func appendJSONString(b []byte, s string) []byte {
	if !plainString(s) {
		q, _ := json.Marshal(s) // a string always encodes
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
