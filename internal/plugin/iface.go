package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Interface identifies the plugin interface a module speaks.
type Interface int

const (
	// V1 is the v1 schema (call_tool, list_tools, ... and host imports).
	V1 Interface = iota + 1
	// Servlet is describe/call plus resources.
	Servlet
	// Legacy is describe/call.
	Legacy
)

func (i Interface) String() string {
	switch i {
	case V1:
		return "v1"
	case Servlet:
		return "servlet"
	case Legacy:
		return "legacy"
	}
	return fmt.Sprintf("Interface(%d)", int(i))
}

// knownExports are the exports of all three interfaces.
var knownExports = []string{
	"call_tool", "list_tools", "list_prompts", "get_prompt",
	"list_resources", "list_resource_templates", "read_resource",
	"complete", "on_roots_list_changed", "describe", "call",
}

func detectExports(m *module) map[string]bool {
	ex := make(map[string]bool)
	for _, name := range knownExports {
		if m.has(name) {
			ex[name] = true
		}
	}
	return ex
}

func detectInterface(ex map[string]bool) (Interface, error) {
	switch {
	case ex["call_tool"] || ex["list_tools"]:
		if ex["call_tool"] != ex["list_tools"] {
			return 0, fmt.Errorf("%w: v1 plugin must export both list_tools and call_tool", ErrUnknownInterface)
		}
		return V1, nil
	case ex["call"] && ex["describe"]:
		if ex["list_resources"] || ex["list_resource_templates"] || ex["read_resource"] {
			return Servlet, nil
		}
		return Legacy, nil
	}
	return 0, ErrUnknownInterface
}

// v1Context is the "context" member of every v1 request.
type v1Context struct {
	ID   string `json:"id"`
	Meta any    `json:"_meta"` // a map[string]any, or json.RawMessage (Call.MetaJSON)
}

func (c *Call) v1() v1Context {
	if c == nil {
		return v1Context{Meta: map[string]any{}}
	}
	if c.MetaJSON != nil {
		return v1Context{ID: c.ID, Meta: c.MetaJSON}
	}
	meta := c.Meta
	if meta == nil {
		meta = map[string]any{}
	}
	return v1Context{ID: c.ID, Meta: meta}
}

type v1Request struct {
	Request any       `json:"request,omitempty"`
	Context v1Context `json:"context"`
}

// servletRequest is the input of servlet and legacy call and read_resource.
type servletRequest struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// run marshals in, invokes export and decodes its output into out.
func (p *Plugin) run(ctx context.Context, c *Call, export string, in any, out any) error {
	_, _, err := p.runWithin(ctx, c, export, in, out, p.opts.Limits.CallTimeout)
	return err
}

// runWithin is run with limit of running time; it reports the time the
// export took and the size of its output.
func (p *Plugin) runWithin(ctx context.Context, c *Call, export string, in any, out any, limit time.Duration) (time.Duration, int, error) {
	var input []byte
	if in != nil {
		var err error
		if input, err = json.Marshal(in); err != nil {
			return 0, 0, fmt.Errorf("encoding %s input: %w", export, err)
		}
	}
	return p.runEncoded(ctx, c, export, input, out, limit)
}

// runEncoded is runWithin with its input already encoded.
func (p *Plugin) runEncoded(ctx context.Context, c *Call, export string, input []byte, out any, limit time.Duration) (time.Duration, int, error) {
	output, spent, err := p.invokeWithin(ctx, c, export, input, limit)
	if err != nil {
		return spent, 0, err
	}
	if out == nil {
		return spent, len(output), nil
	}
	if err := decodeOutput(output, out); err != nil {
		return spent, len(output), fmt.Errorf("plugin %s: %s: %w", p.name, export, err)
	}
	return spent, len(output), nil
}

func decodeOutput(b []byte, out any) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: not valid UTF-8", ErrBadOutput)
	}
	if r, ok := out.(*toolResult); ok {
		// What json.Unmarshal would come to (toolResult.UnmarshalJSON),
		// without its pass over the output to check it: plainTextResult
		// checks what it accepts itself.
		if plainTextResult(b, &r.CallToolResult) {
			return nil
		}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Errorf("%w: empty output", ErrBadOutput)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: %v", ErrBadOutput, err)
	}
	return nil
}

