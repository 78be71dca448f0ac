//go:build wasip1

// Command floor is the benchmark's floor for a Go plugin: its call_tool
// export reads nothing and returns a constant result, the one the echo
// tool of bench/plugins/echo returns, with Extism's Go PDK only (no
// Hangar PDK, no JSON). Whatever a call of it costs, every Go plugin pays:
// the Go runtime's entry into and exit from an export, writing the output
// through Extism's host functions, and the engine's work around the call.
// The benchmark's instructions section sets it against the echo plugin to
// tell the cost of Hangar's PDK from that floor.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o floor.wasm ./bench/plugins/floor
package main

import extism "github.com/extism/go-pdk"

var result = []byte(`{"content":[{"type":"text","text":"The quick brown fox jumps over the lazy dog."}]}`)

//go:wasmexport list_tools
func listTools() int32 {
	extism.OutputString(`{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`)
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	extism.Output(result)
	return 0
}

//go:wasmexport hangar_stateless
func stateless() {}

// main is required by the toolchain but never called.
func main() {}
