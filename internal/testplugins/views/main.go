//go:build wasip1

// Command views is a test plugin with views (MCP Apps) of the shapes the
// server must handle, written with raw _meta rather than pdk.AddApp, so
// that it can hold what the PDK would refuse:
//
//	ui://blob    a view as a base64 blob, with an upper-case <HEAD> that
//	             has an attribute, after a <header> in a comment
//	ui://nohead  a view without a <head>
//	ui://big     a view of 4 MiB and one byte
//	ui://item/{id}  a template of views: "<head></head><p>URI id</p>",
//	             with the URI the plugin was asked for and the id
//	show         {} -> "shown"; _meta.ui.resourceUri and the flat
//	             ui/resourceUri are ui://blob, with a visibility of model
//	             and app and a key of its own
//	secret       {} -> "secret"; only the view may call it (visibility app)
//	odd          {} -> "odd"; its _meta.ui.resourceUri is not a string
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o views.wasm ./internal/testplugins/views
package main

import (
	"strings"

	"github.com/hangar-mcp/hangar/pdk"
)

func main() {}

const blobHTML = `<!doctype html><!-- <header> --><HEAD lang="en"><title>blob</title></HEAD><body>blob</body>`

func init() {
	view := func(uri string, contents func(*pdk.Context) pdk.ResourceContents) {
		pdk.AddResource(&pdk.Resource{URI: uri, Name: strings.TrimPrefix(uri, "ui://"), MIMEType: pdk.AppMIMEType},
			func(ctx *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
				return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{contents(ctx)}}, nil
			})
	}
	view("ui://blob", func(*pdk.Context) pdk.ResourceContents {
		return &pdk.BlobResourceContents{URI: "ui://blob", MIMEType: pdk.AppMIMEType, Blob: []byte(blobHTML),
			Meta: pdk.Meta{"ui": map[string]any{"prefersBorder": true}}}
	})
	view("ui://nohead", func(*pdk.Context) pdk.ResourceContents {
		return &pdk.TextResourceContents{URI: "ui://nohead", MIMEType: pdk.AppMIMEType, Text: "<p>no head</p>"}
	})
	view("ui://big", func(ctx *pdk.Context) pdk.ResourceContents {
		const n = 4<<20 + 1 // one byte more than Hangar's bound (core.MaxView)
		return &pdk.TextResourceContents{URI: "ui://big", MIMEType: pdk.AppMIMEType, Text: strings.Repeat("x", n)}
	})
	pdk.AddResourceTemplate(&pdk.ResourceTemplate{URITemplate: "ui://item/{id}", Name: "item", MIMEType: pdk.AppMIMEType},
		func(ctx *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{&pdk.TextResourceContents{
				URI: req.URI, MIMEType: pdk.AppMIMEType, Text: "<head></head><p>" + req.URI + " " + req.Vars["id"] + "</p>",
			}}}, nil
		})
	tool := func(name string, meta pdk.Meta) {
		pdk.AddTool(&pdk.Tool{Name: name, Meta: meta}, func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			return pdk.TextResult(name), nil
		})
	}
	tool("show", pdk.Meta{
		"ui":              map[string]any{"resourceUri": "ui://blob", "visibility": []string{"model", "app"}, "com.example/k": "v"},
		"ui/resourceUri":  "ui://blob",
		"com.example/top": 1,
	})
	tool("secret", pdk.Meta{"ui": map[string]any{"resourceUri": "ui://blob", "visibility": []string{"app"}}})
	tool("odd", pdk.Meta{"ui": map[string]any{"resourceUri": 7}})
}
