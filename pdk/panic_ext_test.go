package pdk_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

// nextLine returns "file:line" of the line after its caller's.
func nextLine() string {
	_, file, line, _ := runtime.Caller(1)
	return file + ":" + strconv.Itoa(line+1)
}

// TestPanicNamesTheLine: a handler that panics fails its request with an
// error naming what the request was for and the handler's own line (not
// the PDK's, the runtime's or the standard library's), followed by the
// goroutine's stack.
func TestPanicNamesTheLine(t *testing.T) {
	pdk.WithTestRegistry(t)
	type empty struct{}
	var nilMap map[string]int
	var at = map[string]string{}
	typed.AddTool(&pdk.Tool{Name: "nilmap"}, func(*pdk.Context, empty) (empty, error) {
		at["tool"] = nextLine()
		nilMap["x"] = 1
		return empty{}, nil
	})
	typed.AddTool(&pdk.Tool{Name: "repeat"}, func(*pdk.Context, empty) (empty, error) {
		// A panic in the standard library is placed at the plugin's
		// line that called it.
		at["stdlib"] = nextLine()
		_ = strings.Repeat("x", len(nilMap)-1)
		return empty{}, nil
	})
	pdk.AddResource(&pdk.Resource{URI: "test://r", Name: "r"}, func(*pdk.Context, *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
		at["resource"] = nextLine()
		nilMap["x"] = 1
		return nil, nil
	})
	pdk.AddPrompt(&pdk.Prompt{Name: "p"}, func(*pdk.Context, *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
		at["prompt"] = nextLine()
		panic("no prompt today")
	})
	pdk.SetCompletionHandler(func(*pdk.Context, *pdk.CompleteRequest) (*pdk.CompleteResult, error) {
		var p *pdk.CompleteResult
		at["completion"] = nextLine()
		return &pdk.CompleteResult{Completion: p.Completion}, nil
	})

	for _, tc := range []struct {
		key, export, input, want string
	}{
		{"tool", "call_tool", `{"request":{"name":"nilmap","arguments":{}},"context":{"id":"1"}}`,
			"nilmap: panic: assignment to entry in nil map at "},
		{"stdlib", "call_tool", `{"request":{"name":"repeat","arguments":{}},"context":{"id":"1"}}`,
			"repeat: panic: strings: negative Repeat count at "},
		{"resource", "read_resource", `{"request":{"uri":"test://r"},"context":{"id":"1"}}`,
			"test://r: panic: assignment to entry in nil map at "},
		{"prompt", "get_prompt", `{"request":{"name":"p"},"context":{"id":"1"}}`,
			"p: panic: no prompt today at "},
		{"completion", "complete", `{"request":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}},"context":{"id":"1"}}`,
			"completion of p: panic: runtime error: invalid memory address or nil pointer dereference at "},
	} {
		_, err := pdk.InvokeExport(tc.export, tc.input)
		if err == nil {
			t.Errorf("%s: no error", tc.key)
			continue
		}
		first, stack, _ := strings.Cut(err.Error(), "\n\n")
		if want := tc.want + at[tc.key]; first != want {
			t.Errorf("%s: error\n  %s\nwant\n  %s", tc.key, first, want)
		}
		if !strings.HasPrefix(stack, "goroutine ") || !strings.Contains(stack, "pdk/panic_ext_test.go:") ||
			strings.Contains(stack, "goroutineStack") {
			t.Errorf("%s: no stack with the handler's frame after the message:\n%s", tc.key, stack)
		}
	}
}
