package stateless

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPlainAnswerAsMarshalled: appendPlainAnswer writes what
// marshalResult writes, or declines.
func TestPlainAnswerAsMarshalled(t *testing.T) {
	e := &calls{info: &mcp.Implementation{Name: "hangar", Version: "1.2.3"}}
	text := func(s ...string) []mcp.Content {
		var cs []mcp.Content
		for _, x := range s {
			cs = append(cs, &mcp.TextContent{Text: x})
		}
		return cs
	}
	id7, _ := jsonrpc.MakeID(float64(7))
	idS, _ := jsonrpc.MakeID("call-1")
	idEsc, _ := jsonrpc.MakeID(`a"b`)
	for _, tc := range []struct {
		name  string
		id    jsonrpc.ID
		res   func() *mcp.CallToolResult
		plain bool // appendPlainAnswer takes it
	}{
		{"one block", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text("The quick brown fox")} }, true},
		{"string id", idS, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text("hi")} }, true},
		{"two blocks, an error", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text("a", ""), IsError: true} }, true},
		{"no content", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{} }, true},
		{"empty content", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: []mcp.Content{}} }, true},
		{"id to escape", idEsc, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text("hi")} }, false},
		{"HTML", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text("<b>&</b>")} }, false},
		{"quote", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text(`say "hi"`)} }, false},
		{"newline", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text("a\nb")} }, false},
		{"not ASCII", id7, func() *mcp.CallToolResult { return &mcp.CallToolResult{Content: text("café")} }, false},
		{"own _meta", id7, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: text("hi")}
		}, false},
		{"structured", id7, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: text("hi"), StructuredContent: map[string]any{"a": 1}}
		}, false},
		{"image", id7, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}
		}, false},
		{"annotated", id7, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi", Annotations: &mcp.Annotations{Priority: 1}}}}
		}, false},
	} {
		want, err := e.marshalResult(tc.id, tc.res())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, ok := e.appendPlainAnswer([]byte("x"), tc.id, tc.res())
		switch {
		case ok != tc.plain:
			t.Errorf("%s: appendPlainAnswer took it: %v, want %v", tc.name, ok, tc.plain)
		case !ok && string(got) != "x":
			t.Errorf("%s: declined, but left %q", tc.name, got)
		case ok && string(got[1:]) != string(want):
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got[1:], want)
		}
		if full, err := e.encodeResult(tc.id, tc.res()); err != nil || string(full) != string(want) {
			t.Errorf("%s: encodeResult %s, %v; want %s", tc.name, full, err, want)
		}
	}
}
