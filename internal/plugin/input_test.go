package plugin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestCallToolInputAsMarshalled holds appendCallToolInput equal to
// json.Marshal of the envelopes it replaces: byte for byte where the
// arguments are compact and free of the characters json.Marshal escapes
// for HTML, and as JSON values always.
func TestCallToolInputAsMarshalled(t *testing.T) {
	type params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	calls := []*Call{
		nil,
		{},
		{ID: "42"},
		{ID: `"quoted" \\ and <html> & \u2028`, Meta: map[string]any{"progressToken": "t-1"}},
		{ID: "\x00\x1f\x7f é \xff", Meta: map[string]any{"progressToken": 7.0, "x": []any{"a", nil}}},
	}
	names := []string{"echo", "p0_echo", `we"ird\name`, "ünïcode", "<b>&"}
	args := []struct {
		raw     string
		compact bool
	}{
		{`{}`, true},
		{`{"text":"The quick brown fox jumps over the lazy dog."}`, true},
		{`{"n":1.5e3,"a":[1,2,{"b":null}],"s":"\"\\\u00e9"}`, true},
		{" {\n  \"text\" : \"spaced\"\n} ", false},
		{`{"html":"<script>&</script>"}`, false},
	}
	for _, v1 := range []bool{true, false} {
		for _, c := range calls {
			for _, name := range names {
				for _, a := range args {
					got, err := appendCallToolInput(nil, v1, c, name, json.RawMessage(a.raw))
					if err != nil {
						t.Fatal(err)
					}
					p := params{name, json.RawMessage(a.raw)}
					var in any = servletRequest{Method: "tools/call", Params: p}
					if v1 {
						in = v1Request{Request: p, Context: c.v1()}
					}
					want, err := json.Marshal(in)
					if err != nil {
						t.Fatal(err)
					}
					if a.compact && !bytes.Equal(got, want) {
						t.Errorf("v1=%v call %+v name %q args %s:\n got %s\nwant %s", v1, c, name, a.raw, got, want)
					}
					var g, w any
					if err := json.Unmarshal(got, &g); err != nil {
						t.Fatalf("v1=%v name %q args %q: not JSON: %v: %s", v1, name, a.raw, err, got)
					}
					if err := json.Unmarshal(want, &w); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(g, w) {
						t.Errorf("v1=%v call %+v name %q args %s: reads as\n %v\nwant %v", v1, c, name, a.raw, g, w)
					}
				}
			}
		}
	}
}
