//go:build wasip1

// Command contract is the recorder plugin of Hangar's contract tests (see
// internal/plugin/contract_test.go). It speaks the v1 interface of
// shared/spec/plugin-schema-v1.json and is written against the raw Extism Go
// PDK (github.com/extism/go-pdk), not Hangar's pdk package, so that what it
// sees and sends is what the schema says and nothing Hangar's own PDK would
// smooth over.
//
// It exports all nine v1 functions. Each one stores its input, byte for byte,
// in the Extism variable "in:<export>", then outputs the variable
// "out:<export>" when it is set (a canned output, so tests can check what
// Hangar accepts), and otherwise a minimal valid output that carries its own
// input:
//
//   - list_tools: a tool "envelope" whose description is the input, and the
//     control tools below;
//   - list_resources: one resource "contract://envelope", description the input;
//   - list_resource_templates: one template "contract://{x}", description the input;
//   - list_prompts: one prompt "envelope", description the input;
//   - read_resource, get_prompt, complete, call_tool: the input as the text
//     of the result;
//   - on_roots_list_changed: no output.
//
// call_tool also serves four control tools, before any canned output:
//
//   - echo {}: the input as text.
//   - recorded {"export": name}: the text stored in "in:<name>" ("" if none).
//   - set_output {"export": name, "output": any JSON or absent}: stores the
//     output (as its JSON text) in "out:<name>"; without output it removes it.
//   - import {"name": import, "payload": any JSON or absent}: calls the host
//     import of that name (namespace extism:host/user) with the payload's
//     JSON text, and returns as text what the import returned ("" for the
//     imports that return nothing). An unknown import name is a tool error.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o contract.wasm ./internal/testplugins/contract
package main

import (
	"encoding/json"

	"github.com/extism/go-pdk"
)

func main() {}

// The v1 host imports, all ten of the schema.

//go:wasmimport extism:host/user create_message
func createMessage(uint64) uint64

//go:wasmimport extism:host/user create_elicitation
func createElicitation(uint64) uint64

//go:wasmimport extism:host/user list_roots
func listRoots() uint64

//go:wasmimport extism:host/user notify_logging_message
func notifyLoggingMessage(uint64)

//go:wasmimport extism:host/user notify_progress
func notifyProgress(uint64)

//go:wasmimport extism:host/user notify_resource_updated
func notifyResourceUpdated(uint64)

//go:wasmimport extism:host/user notify_url_elicitation_completed
func notifyURLElicitationCompleted(uint64)

//go:wasmimport extism:host/user notify_tool_list_changed
func notifyToolListChanged()

//go:wasmimport extism:host/user notify_resource_list_changed
func notifyResourceListChanged()

//go:wasmimport extism:host/user notify_prompt_list_changed
func notifyPromptListChanged()

// withInputAndOutput are the imports that take a JSON input and return a
// JSON output.
var withInputAndOutput = map[string]func(uint64) uint64{
	"create_message":     createMessage,
	"create_elicitation": createElicitation,
}

// withInput are the imports that take a JSON input and return nothing.
var withInput = map[string]func(uint64){
	"notify_logging_message":           notifyLoggingMessage,
	"notify_progress":                  notifyProgress,
	"notify_resource_updated":          notifyResourceUpdated,
	"notify_url_elicitation_completed": notifyURLElicitationCompleted,
}

// withNothing are the imports that take no input and return nothing.
var withNothing = map[string]func(){
	"notify_tool_list_changed":     notifyToolListChanged,
	"notify_resource_list_changed": notifyResourceListChanged,
	"notify_prompt_list_changed":   notifyPromptListChanged,
}

// record stores the input of export and returns it.
func record(export string) []byte {
	in := pdk.Input()
	pdk.SetVar("in:"+export, in)
	return in
}

// canned outputs the canned output of export and reports whether there was
// one.
func canned(export string) bool {
	out := pdk.GetVar("out:" + export)
	if len(out) == 0 {
		return false
	}
	pdk.Output(out)
	return true
}

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func textResult(s string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
}

//go:wasmexport list_tools
func listTools() int32 {
	in := record("list_tools")
	if canned("list_tools") {
		return 0
	}
	tools := []any{map[string]any{
		"name": "envelope", "description": string(in),
		"inputSchema": map[string]any{"type": "object"},
	}}
	for _, name := range []string{"echo", "recorded", "set_output", "import"} {
		tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
	}
	return output(map[string]any{"tools": tools})
}

