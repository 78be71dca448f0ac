package pdk

// The reference types of a [CompleteReference], as MCP names them. The
// plugin schema names them "prompt" and "resource", and Hangar sends those;
// the package accepts both forms and hands handlers these.
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteRequest asks for completions of a prompt argument or of a
// resource template variable.
type CompleteRequest struct {
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	// Context holds the values of arguments already resolved, if any.
	Context *CompleteContext `json:"context,omitempty"`
}

// CompleteReference names what is being completed: a prompt (Type
// [RefPrompt], Name set) or a resource template (Type [RefResource], URI
// set to the template). Type is always one of those two constants when the
// host sent either form of them.
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and its partial value.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext carries previously resolved argument values.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteResult holds completion suggestions.
type CompleteResult struct {
	Completion Completion `json:"completion"`
	Meta       Meta       `json:"_meta,omitempty"`
}

// Completion lists suggested values, at most 100 of them.
type Completion struct {
	Values []string `json:"values"`
	// Total is the number of available values, when known.
	Total int `json:"total,omitempty"`
	// HasMore reports that more values exist than were returned.
	HasMore bool `json:"hasMore,omitempty"`
}

// CompletionHandler answers completion requests for the plugin's prompts
// and resource templates. A returned error becomes an MCP error.
type CompletionHandler func(ctx *Context, req *CompleteRequest) (*CompleteResult, error)
