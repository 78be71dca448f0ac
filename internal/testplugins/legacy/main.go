//go:build wasip1

// Command legacy is a test plugin that speaks Hangar's legacy interface: it
// exports only describe and call (see docs/abi.md).
//
// describe returns {"tools": [...]} with three tools:
//
//   - reverse {text: string, required}: the text reversed rune by rune.
//   - add {a: number, b: number, both required}: the sum, formatted with
//     strconv.FormatFloat(sum, 'g', -1, 64), so 2+3 gives "5".
//   - fail {}: the call export sets the Extism error "fail: requested failure"
//     and returns 1, exercising the host's handling of plugin errors.
//
// Bad arguments and unknown tools give a CallToolResult with isError set and
// a text content describing the problem. Input that is not JSON sets the
// Extism error and returns 1.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o legacy.wasm ./internal/testplugins/legacy
package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/extism/go-pdk"
)

func main() {}

type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

type listToolsResult struct {
	Tools []tool `json:"tools"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callToolResult struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

type callRequest struct {
	Method string `json:"method,omitempty"`
	Params struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	} `json:"params"`
}

var tools = []tool{
	{
		Name:        "reverse",
		Description: "Reverses a string",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"text": map[string]any{"type": "string", "description": "the text to reverse"},
			},
			"required": []string{"text"},
		},
	},
	{
		Name:        "add",
		Description: "Adds two numbers",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"a": map[string]any{"type": "number"},
				"b": map[string]any{"type": "number"},
			},
			"required": []string{"a", "b"},
		},
	},
	{
		Name:        "fail",
		Description: "Always fails with an Extism error",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	},
}

//go:wasmexport describe
func describe() int32 {
	if err := pdk.OutputJSON(listToolsResult{Tools: tools}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

//go:wasmexport call
func call() int32 {
	var req callRequest
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetErrorString("legacy: bad call input: " + err.Error())
		return 1
	}
	var res callToolResult
	switch req.Params.Name {
	case "reverse":
		res = reverse(req.Params.Arguments)
	case "add":
		res = add(req.Params.Arguments)
	case "fail":
		pdk.SetErrorString("fail: requested failure")
		return 1
	default:
		res = toolError(fmt.Sprintf("unknown tool: %q", req.Params.Name))
	}
	if err := pdk.OutputJSON(res); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func reverse(args map[string]json.RawMessage) callToolResult {
	var s string
	if !arg(args, "text", &s) {
		return toolError("reverse: argument \"text\" must be a string")
	}
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return text(string(r))
}

func add(args map[string]json.RawMessage) callToolResult {
	var sum float64
	for _, k := range []string{"a", "b"} {
		var f float64
		if !arg(args, k, &f) {
			return toolError(fmt.Sprintf("add: argument %q must be a number", k))
		}
		sum += f
	}
	return text(strconv.FormatFloat(sum, 'g', -1, 64))
}

// arg decodes args[k] into v. A missing or null argument, or one of the
// wrong type, gives false.
func arg(args map[string]json.RawMessage, k string, v any) bool {
	raw, ok := args[k]
	return ok && string(raw) != "null" && json.Unmarshal(raw, v) == nil
}

func text(s string) callToolResult {
	return callToolResult{Content: []content{{Type: "text", Text: s}}}
}

func toolError(s string) callToolResult {
	return callToolResult{Content: []content{{Type: "text", Text: s}}, IsError: true}
}
