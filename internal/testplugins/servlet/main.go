//go:build wasip1

// Command servlet is a test plugin that speaks Hangar's servlet interface
// (see docs/abi.md and shared/spec/plugin-schema-servlet.md).
//
// describe returns a single ToolDescription (not {"tools": [...]}):
//
//	lookup {key: string, required}
//
// call looks the key up in a fixed table (alpha → "one", beta → "two") and
// answers with the value followed by the plugin config value "suffix" (empty
// when unset), so "alpha" with suffix "!" gives "one!". An unknown key or
// tool gives a CallToolResult with isError set.
//
// Resources:
//
//	servlet://greeting   text/plain                "hello from servlet"
//	servlet://logo.bin   application/octet-stream  blob of bytes 00 01 02 ff ("AAEC/w==")
//	servlet://item/{id}  text/plain (template)     "item <id>"
//
// read_resource of any other URI (or an empty id) sets the Extism error
// "resource not found: <uri>" and returns 1.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o servlet.wasm ./internal/testplugins/servlet
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/extism/go-pdk"
)

func main() {}

const (
	greetingURI  = "servlet://greeting"
	logoURI      = "servlet://logo.bin"
	itemTemplate = "servlet://item/{id}"
	itemPrefix   = "servlet://item/"
)

var logo = []byte{0x00, 0x01, 0x02, 0xff}

var table = map[string]string{"alpha": "one", "beta": "two"}

type toolDescription struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
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
	Method string `json:"method"`
	Params struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	} `json:"params"`
}

type resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

type resourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

type resourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

type readRequest struct {
	Method string `json:"method"`
	Params struct {
		URI string `json:"uri"`
	} `json:"params"`
}

//go:wasmexport describe
func describe() int32 {
	return output(toolDescription{
		Name:        "lookup",
		Description: "Looks a key up in a fixed table",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"key": map[string]any{"type": "string", "description": "alpha or beta"},
			},
			"required": []string{"key"},
		},
	})
}

//go:wasmexport call
func call() int32 {
	var req callRequest
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetErrorString("servlet: bad call input: " + err.Error())
		return 1
	}
	if req.Params.Name != "lookup" {
		return output(toolError(fmt.Sprintf("unknown tool: %q", req.Params.Name)))
	}
	var key string
	raw, ok := req.Params.Arguments["key"]
	if !ok || string(raw) == "null" || json.Unmarshal(raw, &key) != nil {
		return output(toolError("lookup: argument \"key\" must be a string"))
	}
	v, ok := table[key]
	if !ok {
		return output(toolError(fmt.Sprintf("lookup: no such key: %q", key)))
	}
	suffix, _ := pdk.GetConfig("suffix")
	return output(callToolResult{Content: []content{{Type: "text", Text: v + suffix}}})
}

//go:wasmexport list_resources
func listResources() int32 {
	return output(map[string]any{"resources": []resource{
		{URI: greetingURI, Name: "greeting", Description: "A greeting", MimeType: "text/plain"},
		{URI: logoURI, Name: "logo", Description: "Four binary bytes", MimeType: "application/octet-stream"},
	}})
}

//go:wasmexport list_resource_templates
func listResourceTemplates() int32 {
	return output(map[string]any{"resourceTemplates": []resourceTemplate{
		{URITemplate: itemTemplate, Name: "item", Description: "An item by id", MimeType: "text/plain"},
	}})
}

//go:wasmexport read_resource
func readResource() int32 {
	var req readRequest
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetErrorString("servlet: bad read_resource input: " + err.Error())
		return 1
	}
	uri := req.Params.URI
	var c resourceContents
	switch {
	case uri == greetingURI:
		c = resourceContents{URI: uri, MimeType: "text/plain", Text: "hello from servlet"}
	case uri == logoURI:
		c = resourceContents{URI: uri, MimeType: "application/octet-stream", Blob: base64.StdEncoding.EncodeToString(logo)}
	case strings.HasPrefix(uri, itemPrefix) && len(uri) > len(itemPrefix):
		c = resourceContents{URI: uri, MimeType: "text/plain", Text: "item " + strings.TrimPrefix(uri, itemPrefix)}
	default:
		pdk.SetErrorString("resource not found: " + uri)
		return 1
	}
	return output(map[string]any{"contents": []resourceContents{c}})
}

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func toolError(s string) callToolResult {
	return callToolResult{Content: []content{{Type: "text", Text: s}}, IsError: true}
}
