//go:build wasip1

// Command echo is the benchmark's Go-PDK plugin. Its tool echo returns
// arguments.text as a text result; it is the Go counterpart of the
// WAT module internal/testplugins/wat/echo.wat, so that the benchmark
// measures the cost of hosting a plugin written in standard Go with Hangar's
// PDK (the Go runtime in the guest, JSON decoding and encoding, the v1
// envelope) against a hand-written module that does almost nothing.
//
// Its second tool, spin, burns CPU inside the guest (arguments.rounds
// rounds of an integer hash) and returns the result. The benchmark uses it
// to show whether calls to one plugin run in parallel: with enough work per
// call, throughput grows with concurrency up to the number of cores only if
// several instances of the plugin run at once. It keeps no state between
// calls and says so (it imports pdk/stateless), so Hangar runs one instance
// per core by default.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o echo.wasm ./bench/plugins/echo
package main

import (
	"encoding/json"
	"strconv"

	"github.com/hangar-mcp/hangar/pdk"
	_ "github.com/hangar-mcp/hangar/pdk/stateless"
)

func init() {
	pdk.AddTool(&pdk.Tool{
		Name:        "echo",
		Description: "Echoes arguments.text back",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, echo)
	pdk.AddTool(&pdk.Tool{
		Name:        "spin",
		Description: "Burns CPU for arguments.rounds rounds and returns a checksum",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"rounds":{"type":"integer","minimum":0,"maximum":1000000000}},"required":["rounds"]}`),
	}, spin)
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

func spin(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Rounds uint64 `json:"rounds"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	x := uint64(0x9e3779b97f4a7c15)
	for i := uint64(0); i < args.Rounds; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		x += i
	}
	return pdk.TextResult(strconv.FormatUint(x, 16)), nil
}

// main is required by the toolchain but never called.
func main() {}
