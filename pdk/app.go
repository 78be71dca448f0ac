package pdk

import (
	"encoding/json"
	"strconv"
	"strings"
)

// MCP Apps (the extension io.modelcontextprotocol/ui) lets a tool point at
// an interactive HTML view, which hosts that support the extension render
// in a sandboxed iframe next to the tool's result. A view is an ordinary
// resource whose URI starts with "ui://" and whose contents are HTML of
// type AppMIMEType; a tool points at it in its _meta. Nothing of it needs
// the plugin schema: [AddApp] offers the resource and [AddTool] writes the
// tool's [ToolUI] into its _meta, which Hangar passes on.

// AppExtension is the id of the MCP Apps extension, under which a client
// that shows views declares it in its capabilities' extensions.
const AppExtension = "io.modelcontextprotocol/ui"

// AppMIMEType is the MIME type of a view's contents: HTML that hosts of
// the MCP Apps extension render.
const AppMIMEType = "text/html;profile=mcp-app"

// The _meta keys of MCP Apps. AppMetaKey holds a tool's [ToolUI], and a
// view's CSP, permissions, domain and border preference. The flat
// AppResourceURIMetaKey is the extension's earlier form of a tool's
// resourceUri, which hosts still read and [AddTool] still writes.
const (
	AppMetaKey            = "ui"
	AppResourceURIMetaKey = "ui/resourceUri"
)

// appURIScheme starts the URI of every view.
const appURIScheme = "ui://"

// Visibility says who may see and call a tool that belongs to a view
// ([ToolUI.Visibility]).
type Visibility string

const (
	// VisibleToModel: the tool is in the model's tool list, and the model
	// may call it.
	VisibleToModel Visibility = "model"
	// VisibleToApp: the plugin's views may call the tool.
	VisibleToApp Visibility = "app"
)

// ToolUI links a tool to a view ([Tool.UI]). It is written in the tool's
// _meta under [AppMetaKey], and ResourceURI also under
// [AppResourceURIMetaKey], once the plugin offers a view ([AddApp]).
type ToolUI struct {
	// ResourceURI is the URI of the view that shows the tool's results: a
	// "ui://" URI the plugin offers with [AddApp]. It may be empty for a
	// tool only the plugin's views call.
	ResourceURI string `json:"resourceUri,omitempty"`
	// Visibility lists who may see and call the tool. Nil means everyone
	// ([VisibleToModel] and [VisibleToApp]); {VisibleToApp} makes a tool
	// that only the views call, such as one fetching data for a view,
	// which hosts keep out of the model's list.
	Visibility []Visibility `json:"visibility,omitempty"`
}

// App is an interactive view: a "ui://" resource of HTML that hosts of
// the MCP Apps extension render in a sandboxed iframe. The view talks to
// its host with the extension's postMessage protocol, through which it
// can call the plugin's tools.
type App struct {
	// URI identifies the view; it starts with "ui://".
	URI string
	// Name is the resource's name; Title and Description are for display.
	Name, Title, Description string
	// HTML is the view's document, usually embedded in the module:
	//
	//	//go:embed view.html
	//	var view string
	HTML string
	// CSP lists the origins the view may reach beyond its own document.
	// Nil leaves the host's restrictive default: no network, no external
	// scripts, styles or images, no frames.
	CSP *AppCSP
	// Permissions are the browser features the view asks for; nil asks
	// for none.
	Permissions *AppPermissions
	// Domain asks for a dedicated origin for the view; its format is the
	// host's.
	Domain string
	// PrefersBorder, when set, says whether the host should draw a border
	// around the view.
	PrefersBorder *bool
	// Meta holds other _meta keys of the resource and its contents. A
	// Meta[AppMetaKey] written by hand, for members the PDK does not type,
	// is sent as written; AddApp panics if one of CSP, Permissions, Domain
	// and PrefersBorder is set too.
	Meta Meta
}

// AppCSP lists the origins a view may reach (McpUiResourceCsp of the
// extension). Hosts build the view's Content-Security-Policy from it, and
// may restrict it further but not widen it; Hangar passes it on as
// declared.
type AppCSP struct {
	// ConnectDomains: origins of fetch, XHR and WebSocket (connect-src).
	ConnectDomains []string `json:"connectDomains,omitempty"`
	// ResourceDomains: origins of images, scripts, styles, fonts and media.
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	// FrameDomains: origins of nested iframes (frame-src).
	FrameDomains []string `json:"frameDomains,omitempty"`
	// BaseURIDomains: allowed base URIs of the document (base-uri).
	BaseURIDomains []string `json:"baseUriDomains,omitempty"`
}

// AppPermissions are the browser features a view asks for
// (McpUiResourcePermissions of the extension). In JSON each one asked
// for is an empty object: {"camera": {}}.
type AppPermissions struct {
	Camera         bool // the camera (getUserMedia video)
	Microphone     bool // the microphone (getUserMedia audio)
	Geolocation    bool // the user's location
	ClipboardWrite bool // writing to the clipboard
}

// appPermissionNames are the JSON names of the AppPermissions fields.
var appPermissionNames = [...]string{"camera", "microphone", "geolocation", "clipboardWrite"}

func (p *AppPermissions) fields() [4]*bool {
	return [...]*bool{&p.Camera, &p.Microphone, &p.Geolocation, &p.ClipboardWrite}
}

