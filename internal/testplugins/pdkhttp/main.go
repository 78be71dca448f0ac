//go:build wasip1

// Command pdkhttp is a test plugin for the HTTP requests of Hangar's Go
// PDK (pdk.Fetch). Its one tool:
//
//	fetch {url: string, method?: string, body?: string, headers?: object}
//	      sends the request with pdk.Fetch; answers, as structured content,
//	      {status, headers, body} or, when Fetch fails,
//	      {error, denied}, where denied is errors.Is(err, pdk.ErrHTTPDenied)
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pdkhttp.wasm ./internal/testplugins/pdkhttp
package main

import (
	"encoding/json"
	"errors"

	"github.com/hangar-mcp/hangar/pdk"
)

func main() {}

func init() {
	pdk.AddTool(&pdk.Tool{Name: "fetch", Description: "Send an HTTP request with pdk.Fetch."}, fetch)
}

func fetch(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Body    *string           `json:"body"`
		Headers map[string]string `json:"headers"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	r := &pdk.HTTPRequest{Method: args.Method, URL: args.URL, Header: args.Headers}
	if args.Body != nil {
		r.Body = []byte(*args.Body)
	}
	var out any
	resp, err := pdk.Fetch(r)
	if err != nil {
		out = map[string]any{"error": err.Error(), "denied": errors.Is(err, pdk.ErrHTTPDenied)}
	} else {
		out = map[string]any{"status": resp.StatusCode, "headers": resp.Header, "body": string(resp.Body),
			"content_type": resp.Header.Get("content-type")}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &pdk.CallToolResult{Content: []pdk.Content{&pdk.TextContent{Text: string(b)}}, StructuredContent: out}, nil
}
