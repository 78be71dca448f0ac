//go:build wasip1

package pdk

import extism "github.com/extism/go-pdk"

// outBuf is the buffer of the last output, to encode the next in:
// extism.Output copies an output to Extism memory as soon as it is
// encoded, and nothing else keeps it, so a call saves the allocation of a
// buffer (some 400 ns in a Go guest). (No handler runs between the
// encoding and the copy, so even an export called while another runs
// could share it.) One larger than maxOutBuf is let go.
var outBuf []byte

const maxOutBuf = 64 << 10

// serve runs the export name, whose function is fn, on the Extism input.
// On failure it sets the Extism error and returns 1.
func serve(name string, fn exportFunc) int32 {
	output, err := plugin.serve(host, name, fn, extism.Input(), outBuf)
	if err != nil {
		extism.SetError(err)
		return 1
	}
	if output != nil {
		extism.Output(output)
		if cap(output) <= maxOutBuf {
			outBuf = output
		}
	}
	return 0
}

//go:wasmexport list_tools
func wasmListTools() int32 { return serve(exportListTools, (*registry).listTools) }

//go:wasmexport call_tool
func wasmCallTool() int32 { return serve(exportCallTool, (*registry).callTool) }

//go:wasmexport list_resources
func wasmListResources() int32 { return serve(exportListResources, (*registry).listResources) }

//go:wasmexport list_resource_templates
func wasmListResourceTemplates() int32 {
	return serve(exportListResourceTemplates, (*registry).listResourceTemplates)
}

//go:wasmexport read_resource
func wasmReadResource() int32 { return serve(exportReadResource, (*registry).readResource) }

//go:wasmexport list_prompts
func wasmListPrompts() int32 { return serve(exportListPrompts, (*registry).listPrompts) }

//go:wasmexport get_prompt
func wasmGetPrompt() int32 { return serve(exportGetPrompt, (*registry).getPrompt) }

//go:wasmexport complete
func wasmComplete() int32 { return serve(exportComplete, (*registry).complete) }

//go:wasmexport on_roots_list_changed
func wasmOnRootsListChanged() int32 {
	return serve(exportOnRootsListChanged, (*registry).onRootsListChanged)
}
