package plugin

import (
	"encoding/json"
	"fmt"
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
	if len(meta) == 0 {
		b = append(b, "{}"...)
	} else {
		m, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
		b = append(b, m...)
	}
	return append(b, "}}"...), nil
}

// appendJSONString appends s as a JSON string, as json.Marshal writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
