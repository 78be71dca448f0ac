package core

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hangar-mcp/hangar/internal/argcheck"
	"github.com/hangar-mcp/hangar/internal/server/rawjson"
)

// simpleSchema is an input schema of the plainest kind, which most tools
// have: an object whose properties are strings, numbers, integers or
// booleans, some of them required, and nothing else. Arguments that
// simpleSchema.valid finds valid by one scan of their bytes are valid; all
// others go to the full validator (validateArguments), which also words
// the errors. Validating a tool's arguments with the full validator, for
// a tool as simple as an echo, took about a tenth of a call's CPU time.
// FuzzSimpleSchema checks that valid never disagrees with it.
type simpleSchema struct {
	types    map[string]string // property -> "string", "number", "integer" or "boolean"
	required []string
}

// simplify returns the simple form of a tool's input schema, or nil if it
// has none.
func simplify(schema any) *simpleSchema {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var s struct {
		Type       string                       `json:"type"`
		Properties map[string]map[string]string `json:"properties"`
		Required   []string                     `json:"required"`
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil || json.Unmarshal(b, &s) != nil || s.Type != "object" {
		return nil
	}
	for k := range keys {
		switch k {
		case "type", "properties", "required", "description", "title":
		default:
			return nil // anything else may constrain the arguments
		}
	}
	out := &simpleSchema{types: map[string]string{}, required: s.Required}
	for name, prop := range s.Properties {
		for k, v := range prop {
			switch {
			case k == "type" && (v == "string" || v == "number" || v == "integer" || v == "boolean"):
				out.types[name] = v
			case k == "description" || k == "title":
			default:
				return nil
			}
		}
		if out.types[name] == "" {
			return nil
		}
	}
	return out
}

// valid reports whether raw, a tool's arguments, surely satisfies the
// schema (false when it does not, or when the scan is not sure).
func (s *simpleSchema) valid(raw json.RawMessage) bool {
	if s == nil {
		return false
	}
	if len(raw) == 0 || string(raw) == "null" {
		return len(s.required) == 0
	}
	if raw[0] != '{' || !rawjson.Valid(raw) || !numbersFit(raw) {
		return false
	}
	var seen rawjson.Keys
	ok := rawjson.Object(raw, func(key, v []byte) bool {
		if !seen.Add(key) {
			return false
		}
		typ, ok := s.types[string(key)]
		if !ok {
			return true // other members are allowed
		}
		switch typ {
		case "string":
			return v[0] == '"'
		case "boolean":
			return v[0] == 't' || v[0] == 'f'
		case "integer":
			if bytes.ContainsAny(v, ".eE") {
				return false // integral perhaps, but the validator decides
			}
			fallthrough
		default: // number
			if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
				return false
			}
			_, err := strconv.ParseFloat(string(v), 64)
			return err == nil
		}
	})
	if !ok {
		return false
	}
	for _, r := range s.required {
		if !seen.Has([]byte(r)) {
			return false
		}
	}
	return true
}

// numbersFit reports whether every number in the valid JSON b fits a
// float64, as decoding arguments requires.
func numbersFit(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			i = rawjson.SkipString(b, i) - 1
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(b) && strings.IndexByte("+-.eE0123456789", b[j]) >= 0 {
				j++
			}
			if _, err := strconv.ParseFloat(string(b[i:j]), 64); err != nil {
				return false
			}
			i = j - 1
		}
	}
	return true
}

// fullChecks counts the calls of validateArguments, so that tests can tell
// whether a call was checked by the one-pass scan.
var fullChecks atomic.Uint64

// validateArguments checks tool arguments against the tool's input schema
// and returns what is wrong, or "".
func validateArguments(schema *jsonschema.Resolved, raw json.RawMessage) string {
	fullChecks.Add(1)
	var args any = map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return "arguments are not valid JSON: " + err.Error()
		}
	}
	if _, ok := args.(map[string]any); !ok {
		return "arguments must be a JSON object"
	}
	if err := schema.Validate(args); err != nil {
		return argcheck.Message(schema, args, err)
	}
	return ""
}
