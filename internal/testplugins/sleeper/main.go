//go:build wasip1

// Command sleeper is a test plugin written with the Hangar PDK that waits
// where a guest can wait: in WASI's poll_oneoff (Go's time.Sleep), in a
// read, and on its client. Its tools (arguments in braces):
//
//	sleep {ms: integer}    time.Sleep for ms milliseconds; answers "slept <ms>ms"
//	echo  {text: string}   answers text
//	read  {path: string}   answers the file's content, or an isError result with the error
//	ask   {}               asks the client's model (sampling); answers its text
//
// With the configuration value startup_sleep_ms, its initialization (at
// its first call, as Extism runs it) sleeps that long first.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o sleeper.wasm ./internal/testplugins/sleeper
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

func init() {
	if v, ok := pdk.Config("startup_sleep_ms"); ok {
		if ms, err := strconv.Atoi(v); err == nil {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
	}
	pdk.AddTool(&pdk.Tool{
		Name:        "sleep",
		Description: "Sleep for a number of milliseconds",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`),
	}, sleep)
	pdk.AddTool(&pdk.Tool{
		Name:        "echo",
		Description: "Answer the text",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, echo)
	pdk.AddTool(&pdk.Tool{
		Name:        "read",
		Description: "Read a file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}, read)
	pdk.AddTool(&pdk.Tool{
		Name:        "ask",
		Description: "Ask the client's model",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, ask)
}

// main is required by the toolchain; Hangar never calls it.
func main() {}

func sleep(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		MS int64 `json:"ms"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	time.Sleep(time.Duration(args.MS) * time.Millisecond)
	return pdk.TextResult(fmt.Sprintf("slept %dms", args.MS)), nil
}

func echo(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Text string `json:"text"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	return pdk.TextResult(args.Text), nil
}

func read(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Path string `json:"path"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(args.Path)
	if err != nil {
		return nil, err
	}
	return pdk.TextResult(string(b)), nil
}

func ask(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := ctx.CreateMessage(&pdk.CreateMessageParams{
		Messages:  []*pdk.SamplingMessage{{Role: "user", Content: &pdk.TextContent{Text: "hello?"}}},
		MaxTokens: 10,
	})
	if err != nil {
		return nil, err
	}
	if t, ok := res.Content.(*pdk.TextContent); ok {
		return pdk.TextResult(t.Text), nil
	}
	return pdk.TextResult("(no text)"), nil
}