// maxPages bounds the pages Hangar follows through a v1 list.
const maxPages = 1000

// listV1 collects every page of a v1 list export. For the limits, a listing
// is one call: its pages share the call timeout and the output limit, so
// that a plugin cannot hold Hangar for a thousand timeouts or make it keep
// a thousand outputs; and a cursor may not come back, so that a plugin
// cannot send Hangar round in circles.
func listV1[T any](ctx context.Context, p *Plugin, c *Call, export string, items func(*T) ([]json.RawMessage, string)) ([]json.RawMessage, error) {
	var all []json.RawMessage
	left := p.opts.Limits.CallTimeout
	var size int64
	seen := map[string]bool{}
	cursor := ""
	for range maxPages {
		req := v1Request{Context: c.v1()}
		if cursor != "" {
			req.Request = map[string]string{"cursor": cursor}
		}
		var page T
		spent, n, err := p.runWithin(ctx, c, export, req, &page, left)
		if err != nil {
			return nil, err
		}
		left -= spent
		if size += int64(n); size > p.opts.Limits.MaxOutput {
			return nil, fmt.Errorf("plugin %s: %s: %w (more than %d bytes over %d pages)", p.name, export, ErrOutputTooLarge, p.opts.Limits.MaxOutput, len(seen)+1)
		}
		got, next := items(&page)
		all = append(all, got...)
		if next == "" {
			return all, nil
		}
		if seen[next] || next == cursor {
			return nil, fmt.Errorf("plugin %s: %s: %w: cursor %.64q came back", p.name, export, ErrBadOutput, next)
		}
		seen[next] = true
		cursor = next
	}
	return nil, fmt.Errorf("plugin %s: %s: %w: more than %d pages", p.name, export, ErrBadOutput, maxPages)
}

// maxItemErrors bounds the items of one list whose problems are logged one
// by one; the rest are counted.
const maxItemErrors = 10

// decodeItems decodes each raw item, dropping (and logging) the ones that
// fail check, so that one bad entry does not hide a plugin's other features.
func decodeItems[T any](p *Plugin, what string, raws []json.RawMessage, check func(*T) error) []*T {
	out := make([]*T, 0, len(raws))
	bad := 0
	for i, raw := range raws {
		v := new(T)
		err := json.Unmarshal(raw, v)
		msg := "ignoring malformed " + what
		if err == nil {
			if err = check(v); err != nil {
				msg = "ignoring invalid " + what
			}
		}
		if err != nil {
			if bad++; bad <= maxItemErrors {
				p.log.Error(msg, "index", i, "error", err)
			}
			continue
		}
		out = append(out, v)
	}
	if bad > maxItemErrors {
		p.log.Error(fmt.Sprintf("ignoring %d more bad %s entries", bad-maxItemErrors, what))
	}
	return out
}

