//go:build wasip1

// Command conformance is the Hangar plugin implementing the fixtures that
// the MCP conformance suite (@modelcontextprotocol/conformance) expects
// from a server: its tools, resources, resource template, prompts and
// completion.
package main

import (
	"github.com/hangar-mcp/hangar/pdk"

	// The fixture keeps no state between calls, so Hangar may run several
	// instances of it at once (concurrent sessions sample in parallel).
	_ "github.com/hangar-mcp/hangar/pdk/stateless"
)

var (
	pngImage = redPixelPNG()
	wavAudio = toneWAV()
)

func init() {
	for _, t := range tools {
		pdk.AddTool(t.tool, t.handler)
	}
	addMRTR()
	addTasks()
	addResources()
	addPrompts()
	pdk.SetCompletionHandler(complete)
}

// main is required by the toolchain; Hangar never calls it.
func main() {}
