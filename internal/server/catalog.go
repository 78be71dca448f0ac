package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// lists selects which of a plugin's lists to read.
type lists uint8

const (
	listTools lists = 1 << iota
	listResources
	listPrompts

	allLists = listTools | listResources | listPrompts
)

func listsOf(kind plugin.ListKind) lists {
	switch kind {
	case plugin.ToolList:
		return listTools
	case plugin.ResourceList:
		return listResources
	case plugin.PromptList:
		return listPrompts
	}
	return 0
}

// catalog is what one plugin offers.
type catalog struct {
	tools     []*toolEntry
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

type toolEntry struct {
	tool   *mcp.Tool
	schema *jsonschema.Resolved
}

// list reads the selected lists from the plugin. Tools whose input schema
// cannot be compiled are left out, with an error in the log.
func (m *mount) list(ctx context.Context, which lists) (*catalog, error) {
	p := m.Plugin
	c := &catalog{}
	if which&listTools != 0 {
		tools, err := p.ListTools(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		for _, t := range tools {
			schema, err := compileSchema(t.InputSchema)
			if err != nil {
				m.srv.log.Error("ignoring tool with an invalid input schema", "plugin", m.name, "tool", t.Name, "error", err)
				continue
			}
			c.tools = append(c.tools, &toolEntry{tool: t, schema: schema})
		}
	}
	if which&listResources != 0 {
		var err error
		if c.resources, err = p.ListResources(ctx, nil); err != nil {
			return nil, fmt.Errorf("listing resources: %w", err)
		}
		if c.templates, err = p.ListResourceTemplates(ctx, nil); err != nil {
			return nil, fmt.Errorf("listing resource templates: %w", err)
		}
	}
	if which&listPrompts != 0 {
		var err error
		if c.prompts, err = p.ListPrompts(ctx, nil); err != nil {
			return nil, fmt.Errorf("listing prompts: %w", err)
		}
	}
	return c, nil
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

// apply makes the server offer exactly what c lists for the selected lists,
// adding, replacing and removing registrations. An item another plugin
// already offers is left out, with an error in the log.
func (m *mount) apply(c *catalog, which lists) {
	s := m.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.retired {
		return // a late refresh of a plugin a reload replaced
	}

	if which&listTools != 0 {
		keep := map[string]bool{}
		for _, t := range c.tools {
			name := m.exposedName(t.tool.Name)
			if !m.claim(s.tools, "tool", name) {
				continue
			}
			keep[name] = true
			tool := *t.tool
			tool.Name = name
			m.register(func() { s.mcp.AddTool(&tool, m.toolHandler(t.tool.Name, t.schema)) }, "tool", name)
		}
		m.release(s.tools, keep, s.mcp.RemoveTools)
	}
	if which&listResources != 0 {
		keep := map[string]bool{}
		for _, r := range c.resources {
			uri := m.exposedURI(r.URI)
			if !m.claim(s.resources, "resource", uri) {
				continue
			}
			keep[uri] = true
			res := *r
			res.URI = uri
			m.register(func() { s.mcp.AddResource(&res, m.resourceHandler()) }, "resource", uri)
		}
		m.release(s.resources, keep, s.mcp.RemoveResources)

		keep = map[string]bool{}
		for _, t := range c.templates {
			uri := m.exposedURI(t.URITemplate)
			if !m.claim(s.templates, "resource template", uri) {
				continue
			}
			keep[uri] = true
			tmpl := *t
			tmpl.URITemplate = uri
			m.register(func() { s.mcp.AddResourceTemplate(&tmpl, m.resourceHandler()) }, "resource template", uri)
		}
		m.release(s.templates, keep, s.mcp.RemoveResourceTemplates)
	}
	if which&listPrompts != 0 {
		keep := map[string]bool{}
		for _, p := range c.prompts {
			name := m.exposedName(p.Name)
			if !m.claim(s.prompts, "prompt", name) {
				continue
			}
			keep[name] = true
			prompt := *p
			prompt.Name = name
			m.register(func() { s.mcp.AddPrompt(&prompt, m.promptHandler(p.Name)) }, "prompt", name)
		}
		m.release(s.prompts, keep, s.mcp.RemovePrompts)
	}
}

// claim records m as the owner of key, unless another plugin owns it.
func (m *mount) claim(owners map[string]*mount, kind, key string) bool {
	if prev, ok := owners[key]; ok && prev != m {
		m.srv.log.Error(fmt.Sprintf("ignoring %s: %s", kind, ErrConflict), kind, key, "plugin", m.name, "owner", prev.name)
		return false
	}
	owners[key] = m
	return true
}

// release drops m's registrations that are not in keep.
func (m *mount) release(owners map[string]*mount, keep map[string]bool, remove func(...string)) {
	var gone []string
	for key, owner := range owners {
		if owner == m && !keep[key] {
			gone = append(gone, key)
			delete(owners, key)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
}

// register runs an SDK registration, which panics on input it rejects
// (an invalid URI template, say), and logs the rejection instead.
func (m *mount) register(add func(), kind, key string) {
	defer func() {
		if r := recover(); r != nil {
			m.srv.log.Error("plugin offered an invalid "+kind, "plugin", m.name, kind, key, "error", r)
		}
	}()
	add()
}

// refreshTimeout bounds re-listing a plugin after it reported a change.
const refreshTimeout = time.Minute

// ListChanged implements plugin.Events: the plugin's list of kind changed,
// so list it again. It runs in the background, as the plugin is in a call.
func (m *mount) ListChanged(kind plugin.ListKind) {
	go func() {
		m.refreshMu.Lock()
		defer m.refreshMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
		defer cancel()
		which := listsOf(kind)
		c, err := m.list(ctx, which)
		if err != nil {
			m.srv.log.Error("re-listing plugin after a change", "plugin", m.name, "list", kind, "error", err)
			return
		}
		m.apply(c, which)
	}()
}

// ResourceUpdated implements plugin.Events: tell subscribed sessions.
func (m *mount) ResourceUpdated(uri string) {
	m.srv.mu.Lock()
	retired := m.retired
	m.srv.mu.Unlock()
	if retired {
		return
	}
	go func() {
		err := m.srv.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: m.exposedURI(uri)})
		if err != nil {
			m.srv.log.Warn("notifying resource update", "plugin", m.name, "uri", uri, "error", err)
		}
	}()
}
