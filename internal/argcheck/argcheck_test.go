package argcheck_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hangar-mcp/hangar/internal/argcheck"
)

// A tool's input schema that uses every keyword, as a tool author writes
// it, resolved as the server resolves input schemas.
const toolSchema = `{"type":"object","properties":{
 "count":{"type":"integer","maximum":100,"minimum":1},
 "ratio":{"type":"number","exclusiveMaximum":1,"exclusiveMinimum":0,"multipleOf":0.25},
 "name":{"type":"string","minLength":2,"maxLength":5,"pattern":"^[a-z]+$"},
 "mode":{"enum":["fast","slow",3]},
 "kind":{"const":"report"},
 "tags":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":3,"uniqueItems":true},
 "pair":{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]},
 "rows":{"type":"array","items":{"type":"object","properties":{"q":{"type":"integer"}},"additionalProperties":false}},
 "obj":{"type":"object","properties":{"deep":{"type":"boolean"}},"required":["deep"],"additionalProperties":false,"maxProperties":1},
 "ref":{"$ref":"#/$defs/Limit"},
 "any":{"anyOf":[{"type":"string"},{"type":"integer"}]},
 "one":{"oneOf":[{"type":"number"},{"type":"integer"}]},
 "choice":{"oneOf":[{"const":"a"},{"const":"b"}]},
 "shape":{"anyOf":[{"type":"object","required":["x"]},{"type":"object","required":["y"]}]},
 "map":{"type":"object","additionalProperties":{"type":"integer","minimum":0}},
 "env":{"type":"object","patternProperties":{"^[A-Z]+$":{"type":"string"}}},
 "nul":{"type":["string","null"]},
 "odd":{"not":{"const":0}},
 "a b":{"type":"integer"}
},"required":["count"],"additionalProperties":false,
"$defs":{"Limit":{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}}}`

func resolve(t testing.TB, schema string) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// check validates args against rs as the server does and compares the
// message for the error with want.
func check(t *testing.T, rs *jsonschema.Resolved, args, want string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Fatal(err)
	}
	err := rs.Validate(v)
	if err == nil {
		t.Fatalf("%s: valid", args)
	}
	if got := argcheck.Message(rs, v, err); got != want {
		t.Errorf("%s:\n  validator: %v\n  got  %s\n  want %s", args, err, got, want)
	}
}

func TestMessage(t *testing.T) {
	rs := resolve(t, toolSchema)
	for _, tc := range []struct{ args, want string }{
		// The two.
		{`{"count":500}`, `count: 500 is above the maximum 100`},
		{`{"count":"2"}`, `count: expected an integer, got the string "2"`},

		// Numbers.
		{`{"count":0}`, `count: 0 is below the minimum 1`},
		{`{"count":2.5}`, `count: expected an integer, got the number 2.5`},
		{`{"count":1e30}`, `count: 1e+30 is above the maximum 100`},
		{`{"count":null}`, `count: expected an integer, got null`},
		{`{"count":true}`, `count: expected an integer, got the boolean true`},
		{`{"count":[1]}`, `count: expected an integer, got an array`},
		{`{"count":1,"ratio":1}`, `ratio: 1 is not less than 1; it must be less than 1`},
		{`{"count":1,"ratio":0}`, `ratio: 0 is not more than 0; it must be more than 0`},
		{`{"count":1,"ratio":0.3}`, `ratio: 0.3 is not a multiple of 0.25`},
		{`{"count":1,"ratio":"0.5"}`, `ratio: expected a number, got the string "0.5"`},

		// Strings.
		{`{"count":1,"name":"a"}`, `name: "a" is 1 character long, shorter than the minimum 2 characters`},
		{`{"count":1,"name":"abcdefg"}`, `name: "abcdefg" is 7 characters long, longer than the maximum 5 characters`},
		{`{"count":1,"name":"AB"}`, `name: "AB" does not match the pattern ^[a-z]+$`},
		{`{"count":1,"name":{"x":1}}`, `name: expected a string, got an object`},
		{`{"count":1,"mode":"medium"}`, `mode: "medium" is not one of the allowed values: "fast", "slow", 3`},
		{`{"count":1,"kind":"memo"}`, `kind: expected "report", got "memo"`},

		// The arguments object.
		{`{}`, `missing required argument "count"`},
		{`{"count":1,"extra":1,"more":2}`, `unexpected arguments "extra", "more"; the arguments are "a b", "any", "choice", "count", "env", "kind", "map", "mode", "name", "nul", "obj", "odd", "one", "pair", "ratio", "ref", "rows", "shape", "tags"`},
		{`{"count":1,"a b":"x"}`, `["a b"]: expected an integer, got the string "x"`},

		// Arrays.
		{`{"count":1,"tags":[]}`, `tags: 0 items, fewer than the minimum 1`},
		{`{"count":1,"tags":["a","b","c","d"]}`, `tags: 4 items, more than the maximum 3`},
		{`{"count":1,"tags":["a","abcd"]}`, `tags[1]: "abcd" is 4 characters long, longer than the maximum 3 characters`},
		{`{"count":1,"tags":["a",1]}`, `tags[1]: expected a string, got the number 1`},
		{`{"count":1,"tags":["a","b","a"]}`, `tags: items 0 and 2 are equal; the items must be unique`},
		{`{"count":1,"pair":["x"]}`, `pair[0]: expected an integer, got the string "x"`},
		{`{"count":1,"pair":[1,2]}`, `pair[1]: expected a string, got the number 2`},
		{`{"count":1,"rows":[{"q":1},{"q":"x"}]}`, `rows[1].q: expected an integer, got the string "x"`},
		{`{"count":1,"rows":[{"q":1},{"q":2,"r":3}]}`, `rows[1]: unexpected property "r"; the properties are "q"`},

		// Objects.
		{`{"count":1,"obj":{}}`, `obj: missing required property "deep"`},
		{`{"count":1,"obj":{"deep":1}}`, `obj.deep: expected a boolean (true or false), got the number 1`},
		{`{"count":1,"obj":{"deep":true,"x":1}}`, `obj: unexpected property "x"; the properties are "deep"`},
		{`{"count":1,"ref":{"n":9}}`, `ref.n: 9 is above the maximum 3`},
		{`{"count":1,"map":{"a":1,"b":"x"}}`, `map.b: expected an integer, got the string "x"`},
		{`{"count":1,"map":{"a":-1}}`, `map.a: -1 is below the minimum 0`},
		{`{"count":1,"env":{"HOME":1}}`, `env.HOME: expected a string, got the number 1`},

		// Alternatives.
		{`{"count":1,"any":true}`, `any: expected a string or an integer, got the boolean true`},
		{`{"count":1,"one":1}`, `one: matches more than one of the allowed forms, where exactly one must match`},
		{`{"count":1,"one":"x"}`, `one: expected a number or an integer, got the string "x"`},
		{`{"count":1,"choice":"c"}`, `choice: expected "a" or "b", got the string "c"`},
		{`{"count":1,"shape":{}}`, `shape: an object matches none of the allowed forms`},
		{`{"count":1,"nul":3}`, `nul: expected a string or null, got the number 3`},
		{`{"count":1,"odd":0}`, `odd: 0 is not allowed`},
	} {
		check(t, rs, tc.args, tc.want)
	}
}

