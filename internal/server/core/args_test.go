package core

import (
	"encoding/json"
	"testing"
)

var simpleSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
	`{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number","description":"d"},"b":{"type":"boolean","title":"B"}},"required":["n"]}`,
	`{"type":"object"}`,
	`{"type":"object","description":"none","required":["missing"]}`,
}

// FuzzSimpleSchema checks the scan of simple schemas against the full
// validator: arguments it finds valid, the validator finds valid.
func FuzzSimpleSchema(f *testing.F) {
	for _, args := range []string{
		`{"text":"hi"}`, `{"text":5}`, `{}`, ``, `null`, `[]`, `{"n":1,"x":-2.5e3,"b":true,"other":[1]}`,
		`{"n":1.0}`, `{"n":1e2}`, `{"n":12345678901234567890}`, `{"n":1` + string(make([]byte, 0)) + `}`,
		`{"text":"a","text":"b"}`, `{"te\u0078t":"hi"}`, `{"x":1e400}`, `{"n":-0,"b":false}`, ` {"text":"x"}`, `{"text":"x"} `,
	} {
		for i := range simpleSchemas {
			f.Add(uint8(i), []byte(args))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		src := json.RawMessage(simpleSchemas[int(which)%len(simpleSchemas)])
		simple := simplify(src)
		if simple == nil {
			t.Fatalf("%s is not simple", src)
		}
		if !simple.valid(args) {
			return
		}
		full, err := compileSchema(src)
		if err != nil {
			t.Fatal(err)
		}
		if msg := validateArguments(full, args); msg != "" {
			t.Fatalf("schema %s, arguments %q: the scan takes them, the validator says %s", src, args, msg)
		}
	})
}

// TestSimplify pins which schemas are simple.
func TestSimplify(t *testing.T) {
	for _, src := range simpleSchemas {
		if simplify(json.RawMessage(src)) == nil {
			t.Errorf("%s: not simple", src)
		}
	}
	for _, src := range []string{
		`{"type":"object","properties":{"rounds":{"type":"integer","minimum":0}},"required":["rounds"]}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
		`{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"a":{"type":"object"}}}`,
		`{"type":"object","properties":{"a":{}}}`,
		`{"type":"array"}`,
		`true`,
	} {
		if simplify(json.RawMessage(src)) != nil {
			t.Errorf("%s: simple", src)
		}
	}
}
