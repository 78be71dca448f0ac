package pdk

import (
	"encoding/json"
	"strconv"

	"github.com/hangar-mcp/hangar/pdk/internal/fastjson"
)

// Tool describes a tool the plugin offers.
type Tool struct {
	// Name identifies the tool; it must be unique within the plugin.
	Name string `json:"name"`
	// Title is a human-readable name for display.
	Title string `json:"title,omitempty"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments, an object schema.
	// Any value that marshals to JSON works; a [json.RawMessage] passes
	// through unchanged. When nil, {"type":"object"} is advertised.
	InputSchema any `json:"inputSchema"`
	// OutputSchema, when set, is the JSON Schema of the structured content
	// the tool returns in [CallToolResult.StructuredContent].
	OutputSchema any              `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Meta         Meta             `json:"_meta,omitempty"`
	// Task says when a call of the tool becomes a task, for the clients
	// of MCP 2026-07-28 that declare the tasks extension
	// (io.modelcontextprotocol/tasks): TaskAuto (the default) once it runs
	// past the server's threshold, TaskNever, TaskAlways or TaskRequired.
	// AddTool writes it in the tool's _meta under [TaskMetaKey].
	Task TaskSupport `json:"-"`
	// UI links the tool to an interactive view of the plugin, for clients
	// of the MCP Apps extension. It is written in the tool's _meta under
	// [AppMetaKey] (and its ResourceURI under [AppResourceURIMetaKey]),
	// which Meta must then not hold, once the plugin offers a view with
	// [AddApp]: by AddTool, or by the first AddApp for a tool added
	// before it. A plugin without views sends no UI.
	UI *ToolUI `json:"-"`
}

// TaskSupport says when a tool's calls become tasks (Tool.Task).
type TaskSupport string

const (
	// TaskAuto: a call still running after the server's threshold
	// (tasks.after) becomes a task; a quicker one is answered directly.
	TaskAuto TaskSupport = ""
	// TaskNever: the tool's calls are always answered directly.
	TaskNever TaskSupport = "never"
	// TaskAlways: a call becomes a task at once, for a client with the
	// extension; others are answered directly.
	TaskAlways TaskSupport = "always"
	// TaskRequired: as TaskAlways once the call has the input it asks for
	// over multi round-trip requests, and a client without the extension
	// is refused (-32021) before the tool runs.
	TaskRequired TaskSupport = "required"
)

// TaskMetaKey is the key of a tool's _meta that carries its Task.
const TaskMetaKey = "com.github.hangar-mcp/task"

// ToolAnnotations are hints about a tool's behaviour. Clients must not rely
// on them for security decisions.
type ToolAnnotations struct {
	// Title is a human-readable name for display.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint reports that the tool does not modify its environment.
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint reports that the tool may perform destructive
	// updates. It defaults to true; it is meaningful only when ReadOnlyHint
	// is false.
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint reports that repeated calls with the same arguments
	// have no additional effect.
	IdempotentHint bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint reports that the tool interacts with an open world of
	// external entities. It defaults to true.
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// CallToolRequest is a request to run a tool.
type CallToolRequest struct {
	Name string `json:"name"`
	// Arguments is the JSON object of arguments, as the client sent it.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// BindArguments decodes the tool arguments into v, which must be a
// pointer. It leaves v unchanged when the request has no arguments.
func (r *CallToolRequest) BindArguments(v any) error {
	if len(r.Arguments) == 0 || string(r.Arguments) == "null" {
		return nil
	}
	// Arguments of plain types into a struct of plain fields, the common
	// case, are read without encoding/json, which does the rest.
	if fastjson.Bind(r.Arguments, v, false) {
		return nil
	}
	if err := json.Unmarshal(r.Arguments, v); err != nil {
		return wrapError(err, "invalid arguments for tool "+strconv.Quote(r.Name))
	}
	return nil
}

// CallToolResult is the result of a tool call.
type CallToolResult struct {
	// Content is what the model sees of the result.
	Content []Content `json:"content"`
	// StructuredContent is an optional JSON object conforming to the tool's
	// OutputSchema.
	StructuredContent any `json:"structuredContent,omitempty"`
	// IsError reports that the tool failed. Tool failures are results, not
	// protocol errors, so that the model can see them and react.
	IsError bool `json:"isError,omitempty"`
	Meta    Meta `json:"_meta,omitempty"`
}

// TextResult returns a successful result holding one text block.
func TextResult(text string) *CallToolResult {
	// The result, its content and its block in one allocation.
	r := &struct {
		result  CallToolResult
		content [1]Content
		block   TextContent
	}{block: TextContent{Text: text}}
	r.content[0] = &r.block
	r.result.Content = r.content[:]
	return &r.result
}

// ToolHandler runs a tool call. A returned error becomes a result with
// IsError set and the error message as text.
type ToolHandler func(ctx *Context, req *CallToolRequest) (*CallToolResult, error)
