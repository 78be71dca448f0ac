//go:build wasip1

// Command v1full is a test plugin written with the Hangar PDK. It covers
// the v1 features that the conformance fixture (examples/conformance) does
// not. Its tools:
//
//	list_roots             calls list_roots; answers the ListRootsResult as JSON text
//	roots_changed_count    answers how many times on_roots_list_changed fired, as text ("0", "1"...)
//	enable_extra_tool      adds tool extra_tool, calls notify_tool_list_changed
//	enable_extra_resource  adds resource v1full://extra, calls notify_resource_list_changed
//	enable_extra_prompt    adds prompt extra_prompt, calls notify_prompt_list_changed
//	disable_extras         removes the three extras, calls the three list-changed imports
//	notify_resource_updated {uri: string}: calls notify_resource_updated for uri
//	elicit_url             {url, elicitationId: string, message?: string}: URL-mode
//	                       elicitation; on "accept" then calls
//	                       notify_url_elicitation_completed; answers "action=<action>"
//	elicit_form            {message?: string, timeout_ms?: integer}: form elicitation of
//	                       {name: string} with the timeout; answers
//	                       "action=<action>, content=<json>"
//	log_levels             sends one log message per level, debug to emergency, each
//	                       with the level name as data and logger "v1full"
//	spin                   loops forever (for cancellation and timeouts)
//	sleep_ms               {ms: integer}: busy-waits ms milliseconds; answers "slept <ms>ms"
//	echo_context           answers {"id":..., "meta":..., "progressToken":...} as JSON text
//	config_greeting        answers {"value": <config "greeting">, "set": bool} as JSON text
//	structured             {a, b: number}: answers structuredContent {"sum": a+b}, with an outputSchema
//	panic                  panics; the PDK turns that into an export error
//
// Host-import failures ({"error": ...} answers) become tool results with
// isError set and the message as text.
//
// The roots counter and the extras live in the memory of its instance. The
// plugin does not declare itself stateless, so Hangar runs one instance.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o v1full.wasm ./internal/testplugins/v1full
package main

import (
	"encoding/json"

	"github.com/hangar-mcp/hangar/pdk"
)

func init() {
	for _, t := range tools {
		pdk.AddTool(t.tool, t.handler)
	}
	pdk.SetRootsListChangedHandler(func(*pdk.Context) error {
		rootsChanged++
		return nil
	})
}

// main is required by the toolchain; Hangar never calls it.
func main() {}

// object returns an object schema with the given properties JSON.
func object(properties string, required ...string) json.RawMessage {
	schema := map[string]any{"type": "object", "properties": json.RawMessage(properties)}
	if len(required) > 0 {
		schema["required"] = required
	}
	b, err := json.Marshal(schema)
	if err != nil {
		panic(err) // static schemas
	}
	return b
}

var tools = []struct {
	tool    *pdk.Tool
	handler pdk.ToolHandler
}{
	{&pdk.Tool{Name: "list_roots", Description: "List the client's roots", InputSchema: object(`{}`)}, listRoots},
	{&pdk.Tool{Name: "roots_changed_count", Description: "Count roots-list-changed notifications", InputSchema: object(`{}`)}, rootsChangedCount},
	{&pdk.Tool{Name: "enable_extra_tool", Description: "Add the tool extra_tool", InputSchema: object(`{}`)}, enableExtraTool},
	{&pdk.Tool{Name: "enable_extra_resource", Description: "Add the resource v1full://extra", InputSchema: object(`{}`)}, enableExtraResource},
	{&pdk.Tool{Name: "enable_extra_prompt", Description: "Add the prompt extra_prompt", InputSchema: object(`{}`)}, enableExtraPrompt},
	{&pdk.Tool{Name: "disable_extras", Description: "Remove the extra tool, resource and prompt", InputSchema: object(`{}`)}, disableExtras},
	{&pdk.Tool{
		Name:        "notify_resource_updated",
		Description: "Announce that a resource changed",
		InputSchema: object(`{"uri":{"type":"string"}}`, "uri"),
	}, notifyResourceUpdated},
	{&pdk.Tool{
		Name:        "elicit_url",
		Description: "URL-mode elicitation, then completion notification",
		InputSchema: object(`{"url":{"type":"string"},"elicitationId":{"type":"string"},"message":{"type":"string"}}`, "url", "elicitationId"),
	}, elicitURL},
	{&pdk.Tool{
		Name:        "elicit_form",
		Description: "Form elicitation with an optional timeout",
		InputSchema: object(`{"message":{"type":"string"},"timeout_ms":{"type":"integer","minimum":0}}`),
	}, elicitForm},
	{&pdk.Tool{Name: "log_levels", Description: "Log one message at every level", InputSchema: object(`{}`)}, logLevels},
	{&pdk.Tool{Name: "spin", Description: "Loop forever", InputSchema: object(`{}`)}, spin},
	{&pdk.Tool{
		Name:        "sleep_ms",
		Description: "Busy-wait for a number of milliseconds",
		InputSchema: object(`{"ms":{"type":"integer","minimum":0}}`, "ms"),
	}, sleepMS},
	{&pdk.Tool{Name: "echo_context", Description: "Echo the request context", InputSchema: object(`{}`)}, echoContext},
	{&pdk.Tool{Name: "config_greeting", Description: "Read the config value greeting", InputSchema: object(`{}`)}, configGreeting},
	{&pdk.Tool{
		Name:         "structured",
		Description:  "Add two numbers, with structured output",
		InputSchema:  object(`{"a":{"type":"number"},"b":{"type":"number"}}`, "a", "b"),
		OutputSchema: object(`{"sum":{"type":"number"}}`, "sum"),
	}, structured},
	{&pdk.Tool{Name: "panic", Description: "Panic inside the handler", InputSchema: object(`{}`)}, panicTool},
}
