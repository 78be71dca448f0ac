//go:build wasip1

// Command hog is a test plugin that runs out of memory: its tool "hog"
// allocates until the Go runtime's allocation fails at the plugin's memory
// limit (limits.memory), which ends in Go's "fatal error: out of memory"
// and a dump of every goroutine on stderr. Its tool "small" answers "ok",
// so that the plugin loads.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hog.wasm ./internal/testplugins/hog
package main

import (
	"github.com/hangar-mcp/hangar/pdk"
)

var kept [][]byte

func init() {
	pdk.AddTool(&pdk.Tool{Name: "hog", Description: "Allocate until memory runs out.", InputSchema: map[string]any{"type": "object"}},
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			for {
				kept = append(kept, make([]byte, 1<<20))
			}
		})
	pdk.AddTool(&pdk.Tool{Name: "small", Description: "Answer ok.", InputSchema: map[string]any{"type": "object"}},
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			return pdk.TextResult("ok"), nil
		})
}

func main() {}
