//go:build wasip1

// Command trappy is a test plugin that panics while it starts: its typed
// tool "bad" takes an input type with a channel, which has no JSON
// schema, so package typed panics in the plugin's init, before any export
// runs (see TestStartupPanic in cmd/hangar).
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o trappy.wasm ./internal/testplugins/trappy
package main

import (
	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

type badIn struct {
	C chan int `json:"c"`
}

func init() {
	typed.AddTool(&pdk.Tool{Name: "bad", Description: "Never registered."},
		func(ctx *pdk.Context, in badIn) (struct{}, error) { return struct{}{}, nil })
}

func main() {}
