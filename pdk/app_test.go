package pdk

import (
	"encoding/json"
	"strings"
	"testing"
)

func noTool(*Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }

// TestAppWire checks the exact JSON of a view and of the tools that point
// at it: the listed resource and the read contents both carry _meta.ui, a
// tool carries _meta.ui and the flat ui/resourceUri, merged with its other
// _meta, and a tool added before the first view gets its UI all the same.
func TestAppWire(t *testing.T) {
	withRegistry(t)
	// Added before any view: written by AddApp.
	AddTool(&Tool{Name: "show", UI: &ToolUI{ResourceURI: "ui://dashboard"}, Task: TaskNever,
		Meta: Meta{"x.example/k": 1}}, noTool)
	no := false
	AddApp(&App{
		URI: "ui://dashboard", Name: "dashboard", Title: "Dashboard", HTML: "<p>hi</p>",
		CSP:           &AppCSP{ConnectDomains: []string{"https://api.example.com"}, BaseURIDomains: []string{"https://cdn.example.com"}},
		Permissions:   &AppPermissions{Camera: true, ClipboardWrite: true},
		Domain:        "dashboard.example.com",
		PrefersBorder: &no,
		Meta:          Meta{"x.example/k": "v"},
	})
	// Added after: written by AddTool.
	AddTool(&Tool{Name: "refresh", UI: &ToolUI{ResourceURI: "ui://dashboard", Visibility: []Visibility{VisibleToApp}}}, noTool)
	AddTool(&Tool{Name: "poll", UI: &ToolUI{Visibility: []Visibility{VisibleToApp, VisibleToModel}}}, noTool)
	AddApp(&App{URI: "ui://plain", Name: "plain", HTML: "<p>plain</p>"})

	tests := []struct{ export, input, want string }{
		{exportListTools, `{}`, `{"tools":[` +
			`{"name":"show","inputSchema":{"type":"object"},"_meta":{"com.github.hangar-mcp/task":"never","ui":{"resourceUri":"ui://dashboard"},"ui/resourceUri":"ui://dashboard","x.example/k":1}},` +
			`{"name":"refresh","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://dashboard","visibility":["app"]},"ui/resourceUri":"ui://dashboard"}},` +
			`{"name":"poll","inputSchema":{"type":"object"},"_meta":{"ui":{"visibility":["app","model"]}}}]}`},
		{exportListResources, `{}`, `{"resources":[` +
			`{"uri":"ui://dashboard","name":"dashboard","title":"Dashboard","mimeType":"text/html;profile=mcp-app","size":9,"_meta":{"ui":{"csp":{"connectDomains":["https://api.example.com"],"baseUriDomains":["https://cdn.example.com"]},"domain":"dashboard.example.com","permissions":{"camera":{},"clipboardWrite":{}},"prefersBorder":false},"x.example/k":"v"}},` +
			`{"uri":"ui://plain","name":"plain","mimeType":"text/html;profile=mcp-app","size":12}]}`},
		{exportReadResource, `{"request":{"uri":"ui://dashboard"},"context":{"id":"1","_meta":{}}}`, `{"contents":[` +
			`{"uri":"ui://dashboard","mimeType":"text/html;profile=mcp-app","text":"\u003cp\u003ehi\u003c/p\u003e","_meta":{"ui":{"csp":{"connectDomains":["https://api.example.com"],"baseUriDomains":["https://cdn.example.com"]},"domain":"dashboard.example.com","permissions":{"camera":{},"clipboardWrite":{}},"prefersBorder":false},"x.example/k":"v"}}]}`},
		{exportReadResource, `{"request":{"uri":"ui://plain"},"context":{"id":"1","_meta":{}}}`,
			`{"contents":[{"uri":"ui://plain","mimeType":"text/html;profile=mcp-app","text":"\u003cp\u003eplain\u003c/p\u003e"}]}`},
	}
	for _, tt := range tests {
		got, err := invokeJSON(t, &fakeHost{}, tt.export, tt.input)
		if err != nil || got != tt.want {
			t.Errorf("%s %s\n got %s, %v\nwant %s", tt.export, tt.input, got, err, tt.want)
		}
	}
}

