package core

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// lists selects which of a plugin's lists to read.
type lists = plugin.ListSet

const (
	listTools     = lists(1) << plugin.ToolList
	listResources = lists(1) << plugin.ResourceList
	listPrompts   = lists(1) << plugin.PromptList

	allLists = plugin.AllLists
)

// catalog is what one plugin offers.
type catalog struct {
	tools     []*toolEntry
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
	seq       uint64 // plugin.Lists.Seq of the reading
}

type toolEntry struct {
	tool   *mcp.Tool
	schema *jsonschema.Resolved
	// expected marks a tool of lists a loading plugin is expected to
	// offer: its calls check the arguments again once it is loaded.
	expected bool
	simple   *simpleSchema // nil unless the schema is simple
	// appOnly marks a tool meant only for views (apps.go): only UI
	// hosts see and call it.
	appOnly bool
}

// list reads the selected lists from the plugin.
func (m *mount) list(ctx context.Context, which lists) (*catalog, error) {
	l, err := m.Plugin.ReadLists(ctx, which)
	if err != nil {
		return nil, err
	}
	return m.catalogOf(l), nil
}

// catalogOf turns lists read from the plugin into a catalog. Tools whose
// name MCP refuses, or whose input schema cannot be compiled, are left
// out, with an error in the log (once for each) and in the metrics.
func (m *mount) catalogOf(l *plugin.Lists) *catalog {
	c := &catalog{seq: l.Seq, resources: l.Resources, templates: l.Templates, prompts: l.Prompts}
	for _, t := range l.Tools {
		if why, refused := validToolName(m.exposedName(t.Name)); refused {
			m.refuse(Tools, t.Name, reasonInvalid, why)
			continue
		} else if why != "" {
			m.warn(Tools, t.Name, why)
		}
		schema, err := compileSchema(t.InputSchema)
		if err != nil {
			m.refuse(Tools, t.Name, reasonInvalid, "its input schema is invalid: "+err.Error())
			continue
		}
		if mode, ok := m.TaskModes[t.Name]; ok {
			t = withTaskMode(t, mode)
		}
		t = m.withExposedUI(t) // apps.go
		c.tools = append(c.tools, &toolEntry{tool: t, schema: schema, expected: m.Loading != nil && l.Seq == 0, simple: simplify(t.InputSchema), appOnly: appOnly(t)})
	}
	return c
}

// withTaskMode returns a copy of t whose _meta says mode under
// wire.MetaTask (the configuration's override of the plugin's choice);
// "auto" removes the key. t is the plugin's lists', left as it is.
func withTaskMode(t *mcp.Tool, mode string) *mcp.Tool {
	c := *t
	c.Meta = mcp.Meta{}
	for k, v := range t.Meta {
		c.Meta[k] = v
	}
	if mode == "auto" {
		delete(c.Meta, wire.MetaTask)
	} else {
		c.Meta[wire.MetaTask] = mode
	}
	if len(c.Meta) == 0 {
		c.Meta = nil
	}
	return &c
}