// TestMessageNestedSchemas: schemas that reach the value through
// definitions, conditions and combinations, in both drafts the validator
// reads.
func TestMessageNestedSchemas(t *testing.T) {
	check(t, resolve(t, `{"$ref":"#/$defs/Args","$defs":{"Args":{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"]}}}`),
		`{"n":9}`, `n: 9 is above the maximum 5`)
	check(t, resolve(t, `{"$ref":"#/$defs/Args","$defs":{"Args":{"type":"object","required":["n"]}}}`),
		`{}`, `missing required argument "n"`)
	check(t, resolve(t, `{"type":"object","properties":{"kind":{"type":"string"}},"if":{"properties":{"kind":{"const":"file"}}},"then":{"required":["path"]}}`),
		`{"kind":"file"}`, `missing required argument "path"`)
	check(t, resolve(t, `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer","minimum":1}}}]}`),
		`{"a":"x","b":0}`, `b: 0 is below the minimum 1`)
	check(t, resolve(t, `{"type":"object","properties":{"list":{"type":"array","items":{"$ref":"#/$defs/Item"}}},"$defs":{"Item":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}}}`),
		`{"list":[{"id":1},{"id":"2"}]}`, `list[1].id: expected an integer, got the string "2"`)
	check(t, resolve(t, `{"type":"object","properties":{"list":{"type":"array","items":{"$ref":"#/$defs/Item"}}},"$defs":{"Item":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}}}`),
		`{"list":[{"id":1},{}]}`, `list[1]: missing required property "id"`)
	check(t, resolve(t, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"$ref":"#/definitions/P"},"t":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}},"definitions":{"P":{"type":"integer","minimum":10}}}`),
		`{"p":3}`, `p: 3 is below the minimum 10`)
	check(t, resolve(t, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"t":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}`),
		`{"t":["a","b"]}`, `t[1]: expected an integer, got the string "b"`)
	check(t, resolve(t, `{"type":"object","properties":{"m":{"type":"object","minProperties":2}}}`),
		`{"m":{"a":1}}`, `m: 1 property, fewer than the minimum 2`)
	check(t, resolve(t, `{"type":"object","properties":{"s":{"type":"string","pattern":"^x"}},"required":["s","t","u"]}`),
		`{"s":"x"}`, `missing required arguments "t", "u"`)
}

// TestMessageWithoutSchema: with no schema, the message comes from the
// validator's text, its locations left out.
func TestMessageWithoutSchema(t *testing.T) {
	rs := resolve(t, toolSchema)
	for _, tc := range []struct{ args, want string }{
		{`{"count":500}`, `count: 500 is above the maximum 100`},
		{`{"count":"2"}`, `count: type: 2 has type "string", want "integer"`},
		{`{}`, `missing required argument "count"`},
		{`{"count":1,"extra":1}`, `unexpected argument "extra"`},
		{`{"count":1,"obj":{"deep":1}}`, `obj.deep: type: 1 has type "integer", want "boolean"`},
	} {
		var v any
		json.Unmarshal([]byte(tc.args), &v)
		if got := argcheck.Message(nil, v, rs.Validate(v)); got != tc.want {
			t.Errorf("%s: got %s\nwant %s", tc.args, got, tc.want)
		}
	}
	if got := argcheck.Message(rs, nil, nil); got != "" {
		t.Errorf("no error: %q", got)
	}
}

// FuzzMessage: whatever the arguments, a message is never empty and never
// carries the validator's locations.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{`{"count":500}`, `{"count":1,"rows":[{"q":[]}]}`, `{"count":1,"map":{"":null}}`, `{"count":1,"pair":[]}`, `{"ref":{"n":"x"},"tags":[1,1]}`} {
		f.Add(s)
	}
	rs := resolve(f, toolSchema)
	f.Fuzz(func(t *testing.T, args string) {
		var v any
		if json.Unmarshal([]byte(args), &v) != nil {
			return
		}
		err := rs.Validate(v)
		if err == nil {
			return
		}
		msg := argcheck.Message(rs, v, err)
		if msg == "" || strings.Contains(msg, "validating ") {
			t.Errorf("%s: %q (validator: %v)", args, msg, err)
		}
	})
}
