package pdk

import (
	"encoding/json"
	"fmt"
)

// The v1 exports, all provided by this package.
const (
	exportListTools             = "list_tools"
	exportCallTool              = "call_tool"
	exportListResources         = "list_resources"
	exportListResourceTemplates = "list_resource_templates"
	exportReadResource          = "read_resource"
	exportListPrompts           = "list_prompts"
	exportGetPrompt             = "get_prompt"
	exportComplete              = "complete"
	exportOnRootsListChanged    = "on_roots_list_changed"
)

// maxCompletionValues is the most values a completion may return.
const maxCompletionValues = 100

// exportFunc serves one export: it decodes the request and returns the
// result to encode as output, or nil for no output.
type exportFunc func(r *registry, ctx *Context, request json.RawMessage) (any, error)

var exports = map[string]exportFunc{
	exportListTools:             (*registry).listTools,
	exportCallTool:              (*registry).callTool,
	exportListResources:         (*registry).listResources,
	exportListResourceTemplates: (*registry).listResourceTemplates,
	exportReadResource:          (*registry).readResource,
	exportListPrompts:           (*registry).listPrompts,
	exportGetPrompt:             (*registry).getPrompt,
	exportComplete:              (*registry).complete,
	exportOnRootsListChanged:    (*registry).onRootsListChanged,
}

// envelope is the input of the v1 exports: {"request": ..., "context":
// {"id": ..., "_meta": ...}}, or {"_meta": ...} for notifications (or
// {"context": {"_meta": ...}}, as some hosts send them).
type envelope struct {
	Request json.RawMessage `json:"request"`
	Context struct {
		ID   json.RawMessage `json:"id"`
		Meta Meta            `json:"_meta"`
	} `json:"context"`
	Meta Meta `json:"_meta"`
}

// invoke serves the export name with the given input and returns its
// output. A panicking handler is reported as an error.
func (r *registry) invoke(h hostAPI, name string, input []byte) (output []byte, err error) {
	fn, ok := exports[name]
	if !ok {
		return nil, fmt.Errorf("unknown export %q", name)
	}
	var env envelope
	if len(input) > 0 {
		if env, err = decodeEnvelope(input); err != nil {
			return nil, fmt.Errorf("invalid %s input: %w", name, err)
		}
	}
	ctx := &Context{ID: requestID(env.Context.ID), Meta: env.Context.Meta, host: h}
	if name == exportOnRootsListChanged && env.Meta != nil {
		// The schema's input is PluginNotificationContext itself,
		// {"_meta": ...}, which Hangar sends; some hosts wrap it in
		// "context" like the requests, which the line above read.
		ctx.Meta = env.Meta
	}
	if ctx.Meta == nil {
		ctx.Meta = Meta{}
	}

	defer func() {
		if p := recover(); p != nil {
			output, err = nil, fmt.Errorf("%s: panic: %v", name, p)
		}
	}()
	result, err := fn(r, ctx, env.Request)
	if err != nil || result == nil {
		return nil, err
	}
	if r, ok := result.(*CallToolResult); ok {
		if output, ok := appendTextResult(nil, r); ok {
			return output, nil
		}
	}
	if output, err = json.Marshal(result); err != nil {
		return nil, fmt.Errorf("encoding %s result: %w", name, err)
	}
	return output, nil
}

// decodeEnvelope decodes a v1 input: by splitEnvelope when it can, with
// encoding/json otherwise.
func decodeEnvelope(in []byte) (envelope, error) {
	if env, ok := fastEnvelope(in); ok {
		return env, nil
	}
	var env envelope
	err := json.Unmarshal(in, &env)
	return env, err
}

// fastEnvelope decodes a v1 input by splitEnvelope, or reports false.
func fastEnvelope(in []byte) (envelope, bool) {
	var env envelope
	p, ok := splitEnvelope(in)
	if !ok {
		return env, false
	}
	env.Request = json.RawMessage(p.request)
	env.Context.ID = json.RawMessage(p.id)
	if env.Context.Meta, ok = decodeMeta(p.meta); !ok {
		return env, false
	}
	env.Meta, ok = decodeMeta(p.topMeta)
	return env, ok
}

// decodeMeta decodes a _meta value, or reports false.
func decodeMeta(v []byte) (Meta, bool) {
	switch {
	case v == nil:
		return nil, true
	case isEmptyObject(v):
		return Meta{}, true
	}
	var m Meta
	return m, json.Unmarshal(v, &m) == nil
}

