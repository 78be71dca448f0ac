package plugintest

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/pdk"
)

// clientOptions returns the options of the test's client: o.Client, with
// the MCP Apps extension declared unless o.NoApps is set or the test
// declared it itself. It changes nothing o.Client points to.
func clientOptions(o *Options) *mcp.ClientOptions {
	if o.NoApps {
		return o.Client
	}
	var co mcp.ClientOptions
	if o.Client != nil {
		co = *o.Client
	}
	// A non-nil Capabilities replaces the go-sdk's default capabilities,
	// so it starts from them: roots, with list changes.
	caps := mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}
	if co.Capabilities != nil {
		caps = *co.Capabilities
		caps.Extensions = maps.Clone(caps.Extensions)
	}
	if _, ok := caps.Extensions[pdk.AppExtension]; !ok {
		caps.AddExtension(pdk.AppExtension, map[string]any{"mimeTypes": []string{pdk.AppMIMEType}})
	}
	co.Capabilities = &caps
	return &co
}

// View is an interactive view of the plugin (MCP Apps) as the client
// reads it.
type View struct {
	// App is the view in the PDK's type, as pdk.AddApp would offer it:
	// URI, HTML, and CSP, Permissions, Domain and PrefersBorder from the
	// _meta.ui of the read's contents, whose other _meta keys are in Meta;
	// Name, Title and Description from the listed resource.
	pdk.App
	// Listed is the view's entry in resources/list; nil if it is not
	// listed.
	Listed *mcp.Resource
	// MCP is the read's result as the client got it.
	MCP *mcp.ReadResourceResult
}

// View reads the view at uri, the URI the client sees. It stops the test
// when the read fails, or its result is not one view: one contents of
// type pdk.AppMIMEType, whose _meta.ui decodes.
func (p *Plugin) View(uri string) *View {
	p.t.Helper()
	res, err := p.s.ReadResource(p.t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		p.t.Fatalf("plugintest: reading the view %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		p.t.Fatalf("plugintest: the view %s has %d contents, want 1", uri, len(res.Contents))
	}
	c := res.Contents[0]
	if c.MIMEType != pdk.AppMIMEType {
		p.t.Fatalf("plugintest: %s is no view: its contents are of type %q, not %q", uri, c.MIMEType, pdk.AppMIMEType)
	}
	v := &View{App: pdk.App{URI: uri, HTML: c.Text}, MCP: res}
	if c.Blob != nil {
		v.HTML = string(c.Blob)
	}
	var ui struct {
		CSP           *pdk.AppCSP         `json:"csp"`
		Permissions   *pdk.AppPermissions `json:"permissions"`
		Domain        string              `json:"domain"`
		PrefersBorder *bool               `json:"prefersBorder"`
	}
	if err := decodeMeta(c.Meta, pdk.AppMetaKey, &ui); err != nil {
		p.t.Fatalf("plugintest: the view %s: %v", uri, err)
	}
	v.CSP, v.Permissions, v.Domain, v.PrefersBorder = ui.CSP, ui.Permissions, ui.Domain, ui.PrefersBorder
	v.Meta = without(c.Meta, pdk.AppMetaKey)
	for r, err := range p.s.Resources(p.t.Context(), nil) {
		if err != nil {
			p.t.Fatalf("plugintest: listing resources: %v", err)
		}
		if r.URI == uri {
			v.Listed = r
			v.Name, v.Title, v.Description = r.Name, r.Title, r.Description
			break
		}
	}
	return v
}

// Tool returns the tool name, the name the client sees, as the client
// lists it, in the PDK's type: its UI and Task come from its _meta, whose
// other keys are in Meta, and its schemas are decoded JSON. It stops the
// test when no tool has that name, or the tool's _meta.ui is one a host
// refuses: a resourceUri that is not a ui:// URI, or that differs from the
// flat ui/resourceUri.
func (p *Plugin) Tool(name string) *pdk.Tool {
	p.t.Helper()
	var found *mcp.Tool
	for t, err := range p.s.Tools(p.t.Context(), nil) {
		if err != nil {
			p.t.Fatalf("plugintest: listing tools: %v", err)
		}
		if t.Name == name {
			found = t
			break
		}
	}
	if found == nil {
		p.t.Fatalf("plugintest: the client lists no tool %s", name)
	}
	b, err := json.Marshal(found)
	if err != nil {
		p.t.Fatalf("plugintest: tool %s: %v", name, err)
	}
	var tool pdk.Tool
	if err := json.Unmarshal(b, &tool); err != nil {
		p.t.Fatalf("plugintest: tool %s: %v", name, err)
	}
	if err := toolMeta(&tool); err != nil {
		p.t.Fatalf("plugintest: tool %s: %v", name, err)
	}
	return &tool
}

// toolMeta moves what t.Meta says of t's view and task into t.UI and
// t.Task, or returns what is wrong with it.
func toolMeta(t *pdk.Tool) error {
	var ui pdk.ToolUI
	if err := decodeMeta(t.Meta, pdk.AppMetaKey, &ui); err != nil {
		return err
	}
	flat, isString := t.Meta[pdk.AppResourceURIMetaKey].(string)
	if _, ok := t.Meta[pdk.AppResourceURIMetaKey]; ok && !isString {
		return fmt.Errorf("_meta[%q] is not a string", pdk.AppResourceURIMetaKey)
	}
	switch {
	case ui.ResourceURI == "":
		ui.ResourceURI = flat
	case flat != "" && flat != ui.ResourceURI:
		return fmt.Errorf("_meta.ui.resourceUri %q and _meta[%q] %q differ", ui.ResourceURI, pdk.AppResourceURIMetaKey, flat)
	}
	if u := ui.ResourceURI; u != "" && !strings.HasPrefix(u, "ui://") {
		return fmt.Errorf("the view's URI %q is not a ui:// URI, which hosts refuse", u)
	}
	if _, ok := t.Meta[pdk.AppMetaKey]; ok || flat != "" {
		t.UI = &ui
	}
	task, _ := t.Meta[pdk.TaskMetaKey].(string)
	t.Task = pdk.TaskSupport(task)
	t.Meta = without(t.Meta, pdk.AppMetaKey, pdk.AppResourceURIMetaKey, pdk.TaskMetaKey)
	return nil
}

// decodeMeta decodes meta[key], if present, into v.
func decodeMeta[M ~map[string]any](meta M, key string, v any) error {
	m, ok := meta[key]
	if !ok {
		return nil
	}
	b, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("_meta.%s: %v", key, err)
	}
	return nil
}

// without returns meta without keys, as a pdk.Meta; nil if nothing is
// left.
func without[M ~map[string]any](meta M, keys ...string) pdk.Meta {
	out := pdk.Meta{}
	for k, v := range meta {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