// ListTools returns the plugin's tools. Tools without a name or without an
// object input schema are left out and logged.
func (p *Plugin) ListTools(ctx context.Context, c *Call) ([]*mcp.Tool, error) {
	var raws []json.RawMessage
	var err error
	if p.iface == V1 {
		raws, err = p.list(ctx, c, "list_tools", "tools")
	} else {
		var out json.RawMessage
		if err = p.run(ctx, c, "describe", nil, &out); err == nil {
			if raws, err = describedTools(out); err != nil {
				err = fmt.Errorf("plugin %s: describe: %w", p.name, err)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return decodeItems(p, "tool", raws, checkTool), nil
}

// describedTools accepts what servlet and legacy describe return: one tool,
// an array of tools, or {"tools": [...]}.
func describedTools(b json.RawMessage) ([]json.RawMessage, error) {
	switch b := bytes.TrimSpace(b); {
	case len(b) > 0 && b[0] == '[':
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadOutput, err)
		}
		return list, nil
	case len(b) > 0 && b[0] == '{':
		var probe struct {
			Tools []json.RawMessage `json:"tools"`
			Name  *string           `json:"name"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadOutput, err)
		}
		if probe.Name != nil {
			return []json.RawMessage{b}, nil
		}
		return probe.Tools, nil
	}
	return nil, fmt.Errorf("%w: describe must return a tool, an array of tools or {\"tools\": [...]}", ErrBadOutput)
}

func checkTool(t *mcp.Tool) error {
	if t.Name == "" {
		return fmt.Errorf("tool has no name")
	}
	schema, ok := t.InputSchema.(map[string]any)
	if !ok {
		return fmt.Errorf("tool %q: inputSchema must be a JSON object", t.Name)
	}
	if schema["type"] != "object" {
		return fmt.Errorf("tool %q: inputSchema must have \"type\": \"object\"", t.Name)
	}
	if t.OutputSchema != nil {
		if o, ok := t.OutputSchema.(map[string]any); !ok || o["type"] != "object" {
			return fmt.Errorf("tool %q: outputSchema must be a JSON object with \"type\": \"object\"", t.Name)
		}
	}
	return nil
}

// CallTool calls a tool. args is the JSON object of arguments (nil means
// none). An error the plugin reports about the call comes back as a
// *PluginError; the caller decides how to show it.
func (p *Plugin) CallTool(ctx context.Context, c *Call, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = json.RawMessage("{}") // the schema's arguments is an object
	}
	input, err := appendCallToolInput(make([]byte, 0, 128+len(name)+len(args)), p.iface == V1, c, name, args)
	if err != nil {
		return nil, fmt.Errorf("encoding the input of tool %s: %w", name, err)
	}
	export := "call"
	if p.iface == V1 {
		export = "call_tool"
	}
	var out toolResult
	if _, _, err = p.runEncoded(ctx, c, export, input, &out, p.opts.Limits.CallTimeout); err != nil {
		return nil, crashedTool(err, name) // errors.go
	}
	res := &out.CallToolResult
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return res, nil
}

// ListResources returns the plugin's resources (none for legacy plugins).
func (p *Plugin) ListResources(ctx context.Context, c *Call) ([]*mcp.Resource, error) {
	raws, err := p.list(ctx, c, "list_resources", "resources")
	if err != nil {
		return nil, err
	}
	return decodeItems(p, "resource", raws, func(r *mcp.Resource) error {
		if r.URI == "" || r.Name == "" {
			return fmt.Errorf("resource %q: uri and name are required", r.URI)
		}
		return nil
	}), nil
}

// ListResourceTemplates returns the plugin's resource templates.
func (p *Plugin) ListResourceTemplates(ctx context.Context, c *Call) ([]*mcp.ResourceTemplate, error) {
	raws, err := p.list(ctx, c, "list_resource_templates", "resourceTemplates")
	if err != nil {
		return nil, err
	}
	return decodeItems(p, "resource template", raws, func(r *mcp.ResourceTemplate) error {
		if r.URITemplate == "" || r.Name == "" {
			return fmt.Errorf("resource template %q: uriTemplate and name are required", r.URITemplate)
		}
		return nil
	}), nil
}

// ListPrompts returns the plugin's prompts (v1 only).
func (p *Plugin) ListPrompts(ctx context.Context, c *Call) ([]*mcp.Prompt, error) {
	if p.iface != V1 {
		return nil, nil
	}
	raws, err := p.list(ctx, c, "list_prompts", "prompts")
	if err != nil {
		return nil, err
	}
	return decodeItems(p, "prompt", raws, func(r *mcp.Prompt) error {
		if r.Name == "" {
			return fmt.Errorf("prompt has no name")
		}
		return nil
	}), nil
}

// list runs a list export that returns {key: [...], nextCursor?}. A plugin
// without the export has an empty list.
func (p *Plugin) list(ctx context.Context, c *Call, export, key string) ([]json.RawMessage, error) {
	if !p.exports[export] || p.iface == Legacy {
		return nil, nil
	}
	items := func(pg *map[string]json.RawMessage) ([]json.RawMessage, string) {
		var list []json.RawMessage
		var next string
		json.Unmarshal((*pg)[key], &list)
		json.Unmarshal((*pg)["nextCursor"], &next)
		return list, next
	}
	if p.iface == V1 {
		return listV1(ctx, p, c, export, items)
	}
	var page map[string]json.RawMessage
	if err := p.run(ctx, c, export, nil, &page); err != nil {
		return nil, err
	}
	list, _ := items(&page)
	return list, nil
}

// ReadResource reads the resource at uri.
func (p *Plugin) ReadResource(ctx context.Context, c *Call, uri string) (*mcp.ReadResourceResult, error) {
	if !p.exports["read_resource"] || p.iface == Legacy {
		return nil, fmt.Errorf("plugin %s: read_resource: %w", p.name, ErrNotSupported)
	}
	params := map[string]string{"uri": uri}
	var res mcp.ReadResourceResult
	var err error
	if p.iface == V1 {
		err = p.run(ctx, c, "read_resource", v1Request{Request: params, Context: c.v1()}, &res)
	} else {
		err = p.run(ctx, c, "read_resource", servletRequest{Method: "resources/read", Params: params}, &res)
	}
	if err != nil {
		return nil, err
	}
	if res.Contents == nil {
		return nil, fmt.Errorf("plugin %s: read_resource: %w: no contents", p.name, ErrBadOutput)
	}
	return &res, nil
}

// GetPrompt renders the named prompt.
func (p *Plugin) GetPrompt(ctx context.Context, c *Call, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	if !p.exports["get_prompt"] || p.iface != V1 {
		return nil, fmt.Errorf("plugin %s: get_prompt: %w", p.name, ErrNotSupported)
	}
	if args == nil {
		args = map[string]string{}
	}
	req := map[string]any{"name": name, "arguments": args}
	var out promptResult
	if err := p.run(ctx, c, "get_prompt", v1Request{Request: req, Context: c.v1()}, &out); err != nil {
		return nil, err
	}
	res := &out.GetPromptResult
	if res.Messages == nil {
		res.Messages = []*mcp.PromptMessage{}
	}
	return res, nil
}

// v1CompleteRequest is the request of the complete export, in the names of
// the schema's CompleteRequestParam.
type v1CompleteRequest struct {
	Ref      v1CompleteRef              `json:"ref"`
	Argument mcp.CompleteParamsArgument `json:"argument"`
	Context  *mcp.CompleteContext       `json:"context,omitempty"`
}

// v1CompleteRef is the schema's PromptReference ({"type": "prompt", "name"})
// or ResourceTemplateReference ({"type": "resource", "uri"}).
type v1CompleteRef struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"`
	URI  *string `json:"uri,omitempty"`
}

// v1Ref translates an MCP completion reference to the schema's: MCP's types
// "ref/prompt" and "ref/resource" are "prompt" and "resource" there.
func v1Ref(r *mcp.CompleteReference) (v1CompleteRef, error) {
	if r == nil {
		return v1CompleteRef{}, errors.New("missing ref")
	}
	switch r.Type {
	case "ref/prompt", "prompt":
		return v1CompleteRef{Type: "prompt", Name: &r.Name}, nil
	case "ref/resource", "resource":
		return v1CompleteRef{Type: "resource", URI: &r.URI}, nil
	}
	return v1CompleteRef{}, fmt.Errorf("unknown reference type %q", r.Type)
}

// Complete asks the plugin for completions. The reference is passed in the
// schema's form (see v1Ref); params' _meta reaches the plugin as
// context._meta, through c.
func (p *Plugin) Complete(ctx context.Context, c *Call, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if !p.exports["complete"] || p.iface != V1 {
		return nil, fmt.Errorf("plugin %s: complete: %w", p.name, ErrNotSupported)
	}
	ref, err := v1Ref(params.Ref)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: complete: %w", p.name, err)
	}
	req := v1CompleteRequest{Ref: ref, Argument: params.Argument, Context: params.Context}
	var res mcp.CompleteResult
	if err := p.run(ctx, c, "complete", v1Request{Request: req, Context: c.v1()}, &res); err != nil {
		return nil, err
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return &res, nil
}

// RootsListChanged tells a v1 plugin that exports on_roots_list_changed
// that the client's roots changed. Other plugins ignore it.
func (p *Plugin) RootsListChanged(ctx context.Context, c *Call) error {
	if !p.exports["on_roots_list_changed"] || p.iface != V1 {
		return nil
	}
	// The schema's PluginNotificationContext is {"_meta": ...}; bindings
	// written by hand for it (hyper-mcp's) read "meta". Both get it.
	meta := c.v1().Meta
	return p.run(ctx, c, "on_roots_list_changed", map[string]any{"_meta": meta, "meta": meta}, nil)
}
