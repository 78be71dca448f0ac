//go:build wasip1

// Command register is a test plugin that keeps state in its instance's
// memory, as a plugin written with the Hangar PDK naturally does. Its tools:
//
//	register        adds the tool dyn_<n> (n = 1, 2, ... counted in memory),
//	                calls notify_tool_list_changed; answers "dyn_<n>"
//	dyn_<n>         answers "<n>"
//	count           answers how many tools register added, as text
//	flood           {count: integer}: calls notify_tool_list_changed count
//	                times, then adds dyn_<n> like register; answers "dyn_<n>"
//	register_fail   like register, then answers a tool error
//	register_panic  like register, then panics: the export fails (Extism
//	                error), the instance stays
//	register_crash  like register (it notifies), then exits: the instance is
//	                unusable and Hangar discards it
//	set_var         {name, value: string}: var_set; answers "ok"
//	set_var_bytes   {name: string, bytes: integer}: var_set of that many bytes
//	get_var         {name: string}: var_get; answers the value or "<unset>"
//
// It does not declare itself stateless.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o register.wasm ./internal/testplugins/register
package main

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"

	extism "github.com/extism/go-pdk"

	"github.com/hangar-mcp/hangar/pdk"
)

func init() {
	add := func(name, desc, props string, h pdk.ToolHandler) {
		pdk.AddTool(&pdk.Tool{
			Name:        name,
			Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":` + props + `}`),
		}, h)
	}
	add("register", "Add a tool", `{}`, func(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		return pdk.TextResult(register(ctx)), nil
	})
	add("count", "How many tools were added", `{}`, func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		return pdk.TextResult(strconv.Itoa(added)), nil
	})
	add("flood", "Notify a tool-list change many times, then add a tool", `{"count":{"type":"integer","minimum":0}}`,
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			var args struct {
				Count int `json:"count"`
			}
			if err := req.BindArguments(&args); err != nil {
				return nil, err
			}
			for range args.Count {
				ctx.NotifyToolListChanged()
			}
			return pdk.TextResult(register(ctx)), nil
		})
	add("register_fail", "Add a tool, then fail", `{}`, func(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		return nil, errors.New("failed after adding " + register(ctx))
	})
	add("register_panic", "Add a tool, then panic", `{}`, func(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		panic("panicked after adding " + register(ctx))
	})
	add("register_crash", "Add a tool, then exit", `{}`, func(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		register(ctx)
		os.Exit(3)
		return nil, nil
	})
	add("set_var", "Set a variable", `{"name":{"type":"string"},"value":{"type":"string"}}`,
		func(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			var args struct{ Name, Value string }
			if err := req.BindArguments(&args); err != nil {
				return nil, err
			}
			extism.SetVar(args.Name, []byte(args.Value))
			return pdk.TextResult("ok"), nil
		})
	add("set_var_bytes", "Set a variable of a given size", `{"name":{"type":"string"},"bytes":{"type":"integer","minimum":0}}`,
		func(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			var args struct {
				Name  string `json:"name"`
				Bytes int    `json:"bytes"`
			}
			if err := req.BindArguments(&args); err != nil {
				return nil, err
			}
			extism.SetVar(args.Name, []byte(strings.Repeat("x", args.Bytes)))
			return pdk.TextResult("ok"), nil
		})
	add("get_var", "Read a variable", `{"name":{"type":"string"}}`,
		func(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			var args struct{ Name string }
			if err := req.BindArguments(&args); err != nil {
				return nil, err
			}
			v := extism.GetVar(args.Name)
			if v == nil {
				return pdk.TextResult("<unset>"), nil
			}
			return pdk.TextResult(string(v)), nil
		})
}

// added counts the tools register added, in this instance's memory.
var added int

// register adds the next dyn_<n> tool and announces the change.
func register(ctx *pdk.Context) string {
	added++
	n := strconv.Itoa(added)
	name := "dyn_" + n
	pdk.AddTool(&pdk.Tool{
		Name:        name,
		Description: "A tool added at run time",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		return pdk.TextResult(n), nil
	})
	ctx.NotifyToolListChanged()
	return name
}

// main is required by the toolchain; Hangar never calls it.
func main() {}