// TestToolUICopied: what AddTool wrote does not change with the caller's
// ToolUI, nor does the caller's Meta gain keys.
func TestToolUICopied(t *testing.T) {
	withRegistry(t)
	AddApp(&App{URI: "ui://v", Name: "v", HTML: "x"})
	meta := Meta{"k": "v"}
	ui := &ToolUI{ResourceURI: "ui://v", Visibility: []Visibility{VisibleToApp}}
	AddTool(&Tool{Name: "t", Meta: meta, UI: ui}, noTool)
	ui.ResourceURI, ui.Visibility[0] = "ui://w", VisibleToModel
	if len(meta) != 1 {
		t.Errorf("the caller's Meta changed: %v", meta)
	}
	got, _ := invokeJSON(t, &fakeHost{}, exportListTools, `{}`)
	want := `{"tools":[{"name":"t","inputSchema":{"type":"object"},"_meta":{"k":"v","ui":{"resourceUri":"ui://v","visibility":["app"]},"ui/resourceUri":"ui://v"}}]}`
	if got != want {
		t.Errorf("list_tools\n got %s\nwant %s", got, want)
	}
}

// TestAppPanics checks that AddTool and AddApp refuse what hosts would
// refuse or what says two things, with a message naming the problem; a
// tool added before the first view is refused by that AddApp.
func TestAppPanics(t *testing.T) {
	view := func() { AddApp(&App{URI: "ui://v", Name: "v", HTML: "x"}) }
	tool := func(ui *ToolUI, meta Meta) func() {
		return func() { AddTool(&Tool{Name: "t", UI: ui, Meta: meta}, noTool) }
	}
	no := false
	tests := []struct {
		name  string
		steps []func()
		want  string
	}{
		{"tool URI not ui://", []func(){view, tool(&ToolUI{ResourceURI: "https://x/view"}, nil)},
			`pdk: AddTool: Tool.UI of tool "t": ResourceURI "https://x/view" does not start with ui://`},
		{"tool URI prefixed", []func(){view, tool(&ToolUI{ResourceURI: "alpha+ui://v"}, nil)}, `ResourceURI "alpha+ui://v" does not start with ui://`},
		{"tool URI bare scheme", []func(){view, tool(&ToolUI{ResourceURI: "ui://"}, nil)}, `ResourceURI "ui://" does not start with ui://`},
		{"empty visibility", []func(){view, tool(&ToolUI{ResourceURI: "ui://v", Visibility: []Visibility{}}, nil)}, "Visibility is empty"},
		{"unknown visibility", []func(){view, tool(&ToolUI{ResourceURI: "ui://v", Visibility: []Visibility{VisibleToApp, "user"}}, nil)},
			`Visibility holds "user" (VisibleToModel or VisibleToApp)`},
		{"empty visibility entry", []func(){view, tool(&ToolUI{Visibility: []Visibility{""}}, nil)}, `Visibility holds ""`},
		{"empty UI", []func(){view, tool(&ToolUI{}, nil)}, "neither a ResourceURI nor a Visibility"},
		{"Meta ui too", []func(){view, tool(&ToolUI{ResourceURI: "ui://v"}, Meta{"ui": map[string]any{}})}, `Tool.Meta holds "ui" too`},
		{"Meta flat key too", []func(){view, tool(&ToolUI{ResourceURI: "ui://v"}, Meta{"ui/resourceUri": "ui://v"})}, `Tool.Meta holds "ui/resourceUri" too`},
		{"bad tool before the view", []func(){tool(&ToolUI{ResourceURI: "v"}, nil), view},
			`pdk: AddTool: Tool.UI of tool "t": ResourceURI "v" does not start with ui://`},
		{"app URI not ui://", []func(){func() { AddApp(&App{URI: "https://x/", Name: "v", HTML: "x"}) }},
			`pdk: AddApp: the URI "https://x/" does not start with ui://`},
		{"app URI bare scheme", []func(){func() { AddApp(&App{URI: "ui://", Name: "v", HTML: "x"}) }}, `the URI "ui://" does not start`},
		{"app without name", []func(){func() { AddApp(&App{URI: "ui://v", HTML: "x"}) }}, "pdk: AddApp needs a name and HTML"},
		{"app without HTML", []func(){func() { AddApp(&App{URI: "ui://v", Name: "v"}) }}, "pdk: AddApp needs a name and HTML"},
		{"app Meta ui too", []func(){func() {
			AddApp(&App{URI: "ui://v", Name: "v", HTML: "x", PrefersBorder: &no, Meta: Meta{"ui": map[string]any{}}})
		}}, `both App.Meta["ui"] and the App fields it stands for are set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t)
			var msg string
			func() {
				defer func() {
					if p := recover(); p != nil {
						msg, _ = p.(string)
						if msg == "" {
							t.Errorf("panic with %T %v, want a string", p, p)
						}
					}
				}()
				for _, step := range tt.steps {
					step()
				}
			}()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("panic %q, want it to hold %q", msg, tt.want)
			}
		})
	}
}

// TestAppMetaByHand: without the typed fields, a hand-written Meta["ui"]
// is sent as written (for members the PDK does not type yet), and a
// plugin without views sends no UI for its tools.
func TestAppMetaByHand(t *testing.T) {
	withRegistry(t)
	AddTool(&Tool{Name: "t", UI: &ToolUI{ResourceURI: "ui://elsewhere"}}, noTool)
	if got, _ := invokeJSON(t, &fakeHost{}, exportListTools, `{}`); got != `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}` {
		t.Errorf("list_tools of a plugin without views: %s", got)
	}
	AddApp(&App{URI: "ui://v", Name: "v", HTML: "x", Meta: Meta{"ui": map[string]any{"future": true}}})
	got, _ := invokeJSON(t, &fakeHost{}, exportListResources, `{}`)
	want := `{"resources":[{"uri":"ui://v","name":"v","mimeType":"text/html;profile=mcp-app","size":1,"_meta":{"ui":{"future":true}}}]}`
	if got != want {
		t.Errorf("list_resources\n got %s\nwant %s", got, want)
	}
}

func TestAppPermissionsJSON(t *testing.T) {
	for _, tt := range []struct {
		p    AppPermissions
		json string
	}{
		{AppPermissions{}, `{}`},
		{AppPermissions{Camera: true}, `{"camera":{}}`},
		{AppPermissions{Camera: true, Microphone: true, Geolocation: true, ClipboardWrite: true}, `{"camera":{},"microphone":{},"geolocation":{},"clipboardWrite":{}}`},
		{AppPermissions{Microphone: true, Geolocation: true}, `{"microphone":{},"geolocation":{}}`},
	} {
		b, err := json.Marshal(tt.p)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.p, b, err, tt.json)
		}
		var back AppPermissions
		if err := json.Unmarshal(b, &back); err != nil || back != tt.p {
			t.Errorf("Unmarshal(%s) = %+v, %v", b, back, err)
		}
	}
	// As a host in JavaScript reads them: null and false ask for nothing;
	// unknown members are ignored.
	var p AppPermissions
	if err := json.Unmarshal([]byte(`{"camera":null,"microphone":false,"geolocation":true,"clipboardWrite":{},"usb":{}}`), &p); err != nil ||
		p != (AppPermissions{Geolocation: true, ClipboardWrite: true}) {
		t.Errorf("Unmarshal = %+v, %v", p, err)
	}
	if err := json.Unmarshal([]byte(`[]`), &p); err == nil {
		t.Error("Unmarshal of an array: no error")
	}
}

func TestCanShowApps(t *testing.T) {
	ui := func(v any) Meta {
		return Meta{MetaClientCapabilities: map[string]any{"extensions": map[string]any{AppExtension: v}}}
	}
	for _, tt := range []struct {
		meta Meta
		want bool
	}{
		{Meta{}, false},
		{Meta{MetaClientCapabilities: map[string]any{}}, false},
		{ui(map[string]any{}), false}, // mimeTypes is required
		{ui(map[string]any{"mimeTypes": []any{"text/html"}}), false},
		{ui(map[string]any{"mimeTypes": "text/html;profile=mcp-app"}), false},
		{ui(map[string]any{"mimeTypes": []any{"text/html", AppMIMEType}}), true},
		{Meta{MetaClientCapabilities: map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{"mimeTypes": []any{AppMIMEType}}}}}, false},
	} {
		caps, _ := (&Context{Meta: tt.meta}).ClientCapabilities()
		if got := caps.CanShowApps(); got != tt.want {
			t.Errorf("%v: CanShowApps %v, want %v", tt.meta, got, tt.want)
		}
	}
}