//go:wasmexport list_resources
func listResources() int32 {
	in := record("list_resources")
	if canned("list_resources") {
		return 0
	}
	return output(map[string]any{"resources": []any{map[string]any{
		"uri": "contract://envelope", "name": "envelope", "description": string(in),
	}}})
}

//go:wasmexport list_resource_templates
func listResourceTemplates() int32 {
	in := record("list_resource_templates")
	if canned("list_resource_templates") {
		return 0
	}
	return output(map[string]any{"resourceTemplates": []any{map[string]any{
		"uriTemplate": "contract://{x}", "name": "envelope", "description": string(in),
	}}})
}

//go:wasmexport list_prompts
func listPrompts() int32 {
	in := record("list_prompts")
	if canned("list_prompts") {
		return 0
	}
	return output(map[string]any{"prompts": []any{map[string]any{
		"name": "envelope", "description": string(in),
	}}})
}

//go:wasmexport read_resource
func readResource() int32 {
	in := record("read_resource")
	if canned("read_resource") {
		return 0
	}
	var req struct {
		Request struct {
			URI string `json:"uri"`
		} `json:"request"`
	}
	json.Unmarshal(in, &req)
	return output(map[string]any{"contents": []any{map[string]any{
		"uri": req.Request.URI, "text": string(in),
	}}})
}

//go:wasmexport get_prompt
func getPrompt() int32 {
	in := record("get_prompt")
	if canned("get_prompt") {
		return 0
	}
	return output(map[string]any{"messages": []any{map[string]any{
		"role": "user", "content": map[string]any{"type": "text", "text": string(in)},
	}}})
}

//go:wasmexport complete
func complete() int32 {
	in := record("complete")
	if canned("complete") {
		return 0
	}
	return output(map[string]any{"completion": map[string]any{"values": []string{string(in)}}})
}

//go:wasmexport on_roots_list_changed
func onRootsListChanged() int32 {
	record("on_roots_list_changed")
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := record("call_tool")
	var req struct {
		Request struct {
			Name      string `json:"name"`
			Arguments struct {
				Export  string          `json:"export"`
				Output  json.RawMessage `json:"output"`
				Name    string          `json:"name"`
				Payload json.RawMessage `json:"payload"`
			} `json:"arguments"`
		} `json:"request"`
	}
	if err := json.Unmarshal(in, &req); err != nil {
		pdk.SetErrorString("contract: bad call_tool input: " + err.Error())
		return 1
	}
	args := req.Request.Arguments
	switch req.Request.Name {
	case "echo":
		return output(textResult(string(in)))
	case "recorded":
		return output(textResult(string(pdk.GetVar("in:" + args.Export))))
	case "set_output":
		if len(args.Output) == 0 {
			pdk.RemoveVar("out:" + args.Export)
		} else {
			pdk.SetVar("out:"+args.Export, args.Output)
		}
		return output(textResult("ok"))
	case "import":
		got, ok := callImport(args.Name, args.Payload)
		if !ok {
			return output(map[string]any{
				"content": []any{map[string]any{"type": "text", "text": "unknown import " + args.Name}},
				"isError": true,
			})
		}
		return output(textResult(got))
	}
	if canned("call_tool") {
		return 0
	}
	return output(textResult(string(in)))
}

// callImport calls the named host import with payload and returns what it
// returned.
func callImport(name string, payload []byte) (string, bool) {
	if name == "list_roots" {
		return read(listRoots()), true
	}
	if fn, ok := withNothing[name]; ok {
		fn()
		return "", true
	}
	mem := pdk.AllocateBytes(payload)
	defer mem.Free()
	if fn, ok := withInputAndOutput[name]; ok {
		return read(fn(mem.Offset())), true
	}
	if fn, ok := withInput[name]; ok {
		fn(mem.Offset())
		return "", true
	}
	return "", false
}

// read returns the bytes of the Extism memory block at off ("" for 0).
func read(off uint64) string {
	if off == 0 {
		return ""
	}
	mem := pdk.FindMemory(off)
	defer mem.Free()
	return string(mem.ReadBytes())
}
