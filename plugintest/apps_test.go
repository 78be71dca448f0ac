package plugintest_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/plugintest"
)

// appDir is the directory of the test plugin with a view.
const appDir = "testdata/app"

// TestView reads the test plugin's view in the PDK's types: its HTML as
// embedded, its _meta.ui as declared, on the read's contents and on the
// listed resource alike.
func TestView(t *testing.T) {
	p := plugintest.New(t, appDir, nil)
	v := p.View("ui://dashboard")
	html, err := os.ReadFile(appDir + "/view.html")
	if err != nil {
		t.Fatal(err)
	}
	no := false
	want := pdk.App{
		URI: "ui://dashboard", Name: "dashboard", Title: "Dashboard", Description: "Alerts and services.",
		HTML:          string(html),
		CSP:           &pdk.AppCSP{ConnectDomains: []string{"https://api.example.com"}},
		Permissions:   &pdk.AppPermissions{ClipboardWrite: true},
		PrefersBorder: &no,
		Meta:          pdk.Meta{"com.example/theme": "dark"},
	}
	if !reflect.DeepEqual(v.App, want) {
		t.Errorf("view\n got %+v\nwant %+v", v.App, want)
	}
	// The wire form, which hosts read: the same _meta on both.
	wantMeta := `{"com.example/theme":"dark","ui":{"csp":{"connectDomains":["https://api.example.com"]},"permissions":{"clipboardWrite":{}},"prefersBorder":false}}`
	if got := jsonOf(t, v.MCP.Contents[0].Meta); got != wantMeta {
		t.Errorf("contents _meta\n got %s\nwant %s", got, wantMeta)
	}
	if v.Listed == nil || v.Listed.MIMEType != pdk.AppMIMEType || jsonOf(t, v.Listed.Meta) != wantMeta {
		t.Errorf("listed: %s, want its _meta %s", jsonOf(t, v.Listed), wantMeta)
	}
}

// TestTool checks the tools that point at the view, in the PDK's type,
// and that a view's tools, app-only ones included, are listed to and
// callable by plugintest's client (which declares the extension).
func TestTool(t *testing.T) {
	p := plugintest.New(t, appDir, nil)
	show := p.Tool("show")
	if !reflect.DeepEqual(show.UI, &pdk.ToolUI{ResourceURI: "ui://dashboard"}) || show.Meta != nil || show.Description != "Show the dashboard." {
		t.Errorf("show: %+v, UI %+v", show, show.UI)
	}
	refresh := p.Tool("refresh")
	if !reflect.DeepEqual(refresh.UI, &pdk.ToolUI{ResourceURI: "ui://dashboard", Visibility: []pdk.Visibility{pdk.VisibleToApp}}) || refresh.Meta != nil {
		t.Errorf("refresh: %+v, UI %+v", refresh, refresh.UI)
	}
	if ping := p.Tool("ping"); ping.UI != nil || ping.Task != pdk.TaskNever || !reflect.DeepEqual(ping.Meta, pdk.Meta{"com.example/k": "v"}) {
		t.Errorf("ping: %+v, UI %+v", ping, ping.UI)
	}
	var out struct{ Alerts, Up int }
	p.Call("refresh", nil).Decode(&out)
	if out.Alerts != 3 || out.Up != 12 {
		t.Errorf("refresh: %+v", out)
	}
}

// TestViewStops checks what View and Tool stop the test for: a ui://
// resource that is not a view's type, an unknown view, no such tool, and
// a tool whose _meta.ui a host would refuse.
func TestViewStops(t *testing.T) {
	for _, tt := range []struct {
		fn   func(p *plugintest.Plugin)
		want string
	}{
		{func(p *plugintest.Plugin) { p.View("ui://plain") }, `plugintest: ui://plain is no view: its contents are of type "text/html", not "text/html;profile=mcp-app"`},
		{func(p *plugintest.Plugin) { p.View("ui://nowhere") }, "plugintest: reading the view ui://nowhere:"},
		{func(p *plugintest.Plugin) { p.Tool("nope") }, "plugintest: the client lists no tool nope"},
		{func(p *plugintest.Plugin) { p.Tool("mismatch") }, `_meta.ui.resourceUri "ui://dashboard" and _meta["ui/resourceUri"] "ui://other" differ`},
		{func(p *plugintest.Plugin) { p.Tool("notui") }, `the view's URI "alpha+ui://dashboard" is not a ui:// URI`},
	} {
		msg := fatal(t, func(tb testing.TB) { tt.fn(plugintest.New(tb, appDir, nil)) })
		if !strings.Contains(msg, tt.want) {
			t.Errorf("stopped with %q, want it to hold %q", msg, tt.want)
		}
	}
}

// TestClientKeepsRoots: with the extension declared, the client of a
// session (the default version) still offers roots, which plugintest's
// Roots answer.
func TestClientKeepsRoots(t *testing.T) {
	p := plugintest.New(t, typedDir, &plugintest.Options{Roots: []*mcp.Root{{URI: "file:///a"}}})
	var out struct{ URIs []string }
	p.Call("roots", nil).Decode(&out)
	if strings.Join(out.URIs, ",") != "file:///a" {
		t.Errorf("roots: %v", out.URIs)
	}
}
