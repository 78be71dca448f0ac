//go:build wasip1

package pdk

import extism "github.com/extism/go-pdk"

// serve runs the export name on the Extism input. On failure it sets the
// Extism error and returns 1.
func serve(name string) int32 {
	output, err := plugin.invoke(host, name, extism.Input())
	if err != nil {
		extism.SetError(err)
		return 1
	}
	if output != nil {
		extism.Output(output)
	}
	return 0
}

//go:wasmexport list_tools
func wasmListTools() int32 { return serve(exportListTools) }

//go:wasmexport call_tool
func wasmCallTool() int32 { return serve(exportCallTool) }

//go:wasmexport list_resources
func wasmListResources() int32 { return serve(exportListResources) }

//go:wasmexport list_resource_templates
func wasmListResourceTemplates() int32 { return serve(exportListResourceTemplates) }

//go:wasmexport read_resource
func wasmReadResource() int32 { return serve(exportReadResource) }

//go:wasmexport list_prompts
func wasmListPrompts() int32 { return serve(exportListPrompts) }

//go:wasmexport get_prompt
func wasmGetPrompt() int32 { return serve(exportGetPrompt) }

//go:wasmexport complete
func wasmComplete() int32 { return serve(exportComplete) }

//go:wasmexport on_roots_list_changed
func wasmOnRootsListChanged() int32 { return serve(exportOnRootsListChanged) }
