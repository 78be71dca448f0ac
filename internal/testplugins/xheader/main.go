//go:build wasip1

// Command xheader is a test plugin whose tools mark parameters with
// x-mcp-header, which MCP 2026-07-28 clients mirror into Mcp-Param
// headers over Streamable HTTP. Hangar offers the tools whose annotations
// are valid and refuses the others.
//
//	route       valid: region (string, "Region"), shard (integer,
//	            "Shard"), dry (boolean, "Dry-Run"), opts.zone (a string in a
//	            nested object, "Zone") and query (not mirrored); answers its
//	            arguments as JSON
//	plain       no annotation; answers "plain"
//	bad_number  invalid: x-mcp-header on a number
//	bad_items   invalid: x-mcp-header on a property inside items
//	bad_anyof   invalid: x-mcp-header inside anyOf
//	bad_dup     invalid: "Dup" and "dup" on two properties
//	bad_name    invalid: "Bad Name" is not an HTTP token
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o xheader.wasm ./internal/testplugins/xheader
package main

import (
	"encoding/json"

	"github.com/hangar-mcp/hangar/pdk"
)

// main is required by the toolchain; Hangar never calls it.
func main() {}

func echo(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	b, err := json.Marshal(req.Arguments)
	if err != nil {
		return nil, err
	}
	return pdk.TextResult(string(b)), nil
}

func tool(name, schema string) {
	pdk.AddTool(&pdk.Tool{Name: name, InputSchema: json.RawMessage(schema)}, echo)
}

func init() {
	tool("route", `{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"shard":{"type":"integer","x-mcp-header":"Shard"},
		"dry":{"type":["boolean","null"],"x-mcp-header":"Dry-Run"},
		"opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
		"query":{"type":"string"}},"required":["query"]}`)
	pdk.AddTool(&pdk.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		return pdk.TextResult("plain"), nil
	})
	tool("bad_number", `{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`)
	tool("bad_items", `{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string","x-mcp-header":"X"}}}}}}`)
	tool("bad_anyof", `{"type":"object","anyOf":[{"properties":{"x":{"type":"string","x-mcp-header":"X"}}}]}`)
	tool("bad_dup", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Dup"},"b":{"type":"string","x-mcp-header":"dup"}}}`)
	tool("bad_name", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}}`)
}
