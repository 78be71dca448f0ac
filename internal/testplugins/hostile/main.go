//go:build wasip1

// Command hostile is a test plugin that misbehaves on request, to check
// that Hangar's sandbox and limits hold. It speaks the legacy interface
// (describe and call; see docs/abi.md) through the Extism Go PDK, so that
// it uses nothing of Hangar's own PDK.
//
// describe lists the good tools below and, besides them, tools that a host
// must not offer:
//
//   - bad_properties: inputSchema {"type":"object","properties":5}
//   - bad_type:       inputSchema {"type":"objekt"}
//   - bad_pattern:    a property whose "pattern" is not a regular expression
//   - bad_ref:        inputSchema {"type":"object","$ref":"http://127.0.0.1:9/s.json"}
//   - not_object:     inputSchema "object" (a string)
//   - an entry without a name
//
// The good tools, all with object input schemas (arguments in braces):
//
//	ok                      answers "ok"
//	spin                    loops forever
//	alloc {mb: integer}     keeps allocating 1 MiB blocks until mb are held, then answers "allocated <mb> MiB"
//	panic                   panics (the Go runtime exits with code 2)
//	recurse                 recurses without end (stack overflow)
//	huge {bytes: integer}   answers a valid CallToolResult whose text is bytes long
//	bad_utf8                outputs bytes that are not UTF-8
//	bad_json                outputs a truncated JSON document
//	http {url: string, host?: string}
//	                        GETs url with Extism's http_request, with a Host header if host
//	                        is given; answers "<status> <body>"
//	read {path: string}     answers the file's content, or an isError result with the error
//	write {path, data: string} writes the file; answers "wrote" or an isError result
//	symlink {target, link: string} os.Symlink(target, link); answers "linked" or an isError result
//	fsop {op, path, to: string}  one change to a file system: op is remove, rename (path to to),
//	                              mkdir, link (path to to) or truncate; answers "done" or an isError result
//	list {path: string}     answers the names in the directory, one a line, or an isError result
//	rawread {fd: integer, path: string}
//	                        opens path relative to the pre-opened directory fd with the raw
//	                        WASI path_open (no cleaning by the Go runtime), answers the content
//	                        or an isError result
//	env                     answers os.Environ(), one a line
//	config {key: string}    answers the config value, or "<unset>"
//	var {value: string}     stores value with var_set, reads it back with var_get, answers it
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hostile.wasm ./internal/testplugins/hostile
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/extism/go-pdk"
)

func main() {}

var describeOutput = `{"tools":[
{"name":"ok","inputSchema":{"type":"object"}},
{"name":"spin","inputSchema":{"type":"object"}},
{"name":"alloc","inputSchema":{"type":"object","properties":{"mb":{"type":"integer"}},"required":["mb"]}},
{"name":"panic","inputSchema":{"type":"object"}},
{"name":"recurse","inputSchema":{"type":"object"}},
{"name":"huge","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}},"required":["bytes"]}},
{"name":"bad_utf8","inputSchema":{"type":"object"}},
{"name":"bad_json","inputSchema":{"type":"object"}},
{"name":"http","inputSchema":{"type":"object","properties":{"url":{"type":"string"},"host":{"type":"string"}},"required":["url"]}},
{"name":"read","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
{"name":"write","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"data":{"type":"string"}},"required":["path","data"]}},
{"name":"symlink","inputSchema":{"type":"object","properties":{"target":{"type":"string"},"link":{"type":"string"}},"required":["target","link"]}},
{"name":"fsop","inputSchema":{"type":"object","properties":{"op":{"type":"string"},"path":{"type":"string"},"to":{"type":"string"}},"required":["op","path"]}},
{"name":"list","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
{"name":"rawread","inputSchema":{"type":"object","properties":{"fd":{"type":"integer"},"path":{"type":"string"}},"required":["fd","path"]}},
{"name":"env","inputSchema":{"type":"object"}},
{"name":"config","inputSchema":{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}},
{"name":"var","inputSchema":{"type":"object","properties":{"value":{"type":"string"}},"required":["value"]}},
{"name":"bad_properties","inputSchema":{"type":"object","properties":5}},
{"name":"bad_type","inputSchema":{"type":"objekt"}},
{"name":"bad_pattern","inputSchema":{"type":"object","properties":{"x":{"type":"string","pattern":"(unclosed"}}}},
{"name":"bad_ref","inputSchema":{"type":"object","$ref":"http://127.0.0.1:9/s.json"}},
{"name":"not_object","inputSchema":"object"},
{"description":"a tool without a name","inputSchema":{"type":"object"}}
]}`