func compileSchema(schema any) (*jsonschema.Resolved, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// apply makes the core offer exactly what c lists for the selected lists,
// adding, replacing and withdrawing items. An item another plugin already
// offers is left out, with an error in the log. A list read before the one
// the core offers (by another instance of the plugin, which finished
// later) is ignored. apply returns the lists it applied.
func (m *mount) apply(c *catalog, which lists) lists {
	core := m.core
	core.mu.Lock()
	defer core.mu.Unlock()
	if m.retired {
		return 0 // a late refresh of a plugin a reload replaced
	}
	if !core.claims.initial {
		core.claims.seq++
		core.claims.current = core.claims.seq
	}
	for _, k := range []plugin.ListKind{plugin.ToolList, plugin.ResourceList, plugin.PromptList} {
		if which.Has(k) {
			if c.seq < m.seq[k] {
				which &^= k.Set()
			} else {
				m.seq[k] = c.seq
			}
		}
	}

	if which&listTools != 0 {
		keep := map[string]bool{}
		for _, t := range c.tools {
			name := m.exposedName(t.tool.Name)
			if !m.claim(core.tools, Tools, name) {
				continue
			}
			tool := *t.tool
			tool.Name = name
			if !m.offer(core.tools, Tools, name, &tool) {
				continue
			}
			keep[name] = true
			m.toolEntries[name] = t
		}
		m.release(core.tools, Tools, keep)
	}
	if which&listResources != 0 {
		keep := map[string]bool{}
		for _, r := range c.resources {
			uri := m.exposedURI(r.URI)
			if !m.claim(core.resources, Resources, uri) {
				continue
			}
			res := *r
			res.URI = uri
			if !m.offer(core.resources, Resources, uri, &res) {
				continue
			}
			keep[uri] = true
			m.mimeTypes[uri] = r.MIMEType
		}
		m.release(core.resources, Resources, keep)

		keep = map[string]bool{}
		for _, t := range c.templates {
			uri := m.exposedURI(t.URITemplate)
			if !m.claim(core.templates, Templates, uri) {
				continue
			}
			tmpl := *t
			tmpl.URITemplate = uri
			if !m.offer(core.templates, Templates, uri, &tmpl) {
				continue
			}
			keep[uri] = true
			m.mimeTypes[uri] = t.MIMEType
		}
		m.release(core.templates, Templates, keep)
		core.templateOrder = nil
	}
	if which&listPrompts != 0 {
		keep := map[string]bool{}
		for _, p := range c.prompts {
			name := m.exposedName(p.Name)
			if !m.claim(core.prompts, Prompts, name) {
				continue
			}
			prompt := *p
			prompt.Name = name
			if !m.offer(core.prompts, Prompts, name, &prompt) {
				continue
			}
			keep[name] = true
		}
		m.release(core.prompts, Prompts, keep)
	}
	return which
}

// release withdraws m's items that are not in keep. core.mu must be held.
func (m *mount) release(owners map[string]*mount, kind Kind, keep map[string]bool) {
	var gone []string
	for key, owner := range owners {
		if owner == m && !keep[key] {
			gone = append(gone, key)
			m.core.unclaim(owners, kind, key)
		}
	}
	if len(gone) > 0 {
		for _, l := range m.core.listeners {
			l.Withdraw(kind, gone...)
		}
	}
}

// offer offers item, of the kind and with the key given, on every
// listener, and reports whether they all took it. A listener that refuses
// it (the go-sdk refuses an invalid URI template, say) has the refusal
// logged, and the item is not offered at all: it loses its claim in
// owners, and is withdrawn from every listener, with any earlier item of
// its key. core.mu must be held.
func (m *mount) offer(owners map[string]*mount, kind Kind, key string, item any) bool {
	for _, l := range m.core.listeners {
		if err := l.Offer(item); err != nil {
			m.refuse(kind, key, reasonInvalid, err.Error())
			m.core.unclaim(owners, kind, key)
			for _, l := range m.core.listeners {
				l.Withdraw(kind, key)
			}
			return false
		}
	}
	return true
}

// ListsChanged implements plugin.Events: offer the lists the plugin read
// again after it reported a change. It runs in the plugin's call, which
// waits for it, so that the client that made the call sees the new lists as
// soon as it has the result.
func (m *mount) ListsChanged(l *plugin.Lists) {
	m.core.changed(m.apply(m.catalogOf(l), l.Read))
}

// ResourceUpdated implements plugin.Events: tell the listeners. The
// notifications are sent in the background, one URI at a time; a URI
// already waiting is not queued twice, and past maxPendingUpdates waiting
// URIs further ones are dropped, so that a plugin sending them in a loop
// holds neither its call nor unbounded memory or goroutines.
func (m *mount) ResourceUpdated(uri string) {
	m.core.mu.Lock()
	retired := m.retired
	m.core.mu.Unlock()
	if retired {
		return
	}
	u := &m.updates
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.pending[uri]; ok {
		return
	}
	if len(u.order) >= maxPendingUpdates {
		u.dropped++
		return
	}
	if u.pending == nil {
		u.pending = map[string]bool{}
	}
	u.pending[uri] = true
	u.order = append(u.order, uri)
	if !u.sending {
		u.sending = true
		go m.sendUpdates()
	}
}

// maxPendingUpdates bounds the resource-updated notifications of one plugin
// waiting to be sent.
const maxPendingUpdates = 1024

// resourceUpdates are a plugin's resource-updated notifications waiting to
// be sent.
type resourceUpdates struct {
	mu      sync.Mutex
	pending map[string]bool
	order   []string
	sending bool // a goroutine is sending them
	dropped int
}

// sendUpdates sends the waiting resource-updated notifications, until none
// is left.
func (m *mount) sendUpdates() {
	u := &m.updates
	for {
		u.mu.Lock()
		if dropped := u.dropped; dropped > 0 {
			u.dropped = 0
			m.core.log.Warn("dropped resource-updated notifications: too many at once", "plugin", m.name, "dropped", dropped)
		}
		if len(u.order) == 0 {
			u.sending = false
			u.order = nil
			u.mu.Unlock()
			return
		}
		uri := u.order[0]
		u.order = u.order[1:]
		delete(u.pending, uri)
		u.mu.Unlock()
		m.core.mu.Lock()
		listeners := m.core.listeners
		m.core.mu.Unlock()
		for _, l := range listeners {
			if err := l.ResourceUpdated(m.exposedURI(uri)); err != nil {
				m.core.log.Warn("notifying resource update", "plugin", m.name, "uri", uri, "error", err)
			}
		}
	}
}
