package cli

import (
	"encoding/json"
	"testing"
)

func TestInlineStringArrays(t *testing.T) {
	v := map[string]any{"a": []string{`x"y`, `back\slash`, "c,d"}, "b": []any{1, "2"}, "e": []string{}, "env": map[string]string{"K": "[v]"}}
	in, _ := json.MarshalIndent(v, "", "  ")
	got := string(inlineStringArrays(in))
	want := `{
  "a": ["x\"y", "back\\slash", "c,d"],
  "b": [
    1,
    "2"
  ],
  "e": [],
  "env": {
    "K": "[v]"
  }
}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var back any
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Error(err)
	}
}
