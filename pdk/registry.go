package pdk

import "sync"

// registry holds what a plugin offers and the handlers serving it.
type registry struct {
	mu               sync.Mutex
	tools            ordered[toolEntry]
	resources        ordered[resourceEntry]
	templates        ordered[templateEntry]
	prompts          ordered[promptEntry]
	completion       CompletionHandler
	rootsListChanged RootsListChangedHandler
	// writeUI writes a tool's UI into its _meta (withToolUI, app.go). It
	// is nil until the plugin offers a view (AddApp), and a tool added
	// before keeps its UI until then: only a plugin with views links the
	// code (see AddApp).
	writeUI func(name string, meta Meta, ui *ToolUI) Meta
}

type toolEntry struct {
	tool    Tool
	handler ToolHandler
}

type resourceEntry struct {
	resource Resource
	handler  ResourceHandler
}

type templateEntry struct {
	template ResourceTemplate
	// match is the parsed template's match method, held as a function so
	// that a plugin without templates links no matcher: only
	// AddResourceTemplate reaches the method (about 8 KB of code).
	match   func(uri string) (map[string]string, bool)
	handler ResourceHandler
}

type promptEntry struct {
	prompt  Prompt
	handler PromptHandler
}

// RootsListChangedHandler is called when the client's roots change. The
// Context has no request id.
type RootsListChangedHandler func(ctx *Context) error

// plugin is the registry behind the package-level functions and exports.
var plugin = new(registry)

// AddTool offers a tool, replacing any tool of the same name. A tool
// without InputSchema advertises {"type":"object"}.
//
// Tools are usually added from init functions. When the plugin adds or
// removes tools later, it should call [Context.NotifyToolListChanged].
// AddTool panics if the name is empty, h is nil or Task is unknown. A
// Tool.UI that hosts would refuse makes AddTool panic too, or [AddApp]
// when the plugin offers its first view after adding the tool.
func AddTool(t *Tool, h ToolHandler) {
	if t.Name == "" || h == nil {
		panic("pdk: AddTool needs a tool name and a handler")
	}
	tool := *t
	if tool.InputSchema == nil {
		tool.InputSchema = map[string]any{"type": "object"}
	}
	switch tool.Task {
	case TaskAuto:
	case TaskNever, TaskAlways, TaskRequired:
		meta := make(Meta, len(tool.Meta)+1)
		for k, v := range tool.Meta {
			meta[k] = v
		}
		meta[TaskMetaKey] = string(tool.Task)
		tool.Meta = meta
	default:
		panic("pdk: AddTool: unknown Tool.Task " + string(tool.Task) + " (TaskAuto, TaskNever, TaskAlways or TaskRequired)")
	}
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	if tool.UI != nil && plugin.writeUI != nil {
		tool.Meta, tool.UI = plugin.writeUI(tool.Name, tool.Meta, tool.UI), nil
	}
	plugin.tools.put(tool.Name, toolEntry{tool, h})
}

// RemoveTools withdraws the named tools; unknown names are ignored.
func RemoveTools(names ...string) {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.tools.delete(names...)
}

// AddResource offers a resource with a fixed URI, replacing any resource
// with the same URI. Reads of that URI go to h, in preference to resource
// templates.
//
// When the plugin adds or removes resources after init, it should call
// [Context.NotifyResourceListChanged]. AddResource panics if the URI or
// name is empty or h is nil.
func AddResource(r *Resource, h ResourceHandler) {
	if r.URI == "" || r.Name == "" || h == nil {
		panic("pdk: AddResource needs a resource URI, a name and a handler")
	}
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.resources.put(r.URI, resourceEntry{*r, h})
}

// RemoveResources withdraws the resources with the given URIs; unknown
// URIs are ignored.
func RemoveResources(uris ...string) {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.resources.delete(uris...)
}

// AddResourceTemplate offers a resource template, replacing any template
// with the same URI template. Reads of URIs that match the template, and
// no fixed resource, go to h with the template variables in
// [ReadResourceRequest.Vars]; templates are tried in the order they were
// added.
//
// Only RFC 6570 level-1 templates are supported: literal text and {name}
// expressions. A variable matches one or more characters other than '/',
// '?' and '#', and its value is percent-decoded. AddResourceTemplate
// panics if the template is not a valid level-1 template, the name is
// empty or h is nil.
func AddResourceTemplate(t *ResourceTemplate, h ResourceHandler) {
	if t.Name == "" || h == nil {
		panic("pdk: AddResourceTemplate needs a template name and a handler")
	}
	parsed, err := parseURITemplate(t.URITemplate)
	if err != nil {
		panic("pdk: AddResourceTemplate: " + err.Error())
	}
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.templates.put(t.URITemplate, templateEntry{*t, parsed.match, h})
}

// RemoveResourceTemplates withdraws the templates with the given URI
// templates; unknown ones are ignored.
func RemoveResourceTemplates(uriTemplates ...string) {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.templates.delete(uriTemplates...)
}

// AddPrompt offers a prompt, replacing any prompt of the same name.
//
// When the plugin adds or removes prompts after init, it should call
// [Context.NotifyPromptListChanged]. AddPrompt panics if the name is
// empty or h is nil.
func AddPrompt(p *Prompt, h PromptHandler) {
	if p.Name == "" || h == nil {
		panic("pdk: AddPrompt needs a prompt name and a handler")
	}
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.prompts.put(p.Name, promptEntry{*p, h})
}

// RemovePrompts withdraws the named prompts; unknown names are ignored.
func RemovePrompts(names ...string) {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.prompts.delete(names...)
}

// SetCompletionHandler sets the handler of completion requests for all
// prompts and resource templates of the plugin. Without one, completion
// requests get no suggestions.
func SetCompletionHandler(h CompletionHandler) {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.completion = h
}

// SetRootsListChangedHandler sets the handler called when the client
// reports that its roots changed. The handler may call
// [Context.ListRoots] to get the new list.
func SetRootsListChangedHandler(h RootsListChangedHandler) {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.rootsListChanged = h
}

// ordered is a map that remembers the order in which keys were first
// added.
type ordered[T any] struct {
	keys  []string
	items map[string]T
}

func (o *ordered[T]) put(key string, v T) {
	if o.items == nil {
		o.items = make(map[string]T)
	}
	if _, ok := o.items[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.items[key] = v
}

func (o *ordered[T]) get(key string) (T, bool) {
	v, ok := o.items[key]
	return v, ok
}

func (o *ordered[T]) delete(keys ...string) {
	for _, k := range keys {
		delete(o.items, k)
	}
	kept := o.keys[:0]
	for _, k := range o.keys {
		if _, ok := o.items[k]; ok {
			kept = append(kept, k)
		}
	}
	o.keys = kept
}

// values returns the values in key order.
func (o *ordered[T]) values() []T {
	vs := make([]T, 0, len(o.keys))
	for _, k := range o.keys {
		vs = append(vs, o.items[k])
	}
	return vs
}