//go:wasmexport describe
func describe() int32 {
	pdk.OutputString(describeOutput)
	return 0
}

type callRequest struct {
	Params struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	} `json:"params"`
}

//go:wasmexport call
func call() int32 {
	var req callRequest
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetErrorString("hostile: bad call input: " + err.Error())
		return 1
	}
	a := args(req.Params.Arguments)
	switch req.Params.Name {
	case "ok":
		return text("ok")
	case "spin":
		for {
			spins++
		}
	case "alloc":
		mb := a.int("mb")
		for range mb {
			block := make([]byte, 1<<20)
			for i := 0; i < len(block); i += 4096 {
				block[i] = 1
			}
			held = append(held, block)
		}
		return text(fmt.Sprintf("allocated %d MiB", len(held)))
	case "panic":
		panic("hostile: requested panic")
	case "recurse":
		return text(strconv.Itoa(recurse(1)))
	case "huge":
		n := a.int("bytes")
		return text(strings.Repeat("x", n))
	case "bad_utf8":
		pdk.Output([]byte("\xff\xfe{\"content\":[]}"))
		return 0
	case "bad_json":
		pdk.OutputString(`{"content":[{"type":"text","text":"unterminated`)
		return 0
	case "http":
		req := pdk.NewHTTPRequest(pdk.MethodGet, a.str("url"))
		if h := a.str("host"); h != "" {
			req.SetHeader("Host", h)
		}
		resp := req.Send()
		return text(fmt.Sprintf("%d %s", resp.Status(), resp.Body()))
	case "read":
		b, err := os.ReadFile(a.str("path"))
		if err != nil {
			return toolError(err.Error())
		}
		return text(string(b))
	case "write":
		if err := os.WriteFile(a.str("path"), []byte(a.str("data")), 0o644); err != nil {
			return toolError(err.Error())
		}
		return text("wrote")
	case "fsop":
		var err error
		switch path, to := a.str("path"), a.str("to"); a.str("op") {
		case "remove":
			err = os.Remove(path)
		case "rename":
			err = os.Rename(path, to)
		case "mkdir":
			err = os.Mkdir(path, 0o755)
		case "link":
			err = os.Link(path, to)
		case "truncate":
			err = os.Truncate(path, 0)
		default:
			return toolError("unknown op")
		}
		if err != nil {
			return toolError(err.Error())
		}
		return text("done")
	case "symlink":
		if err := os.Symlink(a.str("target"), a.str("link")); err != nil {
			return toolError(err.Error())
		}
		return text("linked")
	case "list":
		entries, err := os.ReadDir(a.str("path"))
		if err != nil {
			return toolError(err.Error())
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return text(strings.Join(names, "\n"))
	case "rawread":
		b, err := rawRead(a.int("fd"), a.str("path"))
		if err != nil {
			return toolError(err.Error())
		}
		return text(string(b))
	case "env":
		return text(strings.Join(os.Environ(), "\n"))
	case "config":
		v, ok := pdk.GetConfig(a.str("key"))
		if !ok {
			v = "<unset>"
		}
		return text(v)
	case "var":
		pdk.SetVar("v", []byte(a.str("value")))
		return text(string(pdk.GetVar("v")))
	}
	return toolError(fmt.Sprintf("unknown tool %q", req.Params.Name))
}

var (
	spins int
	held  [][]byte
	depth int
)

// recurse never returns; the frame keeps a buffer so that each level costs
// stack.
func recurse(n int) int {
	var buf [256]byte
	buf[n%256] = byte(n)
	depth = n
	return recurse(n+1) + int(buf[(n+1)%256])
}

// rawRead opens path relative to the directory fd with WASI's path_open as
// the guest gives it, "../" and all, and reads the file.
func rawRead(fd int, path string) ([]byte, error) {
	f, err := syscall.Openat(fd, path, syscall.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("openat %d %q: %w", fd, path, err)
	}
	defer syscall.Close(f)
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(f, buf)
		out = append(out, buf[:max(n, 0)]...)
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
	}
}

type args map[string]json.RawMessage

func (a args) str(k string) string {
	var s string
	json.Unmarshal(a[k], &s)
	return s
}

func (a args) int(k string) int {
	var n int
	json.Unmarshal(a[k], &n)
	return n
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callToolResult struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

func text(s string) int32 {
	pdk.OutputJSON(callToolResult{Content: []content{{Type: "text", Text: s}}})
	return 0
}

func toolError(s string) int32 {
	pdk.OutputJSON(callToolResult{Content: []content{{Type: "text", Text: s}}, IsError: true})
	return 0
}
