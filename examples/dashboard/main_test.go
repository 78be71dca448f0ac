package main

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/plugintest"
)

// TestView reads the view as a host of MCP Apps reads it (plugintest's
// client declares the extension): its type, its _meta.ui and its HTML.
func TestView(t *testing.T) {
	p := plugintest.New(t, ".", nil)
	v := p.View("ui://dashboard")
	if c := v.MCP.Contents[0]; c.MIMEType != pdk.AppMIMEType || c.URI != "ui://dashboard" {
		t.Errorf("contents: uri %q, mimeType %q; want ui://dashboard, %q", c.URI, c.MIMEType, pdk.AppMIMEType)
	}
	if v.Listed == nil || v.Listed.MIMEType != pdk.AppMIMEType || v.Name != "dashboard" {
		t.Errorf("listed as %+v", v.Listed)
	}
	// _meta.ui holds the border preference alone: no CSP and no
	// permissions, so the host's defaults (no network) apply.
	if ui := v.MCP.Contents[0].Meta[pdk.AppMetaKey]; !reflect.DeepEqual(ui, map[string]any{"prefersBorder": true}) {
		t.Errorf("_meta.ui of the contents = %#v, want {prefersBorder: true}", ui)
	}
	if !reflect.DeepEqual(v.Listed.Meta, v.MCP.Contents[0].Meta) {
		t.Errorf("_meta of the listed resource %v differs from the contents' %v", v.Listed.Meta, v.MCP.Contents[0].Meta)
	}
	if v.CSP != nil || v.Permissions != nil || v.PrefersBorder == nil || !*v.PrefersBorder {
		t.Errorf("csp %v, permissions %v, prefersBorder %v", v.CSP, v.Permissions, v.PrefersBorder)
	}
	if v.HTML != view {
		t.Error("the view's HTML is not view.html")
	}
	// The view is self-contained: the default CSP would block anything it
	// loaded from elsewhere.
	if m := regexp.MustCompile(`(?i)\b(src|href)\s*=|https?://|\bfetch\(|XMLHttpRequest|WebSocket|\bimport\b`).FindString(v.HTML); m != "" {
		t.Errorf("the view refers to something outside itself: %q", m)
	}
	// It calls the app-only tool under the prefix Hangar gives it, and
	// speaks the extension's handshake.
	for _, want := range []string{
		`meta[name="com.github.hangar-mcp/tool-prefix"]`,
		`"dashboard_data"`, `"show_dashboard"`,
		`"ui/initialize"`, `"ui/notifications/initialized"`, `"tools/call"`,
		`id="result"`, `id="status"`, `id="title"`, `id="services"`,
	} {
		if !strings.Contains(v.HTML, want) {
			t.Errorf("the view lacks %s", want)
		}
	}
}

// TestTools checks the tools' links to the view and who may call them,
// and calls both, the app-only one as the view does.
func TestTools(t *testing.T) {
	p := plugintest.New(t, ".", &plugintest.Options{Config: map[string]string{"title": "Production"}})

	show := p.Tool("show_dashboard")
	if want := (&pdk.ToolUI{ResourceURI: "ui://dashboard"}); !reflect.DeepEqual(show.UI, want) {
		t.Errorf("show_dashboard: UI %+v, want %+v", show.UI, want)
	}
	dt := p.Tool("dashboard_data")
	if want := (&pdk.ToolUI{ResourceURI: "ui://dashboard", Visibility: []pdk.Visibility{pdk.VisibleToApp}}); !reflect.DeepEqual(dt.UI, want) {
		t.Errorf("dashboard_data: UI %+v, want %+v", dt.UI, want)
	}

	res := p.Call("show_dashboard", nil)
	if want := "Production: 3 of 4 services up; down: queue."; res.IsError || res.Text != want {
		t.Errorf("show_dashboard: isError %v, %q; want %q", res.IsError, res.Text, want)
	}

	var got data
	p.Call("dashboard_data", nil).Decode(&got)
	want := data{Title: "Production", Up: 3, Total: 4, Services: []service{
		{"api", true, 42}, {"web", true, 18}, {"db", true, 7}, {"queue", false, 0},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dashboard_data = %+v, want %+v", got, want)
	}
}

// TestSummary runs on the host, without Hangar.
func TestSummary(t *testing.T) {
	d := data{Title: "T", Up: 2, Total: 2, Services: []service{{"a", true, 1}, {"b", true, 2}}}
	if got := summary(d); got != "T: 2 of 2 services up." {
		t.Errorf("summary = %q", got)
	}
}
