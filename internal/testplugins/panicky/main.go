//go:build wasip1

// Command panicky is a test plugin whose handlers panic, and which opens
// the files it is told to: what a plugin author meets when a handler has
// a bug or the plugin lacks a grant. Its tools:
//
//	nilmap     {} -> writes to a nil map in a typed tool
//	goroutine  {} -> a goroutine of its own writes to a nil map: the
//	                 panic no handler recovers, which crashes the plugin
//	open       {path: string} -> opens path and reads it; failing, the
//	                 error says whether it was EBADF
//	fine       {} -> {"ok": true}
//
// The resource panicky://boom, the prompt "boom" and the completion
// handler write to a nil map too. The resource template
// panicky://etc/{name} reads the file /etc/{name}.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o panicky.wasm ./internal/testplugins/panicky
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

type empty struct{}

type openIn struct {
	Path string `json:"path"`
}

type openOut struct {
	Text string `json:"text"`
}

type okOut struct {
	OK bool `json:"ok"`
}

var counts map[string]int // never made

func init() {
	typed.AddTool(&pdk.Tool{Name: "nilmap", Description: "Write to a nil map."},
		func(*pdk.Context, empty) (okOut, error) {
			counts["calls"]++ // panics: tool
			return okOut{OK: true}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "goroutine", Description: "Write to a nil map in a goroutine."},
		func(*pdk.Context, empty) (okOut, error) {
			done := make(chan struct{})
			go func() {
				counts["goroutine"]++ // panics: goroutine, unrecovered
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(time.Second):
			}
			return okOut{OK: true}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "open", Description: "Read a file."},
		func(_ *pdk.Context, in openIn) (openOut, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return openOut{}, fmt.Errorf("%w (EBADF: %v)", err, errors.Is(err, syscall.EBADF))
			}
			return openOut{Text: string(b)}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "fine", Description: "Succeed."},
		func(*pdk.Context, empty) (okOut, error) { return okOut{OK: true}, nil })
	pdk.AddResource(&pdk.Resource{URI: "panicky://boom", Name: "boom"},
		func(*pdk.Context, *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			counts["resource"]++ // panics: resource
			return nil, nil
		})
	pdk.AddResourceTemplate(&pdk.ResourceTemplate{URITemplate: "panicky://etc/{name}", Name: "etc"},
		func(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			b, err := os.ReadFile("/etc/" + req.Vars["name"])
			if err != nil {
				return nil, err
			}
			return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{&pdk.TextResourceContents{URI: req.URI, Text: string(b)}}}, nil
		})
	pdk.AddPrompt(&pdk.Prompt{Name: "boom"},
		func(*pdk.Context, *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
			counts["prompt"]++ // panics: prompt
			return nil, nil
		})
	pdk.SetCompletionHandler(func(*pdk.Context, *pdk.CompleteRequest) (*pdk.CompleteResult, error) {
		counts["completion"]++ // panics: completion
		return nil, nil
	})
}

func main() {}
