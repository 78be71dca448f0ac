package main

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

func main() {
	schema := `{"type":"object","properties":{
 "count":{"type":"integer","maximum":100,"minimum":1},
 "ratio":{"type":"number","exclusiveMaximum":1,"multipleOf":0.5},
 "name":{"type":"string","minLength":2,"maxLength":5,"pattern":"^[a-z]+$"},
 "mode":{"enum":["a","b"]},
 "k":{"const":"x"},
 "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2,"uniqueItems":true},
 "pair":{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]},
 "obj":{"type":"object","properties":{"deep":{"type":"boolean"}},"required":["deep"],"additionalProperties":false},
 "ref":{"$ref":"#/$defs/R"},
 "any":{"anyOf":[{"type":"string"},{"type":"integer"}]},
 "one":{"oneOf":[{"type":"string"},{"type":"integer"}]},
 "map":{"type":"object","additionalProperties":{"type":"integer"}},
 "nul":{"type":["string","null"]}
},"required":["count"],"additionalProperties":false,
"$defs":{"R":{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}}}`
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		panic(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		panic(err)
	}
	for _, a := range []string{
		`{"count":500}`, `{"count":"2"}`, `{"count":0}`, `{"count":2.5}`, `{}`, `{"count":1,"extra":1,"more":2}`,
		`{"count":1,"ratio":1}`, `{"count":1,"ratio":0.3}`, `{"count":1,"name":"a"}`, `{"count":1,"name":"abcdefg"}`, `{"count":1,"name":"AB"}`,
		`{"count":1,"mode":"c"}`, `{"count":1,"k":"y"}`, `{"count":1,"tags":["a","b","c"]}`, `{"count":1,"tags":["a","abcd"]}`, `{"count":1,"tags":["a","a"]}`,
		`{"count":1,"tags":[1]}`, `{"count":1,"pair":["x"]}`, `{"count":1,"obj":{}}`, `{"count":1,"obj":{"deep":1}}`, `{"count":1,"obj":{"deep":true,"x":1}}`,
		`{"count":1,"ref":{"n":9}}`, `{"count":1,"any":true}`, `{"count":1,"one":true}`, `{"count":1,"map":{"a":"x"}}`, `{"count":1,"nul":3}`, `{"count":null}`, `{"count":1e30}`, `{"count":1,"name":"\u00e9\"x"}`,
	} {
		var v any
		json.Unmarshal([]byte(a), &v)
		fmt.Printf("%s\n  %v\n", a, rs.Validate(v))
	}
}
