package pdk

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/hangar-mcp/hangar/pdk/internal/fastjson"
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

// exportFunc serves one export: it decodes the request of the frame's
// envelope and returns the result to encode as output, or nil for no
// output.
type exportFunc func(r *registry, f *frame) (any, error)

// frame is what serving one export allocates: the envelope, the Context
// handed to the handler and, for call_tool, the request. One allocation,
// where three would cost three times as much in a guest.
type frame struct {
	env envelope
	ctx Context
	req CallToolRequest
	// about names what a request other than call_tool is for, in the
	// error of a handler that panics (see subject).
	about string
	// id holds the text of ctx.ID when it fits (see requestID); nothing
	// writes it again.
	id [24]byte
}

// subject names what the request of export name was for, as the error of
// a handler that panicked starts: the tool, the resource's URI, the
// prompt, or else the export.
func (f *frame) subject(name string) string {
	switch {
	case name == exportCallTool && f.req.Name != "":
		return f.req.Name
	case name == exportComplete:
		return "completion of " + f.about
	case f.about != "":
		return f.about
	}
	return name
}

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

	// call is the request split by the fast path (see splitEnvelope).
	call callParts
}

// invoke serves the export name with the given input and returns its
// output. A panicking handler is reported as an error.
func (r *registry) invoke(h hostAPI, name string, input []byte) (output []byte, err error) {
	fn, ok := exports[name]
	if !ok {
		return nil, fmt.Errorf("unknown export %q", name)
	}
	return r.serve(h, name, fn, input, nil)
}

// serve serves the export name, whose function is fn, with the given
// input and returns its output. A panicking handler is reported as an
// error. A text result is encoded into buf (appended to buf[:0]) when it
// fits there, so that a caller that is done with each output before the
// next can save the allocation of a buffer.
func (r *registry) serve(h hostAPI, name string, fn exportFunc, input, buf []byte) (output []byte, err error) {
	f := new(frame)
	env := &f.env
	if len(input) > 0 {
		if err = decodeEnvelope(input, env); err != nil {
			return nil, fmt.Errorf("invalid %s input: %w", name, err)
		}
	}
	f.ctx = Context{ID: requestID(env.Context.ID, f.id[:]), Meta: env.Context.Meta, host: h}
	ctx := &f.ctx
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
			output, err = nil, panicError(f.subject(name), p) // panic.go
		}
	}()
	result, err := fn(r, f)
	if err != nil || result == nil {
		return nil, err
	}
	if r, ok := result.(*CallToolResult); ok {
		if output, ok := appendTextResult(buf[:0], r); ok {
			return output, nil
		}
	}
	if output, err = json.Marshal(result); err != nil {
		return nil, fmt.Errorf("encoding %s result: %w", name, err)
	}
	return output, nil
}

// decodeEnvelope decodes a v1 input into env: by splitEnvelope when it
// can, with encoding/json otherwise.
func decodeEnvelope(in []byte, env *envelope) error {
	if fastEnvelope(in, env) {
		return nil
	}
	*env = envelope{}
	return json.Unmarshal(in, env)
}

// fastEnvelope decodes a v1 input into env by splitEnvelope, or reports
// false.
func fastEnvelope(in []byte, env *envelope) bool {
	p, ok := splitEnvelope(in)
	if !ok {
		return false
	}
	env.Request = json.RawMessage(p.request)
	env.call = p.call
	env.Context.ID = json.RawMessage(p.id)
	if env.Context.Meta, ok = decodeMeta(p.meta); !ok {
		return false
	}
	env.Meta, ok = decodeMeta(p.topMeta)
	return ok
}

// decodeMeta decodes a _meta value, or reports false: by
// fastjson.Object when it can (a request of MCP 2026-07-28 carries the
// client's capabilities in every _meta, which encoding/json took a Go
// guest some 30 µs to decode), with encoding/json otherwise.
func decodeMeta(v []byte) (Meta, bool) {
	switch {
	case v == nil:
		return nil, true
	case isEmptyObject(v):
		return Meta{}, true
	}
	if m, ok := fastjson.Object(v); ok {
		return m, true
	}
	var m Meta
	return m, json.Unmarshal(v, &m) == nil
}

