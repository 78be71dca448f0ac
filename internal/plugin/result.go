package plugin

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolResult is a tool result as a plugin wrote it. The go-sdk's decoder
// (mcp.CallToolResult's UnmarshalJSON) allocates a 32 KiB buffer for each
// use, the largest garbage a tool call made once the MCP layer had a fast
// path; so results made only of plain text blocks, in the form Hangar's
// PDK writes them ({"content":[{"type":"text","text":...}],"isError":true},
// no other members), are read directly, and any other output goes to the
// go-sdk's decoder. FuzzToolResult checks that the two read alike.
type toolResult struct{ mcp.CallToolResult }

func (r *toolResult) UnmarshalJSON(b []byte) error {
	if plainTextResult(b, &r.CallToolResult) {
		return nil
	}
	err := r.CallToolResult.UnmarshalJSON(b)
	if err == nil {
		return nil
	}
	// Content blocks without their type (see content.go).
	fixed, ferr := withContentTypes(b, "call_tool")
	switch {
	case ferr != nil:
		return ferr
	case fixed == nil:
		return err
	}
	return r.CallToolResult.UnmarshalJSON(fixed)
}

// promptResult is a prompt as a plugin wrote it: the go-sdk's
// GetPromptResult, whose message contents may lack their type (see
// content.go).
type promptResult struct{ mcp.GetPromptResult }

func (r *promptResult) UnmarshalJSON(b []byte) error {
	err := r.GetPromptResult.UnmarshalJSON(b)
	if err == nil {
		return nil
	}
	fixed, ferr := withContentTypes(b, "get_prompt")
	switch {
	case ferr != nil:
		return ferr
	case fixed == nil:
		return err
	}
	return r.GetPromptResult.UnmarshalJSON(fixed)
}

// plainTextResult reads a result of plain text blocks into res, or
// reports false, leaving res as it was.
func plainTextResult(b []byte, res *mcp.CallToolResult) bool {
	rest, ok := bytes.CutPrefix(b, []byte(`{"content":[`))
	if !ok {
		return false
	}
	content := []mcp.Content{}
	for len(rest) > 0 && rest[0] != ']' {
		if len(content) > 0 {
			if rest, ok = bytes.CutPrefix(rest, []byte(",")); !ok {
				return false
			}
		}
		if rest, ok = bytes.CutPrefix(rest, []byte(`{"type":"text","text":"`)); !ok {
			return false
		}
		end := stringEnd(rest)
		if end < 0 {
			return false
		}
		text, ok := plainText(rest[:end])
		if !ok {
			return false
		}
		content = append(content, &mcp.TextContent{Text: text})
		if rest, ok = bytes.CutPrefix(rest[end+1:], []byte("}")); !ok {
			return false
		}
	}
	var isError bool
	switch string(rest) {
	case `]}`, `],"isError":false}`:
	case `],"isError":true}`:
		isError = true
	default:
		return false
	}
	*res = mcp.CallToolResult{Content: content, IsError: isError}
	return true
}

// stringEnd returns the index of the quote that ends a JSON string whose
// contents start at s[0], or -1.
func stringEnd(s []byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// plainText decodes the contents of a JSON string: without escapes as they
// are, with escapes as encoding/json decodes them, except \u escapes,
// which are left to the go-sdk. So are control characters (invalid in a
// JSON string) and invalid UTF-8, which the go-sdk's decoder replaces with
// U+FFFD.
func plainText(s []byte) (string, bool) {
	for _, c := range s {
		if c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(s) {
		return "", false
	}
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s), true
	}
	if bytes.Contains(s, []byte(`\u`)) {
		return "", false
	}
	var text string
	if err := json.Unmarshal(append(append([]byte{'"'}, s...), '"'), &text); err != nil {
		return "", false
	}
	return text, true
}
