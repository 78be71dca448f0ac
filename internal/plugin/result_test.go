package plugin

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzToolResult checks the direct reading of plain text results against
// the go-sdk's decoder: whenever plainTextResult reads an output, the
// go-sdk reads the same result from it.
func FuzzToolResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a \"quoted\"\n\ttab \\ \/"},{"type":"text","text":""}],"isError":true}`,
		`{"content":[],"isError":false}`,
		`{"content":[{"type":"text","text":"\u00e9"}]}`,
		`{"content":[{"type":"text","text":"x","annotations":{}}]}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"text","text":"x"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got toolResult
		if json.Unmarshal(b, &got) != nil {
			return
		}
		if !plainTextResult(b, new(mcp.CallToolResult)) {
			return
		}
		var want mcp.CallToolResult
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: read directly, the go-sdk refuses it: %v", b, err)
		}
		if len(want.Content) == 0 && len(got.Content) == 0 {
			want.Content, got.Content = nil, nil
		}
		if !reflect.DeepEqual(got.CallToolResult, want) {
			t.Fatalf("%q: read directly as %+v, the go-sdk reads %+v", b, got.CallToolResult, want)
		}
	})
}

// TestPlainTextResult pins which outputs are read directly.
func TestPlainTextResult(t *testing.T) {
	for in, want := range map[string]bool{
		`{"content":[{"type":"text","text":"hi"}]}`:                                             true,
		`{"content":[{"type":"text","text":"a\nb"},{"type":"text","text":"c"}],"isError":true}`: true,
		`{"content":[]}`: true,
		`{"content":[{"type":"text","text":"\u00e9"}]}`:                         false, // \u escapes: the go-sdk's
		`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`: false,
		`{"isError":true,"content":[{"type":"text","text":"x"}]}`:               false,
		`{"content":[{"type":"text","text":"x"}],"_meta":{}}`:                   false,
		`{ "content":[{"type":"text","text":"x"}]}`:                             false,
	} {
		if got := plainTextResult([]byte(in), new(mcp.CallToolResult)); got != want {
			t.Errorf("%s: read directly %v, want %v", in, got, want)
		}
	}
}