// requestID returns the request id as a string: Hangar sends a string,
// but a number is accepted too (as its JSON text). raw is valid JSON (the
// envelope was checked). A plain string of more than one byte that fits in
// buf is copied there and the result refers to it, with no allocation
// (which costs a Go guest some 400 ns): the caller must never write buf
// again. (A string of one byte costs no allocation either.)
func requestID(raw json.RawMessage, buf []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		if end, f, ok := fastjson.String(raw, 0); ok && end == len(raw) {
			id := raw[1 : end-1]
			if fastjson.Plain(id, f) && len(id) > 1 && len(id) <= len(buf) {
				return unsafe.String(&buf[0], copy(buf, id))
			}
			return fastjson.Unquote(id, f) // as encoding/json reads it
		}
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

func (r *registry) listTools(*frame) (any, error) {
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

func (r *registry) callTool(f *frame) (any, error) {
	env, req := &f.env, &f.req
	var e toolEntry
	var ok bool
	if c := env.call; c.ok {
		// The name as the tool was registered: the same string, without
		// allocating another.
		r.mu.Lock()
		e, ok = r.tools.items[string(c.name)]
		r.mu.Unlock()
		req.Name, req.Arguments = e.tool.Name, json.RawMessage(c.arguments)
		if !ok {
			req.Name = string(c.name)
		}
	} else {
		if name, args, split := splitCallTool(env.Request); split {
			req.Name, req.Arguments = name, json.RawMessage(args)
		} else if err := decodeRequest(exportCallTool, env.Request, req); err != nil {
			return nil, err
		}
		r.mu.Lock()
		e, ok = r.tools.get(req.Name)
		r.mu.Unlock()
	}
	if !ok {
		return nil, fmt.Errorf("unknown tool %q", req.Name)
	}
	res, err := e.handler(&f.ctx, req)
	if err != nil {
		return &CallToolResult{
			Content: []Content{&TextContent{Text: err.Error()}},
			IsError: true,
		}, nil
	}
	if res != nil && res.Content != nil {
		return res, nil // only encoded: never changed
	}
	out := CallToolResult{}
	if res != nil {
		out = *res
	}
	out.Content = []Content{}
	return &out, nil
}

func (r *registry) listResources(*frame) (any, error) {
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

func (r *registry) listResourceTemplates(*frame) (any, error) {
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

func (r *registry) readResource(f *frame) (any, error) {
	ctx, env := &f.ctx, &f.env
	var req ReadResourceRequest
	if err := decodeRequest(exportReadResource, env.Request, &req); err != nil {
		return nil, err
	}
	f.about = req.URI
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
		if vars, ok := e.match(req.URI); ok {
			req.Vars = vars
			return e.handler, true
		}
	}
	return nil, false
}

func (r *registry) listPrompts(*frame) (any, error) {
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

func (r *registry) getPrompt(f *frame) (any, error) {
	ctx, env := &f.ctx, &f.env
	var req GetPromptRequest
	if err := decodeRequest(exportGetPrompt, env.Request, &req); err != nil {
		return nil, err
	}
	f.about = req.Name
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

func (r *registry) complete(f *frame) (any, error) {
	ctx, env := &f.ctx, &f.env
	var req CompleteRequest
	if err := decodeRequest(exportComplete, env.Request, &req); err != nil {
		return nil, err
	}
	req.Ref.Type = refType(req.Ref.Type)
	f.about = req.Ref.Name + req.Ref.URI // one of them is empty: no allocation
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

func (r *registry) onRootsListChanged(f *frame) (any, error) {
	r.mu.Lock()
	handler := r.rootsListChanged
	r.mu.Unlock()
	if handler == nil {
		return nil, nil
	}
	return nil, handler(&f.ctx)
}