// MarshalJSON encodes the permissions asked for as empty objects.
func (p AppPermissions) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, set := range p.fields() {
		if *set {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, appPermissionNames[i]...)
			b = append(b, `":{}`...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes permissions: a member other than null or false
// asks for its feature, as a host reading it in JavaScript takes it.
// Members of other names are ignored.
func (p *AppPermissions) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*p = AppPermissions{}
	for i, set := range p.fields() {
		v, ok := m[appPermissionNames[i]]
		*set = ok && v != nil && v != false
	}
	return nil
}

// AddApp offers the view a, replacing any resource with the same URI: a
// resource of type [AppMIMEType] whose read returns a.HTML. Its _meta
// holds, under [AppMetaKey], the CSP, permissions, domain and border
// preference of a, both on the listed resource and on the contents a read
// returns, where hosts look first.
//
// A tool points at the view with [Tool.UI]. AddApp panics if the URI does
// not start with "ui://", the name or HTML is empty, or a.Meta has an
// [AppMetaKey] as well as one of the fields it stands for.
func AddApp(a *App) {
	if !strings.HasPrefix(a.URI, appURIScheme) || len(a.URI) == len(appURIScheme) {
		panic("pdk: AddApp: the URI " + strconv.Quote(a.URI) + " does not start with ui://")
	}
	if a.Name == "" || a.HTML == "" {
		panic("pdk: AddApp needs a name and HTML")
	}
	meta := a.Meta
	if ui := a.uiMeta(); ui != nil {
		if _, clash := a.Meta[AppMetaKey]; clash {
			panic("pdk: AddApp: both App.Meta[" + strconv.Quote(AppMetaKey) + "] and the App fields it stands for are set")
		}
		meta = make(Meta, len(a.Meta)+1)
		for k, v := range a.Meta {
			meta[k] = v
		}
		meta[AppMetaKey] = ui
	}
	uri, html := a.URI, a.HTML
	plugin.offerViews()
	AddResource(&Resource{
		URI:         uri,
		Name:        a.Name,
		Title:       a.Title,
		Description: a.Description,
		MIMEType:    AppMIMEType,
		Size:        int64(len(html)),
		Meta:        meta,
	}, func(*Context, *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{
			&TextResourceContents{URI: uri, MIMEType: AppMIMEType, Text: html, Meta: meta},
		}}, nil
	})
}

// offerViews makes r write the UI of its tools into their _meta: of the
// tools added from now on, and of those added before, in the order they
// were added.
func (r *registry) offerViews() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writeUI = withToolUI
	for _, k := range r.tools.keys {
		if e := r.tools.items[k]; e.tool.UI != nil {
			e.tool.Meta, e.tool.UI = withToolUI(e.tool.Name, e.tool.Meta, e.tool.UI), nil
			r.tools.items[k] = e
		}
	}
}

// uiMeta returns the view's _meta.ui, or nil if a sets none of its
// fields.
func (a *App) uiMeta() map[string]any {
	ui := map[string]any{}
	if a.CSP != nil {
		ui["csp"] = a.CSP
	}
	if a.Permissions != nil {
		ui["permissions"] = a.Permissions
	}
	if a.Domain != "" {
		ui["domain"] = a.Domain
	}
	if a.PrefersBorder != nil {
		ui["prefersBorder"] = *a.PrefersBorder
	}
	if len(ui) == 0 {
		return nil
	}
	return ui
}

// withToolUI returns a copy of meta, the _meta of the tool name, with ui
// written in it; it panics on a ui that hosts would refuse.
func withToolUI(name string, meta Meta, ui *ToolUI) Meta {
	bad := ""
	u, vs := ui.ResourceURI, ui.Visibility
	switch {
	case u != "" && (!strings.HasPrefix(u, appURIScheme) || len(u) == len(appURIScheme)):
		bad = "ResourceURI " + strconv.Quote(u) + " does not start with ui://"
	case vs != nil && len(vs) == 0:
		bad = "Visibility is empty, a tool no one may call (nil means VisibleToModel and VisibleToApp)"
	case u == "" && vs == nil:
		bad = "has neither a ResourceURI nor a Visibility"
	}
	for _, v := range vs {
		if v != VisibleToModel && v != VisibleToApp {
			bad = "Visibility holds " + strconv.Quote(string(v)) + " (VisibleToModel or VisibleToApp)"
		}
	}
	for _, k := range [...]string{AppMetaKey, AppResourceURIMetaKey} {
		if _, clash := meta[k]; clash {
			bad = "is set, and Tool.Meta holds " + strconv.Quote(k) + " too"
		}
	}
	if bad != "" {
		panic("pdk: AddTool: Tool.UI of tool " + strconv.Quote(name) + ": " + bad)
	}
	out := make(Meta, len(meta)+2)
	for k, v := range meta {
		out[k] = v
	}
	c := *ui
	c.Visibility = append([]Visibility(nil), vs...)
	out[AppMetaKey] = &c
	if u != "" {
		out[AppResourceURIMetaKey] = u
	}
	return out
}

// CanShowApps reports whether the client shows views: it declared the MCP
// Apps extension ([AppExtension]) with [AppMIMEType] among its mimeTypes.
// Only requests of MCP 2026-07-28 declare the client's capabilities
// ([Context.ClientCapabilities]); for a session of an older version it
// is false, whatever the client. A tool may put less in its text for a
// client that shows its view, but the text must still stand on its own.
func (c *ClientCapabilities) CanShowApps() bool {
	settings, _ := c.Extensions[AppExtension].(map[string]any)
	types, _ := settings["mimeTypes"].([]any)
	for _, t := range types {
		if t == AppMIMEType {
			return true
		}
	}
	return false
}
