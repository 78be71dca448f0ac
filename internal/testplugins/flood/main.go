//go:build wasip1

// Command flood is a test plugin written with the Hangar PDK, for the
// serving limits: it floods its client with notifications, or runs for a
// while. Its tools:
//
//	flood     {kind: "log" | "progress", n: integer, size: integer}: sends n log
//	          messages (level info) or n progress notifications, each with
//	          a text of size bytes; answers "sent <n>"
//	sleep_ms  {ms: integer}: reports progress 0 (if the request has a progress
//	          token), busy-waits ms milliseconds; answers "slept <ms>ms"
//	echo      {text: string}: answers text
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o flood.wasm ./internal/testplugins/flood
package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

func init() {
	pdk.AddTool(&pdk.Tool{
		Name:        "flood",
		Description: "Send many notifications",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"kind":{"enum":["log","progress"]},"n":{"type":"integer","minimum":0},"size":{"type":"integer","minimum":0}},"required":["kind","n"]}`),
	}, flood)
	pdk.AddTool(&pdk.Tool{
		Name:        "sleep_ms",
		Description: "Busy-wait for a number of milliseconds",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`),
	}, sleepMS)
	pdk.AddTool(&pdk.Tool{
		Name:        "echo",
		Description: "Answer the text",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, echo)
}

// main is required by the toolchain; Hangar never calls it.
func main() {}

func flood(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Kind string `json:"kind"`
		N    int    `json:"n"`
		Size int    `json:"size"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	text := strings.Repeat("x", args.Size)
	for i := range args.N {
		var err error
		if args.Kind == "log" {
			err = ctx.Log(&pdk.LoggingMessageParams{Level: pdk.LevelInfo, Logger: "flood", Data: text})
		} else {
			err = ctx.Progress(&pdk.ProgressParams{Progress: float64(i + 1), Total: float64(args.N), Message: text})
		}
		if err != nil {
			return nil, err
		}
	}
	return pdk.TextResult(fmt.Sprintf("sent %d", args.N)), nil
}

func sleepMS(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		MS int64 `json:"ms"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if err := ctx.Progress(&pdk.ProgressParams{Progress: 0, Message: "started"}); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Duration(args.MS) * time.Millisecond)
	for time.Now().Before(deadline) {
	}
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
