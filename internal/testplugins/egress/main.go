//go:build wasip1

// Command egress is a test plugin for the network grants and the log rate
// limit. It speaks the legacy interface (describe and call; see
// docs/abi.md) through the Extism Go PDK, so that it uses nothing of
// Hangar's own PDK. Its tools (arguments in braces):
//
//	fetch {url: string, method?: string, body?: string, headers?: object}
//	                        sends the request with Extism's http_request
//	                        (GET by default); answers "<status> <body>"
//	flood {lines: integer, size?: integer}
//	                        writes lines lines of size bytes (default 100) to
//	                        stdout and as many to stderr; answers "flooded"
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o egress.wasm ./internal/testplugins/egress
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/extism/go-pdk"
)

func main() {}

const describeOutput = `{"tools":[
{"name":"fetch","inputSchema":{"type":"object","properties":{"url":{"type":"string"},"method":{"type":"string"},"body":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}}},"required":["url"]}},
{"name":"flood","inputSchema":{"type":"object","properties":{"lines":{"type":"integer"},"size":{"type":"integer"}},"required":["lines"]}}
]}`

//go:wasmexport describe
func describe() int32 {
	pdk.OutputString(describeOutput)
	return 0
}

type callRequest struct {
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			URL     string            `json:"url"`
			Method  string            `json:"method"`
			Body    string            `json:"body"`
			Headers map[string]string `json:"headers"`
			Lines   int               `json:"lines"`
			Size    int               `json:"size"`
		} `json:"arguments"`
	} `json:"params"`
}

//go:wasmexport call
func call() int32 {
	var req callRequest
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetErrorString("egress: bad call input: " + err.Error())
		return 1
	}
	a := req.Params.Arguments
	switch req.Params.Name {
	case "fetch":
		method := pdk.MethodGet
		switch strings.ToUpper(a.Method) {
		case "", "GET":
		case "POST":
			method = pdk.MethodPost
		case "PUT":
			method = pdk.MethodPut
		case "DELETE":
			method = pdk.MethodDelete
		default:
			return result(fmt.Sprintf("unsupported method %q", a.Method), true)
		}
		r := pdk.NewHTTPRequest(method, a.URL)
		for k, v := range a.Headers {
			r.SetHeader(k, v)
		}
		if a.Body != "" {
			r.SetBody([]byte(a.Body))
		}
		resp := r.Send()
		return result(fmt.Sprintf("%d %s", resp.Status(), resp.Body()), false)
	case "flood":
		size := a.Size
		if size <= 0 {
			size = 100
		}
		line := strings.Repeat("x", size-1) + "\n"
		for i := range a.Lines {
			fmt.Fprint(os.Stdout, line)
			fmt.Fprintf(os.Stderr, "%d %s", i, line)
		}
		return result("flooded", false)
	}
	return result(fmt.Sprintf("unknown tool %q", req.Params.Name), true)
}

func result(text string, isError bool) int32 {
	out, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": text}},
		"isError": isError,
	})
	pdk.Output(out)
	return 0
}
