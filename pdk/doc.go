// Package pdk is the Go plugin development kit for Hangar v1 plugins.
//
// A Hangar plugin is a WebAssembly module that Hangar serves as part of one
// MCP (Model Context Protocol) server. With this package a plugin registers
// tools, resources, resource templates, prompts and a completion handler,
// usually from init functions, and the package provides every v1 export
// (list_tools, call_tool, list_resources, list_resource_templates,
// read_resource, list_prompts, get_prompt, complete and
// on_roots_list_changed), decodes the requests Hangar sends and routes them
// to the registered handlers.
//
// Handlers receive a [*Context] describing the MCP request being served
// (its id, its _meta and its progress token). Through the Context a handler
// reaches the MCP client of the calling session: it can request sampling
// ([Context.CreateMessage]), elicit input ([Context.Elicit],
// [Context.ElicitURL]), list the client's roots ([Context.ListRoots]), ask
// for several of these at once under keys of its own ([Context.Ask]), see
// what the client declared it can do ([Context.ClientCapabilities]), send
// log messages and progress, and announce list or resource changes.
//
// Plugins are built with the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hello.wasm ./hello
//
// A complete plugin:
//
//	//go:build wasip1
//
//	package main
//
//	import (
//		"encoding/json"
//
//		"github.com/hangar-mcp/hangar/pdk"
//	)
//
//	func init() {
//		pdk.AddTool(&pdk.Tool{
//			Name:        "greet",
//			Description: "Greet someone by name.",
//			InputSchema: json.RawMessage(`{
//				"type": "object",
//				"properties": {"name": {"type": "string"}},
//				"required": ["name"]
//			}`),
//		}, greet)
//	}
//
//	func greet(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
//		var args struct {
//			Name string `json:"name"`
//		}
//		if err := req.BindArguments(&args); err != nil {
//			return nil, err
//		}
//		return pdk.TextResult("Hello, " + args.Name + "!"), nil
//	}
//
//	// main is required by the toolchain but never called: Hangar runs the
//	// init functions when it instantiates the module, then calls exports.
//	func main() {}
//
// For tools whose input and output schemas are inferred from Go types, and
// whose results are structured content, see package
// [github.com/hangar-mcp/hangar/pdk/typed]. Package
// [github.com/hangar-mcp/hangar/plugintest] runs a plugin in a Go test
// through Hangar's engine and MCP server, and "hangar new NAME" writes a
// plugin module to start from.
//
// Hangar runs one instance of a plugin, so that registrations made at run
// time (a tool added by another tool's handler, say) and state kept in
// package variables are seen by every call; after announcing a change
// ([Context.NotifyToolListChanged] and the like) a handler's new lists are
// read from that same instance. A plugin that keeps no state between calls
// can let Hangar run several instances at once by importing
// [github.com/hangar-mcp/hangar/pdk/stateless] for its side effect. Hangar
// replaces an instance that crashed or ran out of time; the new one runs the
// init functions afresh. Extism variables (var_get, var_set) are shared by
// all instances of a plugin.
//
// A plugin calls HTTP APIs with [Fetch] (or [Get]): Hangar sends the
// request to the hosts the plugin's grants.allowed_hosts allows, and
// nowhere else, and a refused request fails with an error that names the
// host and the grant to add ([ErrHTTPDenied]). Package
// [github.com/hangar-mcp/hangar/plugintest] runs such a plugin in a test
// against a local server (httptest) granted by address.
//
// A plugin offers interactive views (MCP Apps) with [AddApp]: HTML,
// usually embedded with go:embed, that hosts supporting the extension
// render in a sandboxed iframe, and that calls the plugin's tools. A tool
// points at its view with [Tool.UI].
//
// The types of this package carry the JSON field names of the MCP
// specification. Schemas (input, output and elicitation schemas) are plain
// values of type any, so a [encoding/json.RawMessage] passes through to the
// client unchanged, whatever JSON Schema keywords it uses.
//
// Only the wasip1 build talks to a host; in other builds the package
// compiles, so plugin code can share types with ordinary Go programs and
// tests, but host calls fail with [ErrNoHost].
package pdk