// requestID returns the request id as a string: Hangar sends a string,
// but a number is accepted too.
func requestID(raw json.RawMessage) string {
	if id, ok := plainString(raw); ok {
		return id
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// decodeRequest decodes the request of export name into v.
func decodeRequest(name string, request json.RawMessage, v any) error {
	if len(request) == 0 {
		return fmt.Errorf("%s: missing request", name)
	}
	if err := json.Unmarshal(request, v); err != nil {
		return fmt.Errorf("invalid %s request: %w", name, err)
	}
	return nil
}

func (r *registry) listTools(*Context, json.RawMessage) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tools := make([]Tool, 0, len(r.tools.keys))
	for _, e := range r.tools.values() {
		tools = append(tools, e.tool)
	}
	return struct {
		Tools []Tool `json:"tools"`
	}{tools}, nil
}

func (r *registry) callTool(ctx *Context, request json.RawMessage) (any, error) {
	var req CallToolRequest
	if name, args, ok := splitCallTool(request); ok {
		req = CallToolRequest{Name: name, Arguments: json.RawMessage(args)}
	} else if err := decodeRequest(exportCallTool, request, &req); err != nil {
		return nil, err
	}
	r.mu.Lock()
	e, ok := r.tools.get(req.Name)
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown tool %q", req.Name)
	}
	res, err := e.handler(ctx, &req)
	if err != nil {
		return &CallToolResult{
			Content: []Content{&TextContent{Text: err.Error()}},
			IsError: true,
		}, nil
	}
	out := CallToolResult{}
	if res != nil {
		out = *res
	}
	if out.Content == nil {
		out.Content = []Content{}
	}
	return &out, nil
}

func (r *registry) listResources(*Context, json.RawMessage) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	resources := make([]Resource, 0, len(r.resources.keys))
	for _, e := range r.resources.values() {
		resources = append(resources, e.resource)
	}
	return struct {
		Resources []Resource `json:"resources"`
	}{resources}, nil
}

func (r *registry) listResourceTemplates(*Context, json.RawMessage) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	templates := make([]ResourceTemplate, 0, len(r.templates.keys))
	for _, e := range r.templates.values() {
		templates = append(templates, e.template)
	}
	return struct {
		ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	}{templates}, nil
}

func (r *registry) readResource(ctx *Context, request json.RawMessage) (any, error) {
	var req ReadResourceRequest
	if err := decodeRequest(exportReadResource, request, &req); err != nil {
		return nil, err
	}
	handler, ok := r.resourceHandler(&req)
	if !ok {
		return nil, fmt.Errorf("resource %q not found", req.URI)
	}
	res, err := handler(ctx, &req)
	if err != nil {
		return nil, err
	}
	out := ReadResourceResult{}
	if res != nil {
		out = *res
	}
	if out.Contents == nil {
		out.Contents = []ResourceContents{}
	}
	return &out, nil
}

// resourceHandler finds the handler for req.URI: the fixed resource with
// that URI, or else the first template matching it, whose variables it
// stores in req.Vars.
func (r *registry) resourceHandler(req *ReadResourceRequest) (ResourceHandler, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.resources.get(req.URI); ok {
		return e.handler, true
	}
	for _, e := range r.templates.values() {
		if vars, ok := e.uri.match(req.URI); ok {
			req.Vars = vars
			return e.handler, true
		}
	}
	return nil, false
}

func (r *registry) listPrompts(*Context, json.RawMessage) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prompts := make([]Prompt, 0, len(r.prompts.keys))
	for _, e := range r.prompts.values() {
		prompts = append(prompts, e.prompt)
	}
	return struct {
		Prompts []Prompt `json:"prompts"`
	}{prompts}, nil
}

func (r *registry) getPrompt(ctx *Context, request json.RawMessage) (any, error) {
	var req GetPromptRequest
	if err := decodeRequest(exportGetPrompt, request, &req); err != nil {
		return nil, err
	}
	r.mu.Lock()
	e, ok := r.prompts.get(req.Name)
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown prompt %q", req.Name)
	}
	res, err := e.handler(ctx, &req)
	if err != nil {
		return nil, err
	}
	out := GetPromptResult{}
	if res != nil {
		out = *res
	}
	if out.Messages == nil {
		out.Messages = []*PromptMessage{}
	}
	return &out, nil
}

func (r *registry) complete(ctx *Context, request json.RawMessage) (any, error) {
	var req CompleteRequest
	if err := decodeRequest(exportComplete, request, &req); err != nil {
		return nil, err
	}
	req.Ref.Type = refType(req.Ref.Type)
	r.mu.Lock()
	handler := r.completion
	r.mu.Unlock()
	out := CompleteResult{}
	if handler != nil {
		res, err := handler(ctx, &req)
		if err != nil {
			return nil, err
		}
		if res != nil {
			out = *res
		}
	}
	c := &out.Completion
	if c.Values == nil {
		c.Values = []string{}
	}
	if len(c.Values) > maxCompletionValues {
		if c.Total == 0 {
			c.Total = len(c.Values)
		}
		c.Values, c.HasMore = c.Values[:maxCompletionValues], true
	}
	return &out, nil
}

// refType returns the reference type t in the form of [RefPrompt] and
// [RefResource]: the plugin schema's "prompt" and "resource", which Hangar
// sends, are MCP's "ref/prompt" and "ref/resource", which older hosts send.
func refType(t string) string {
	switch t {
	case "prompt":
		return RefPrompt
	case "resource":
		return RefResource
	}
	return t
}

func (r *registry) onRootsListChanged(ctx *Context, _ json.RawMessage) (any, error) {
	r.mu.Lock()
	handler := r.rootsListChanged
	r.mu.Unlock()
	if handler == nil {
		return nil, nil
	}
	return nil, handler(ctx)
}
