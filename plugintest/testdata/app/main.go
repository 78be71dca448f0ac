//go:build wasip1

// Command app is plugintest's test plugin with an interactive view (MCP
// Apps), declared with the PDK:
//
//	ui://dashboard  the view (view.html), with a CSP, permissions, a
//	                border preference and a _meta key of its own
//	show            {} -> text; its view is ui://dashboard (added before
//	                the view, so that AddApp writes its UI)
//	refresh         {} -> {alerts, up}; only the view calls it
//	ping            {} -> ""; no view, a task never, a _meta key of its own
//
// and, written by hand, what plugintest must refuse:
//
//	ui://plain      a ui:// resource of type text/html, not a view's
//	mismatch        a tool whose _meta.ui.resourceUri and ui/resourceUri differ
//	notui           a tool whose _meta.ui.resourceUri is not a ui:// URI
package main

import (
	_ "embed"

	"github.com/hangar-mcp/hangar/pdk"
)

//go:embed view.html
var view string

func main() {}

func init() {
	pdk.AddTool(&pdk.Tool{
		Name:        "show",
		Description: "Show the dashboard.",
		UI:          &pdk.ToolUI{ResourceURI: "ui://dashboard"},
	}, func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		return pdk.TextResult("3 alerts, 12 services up."), nil
	})
	no := false
	pdk.AddApp(&pdk.App{
		URI:           "ui://dashboard",
		Name:          "dashboard",
		Title:         "Dashboard",
		Description:   "Alerts and services.",
		HTML:          view,
		CSP:           &pdk.AppCSP{ConnectDomains: []string{"https://api.example.com"}},
		Permissions:   &pdk.AppPermissions{ClipboardWrite: true},
		PrefersBorder: &no,
		Meta:          pdk.Meta{"com.example/theme": "dark"},
	})
	pdk.AddTool(&pdk.Tool{
		Name:        "refresh",
		Description: "The dashboard's data.",
		UI:          &pdk.ToolUI{ResourceURI: "ui://dashboard", Visibility: []pdk.Visibility{pdk.VisibleToApp}},
	}, func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		res := pdk.TextResult(`{"alerts":3,"up":12}`)
		res.StructuredContent = map[string]int{"alerts": 3, "up": 12}
		return res, nil
	})

	pdk.AddTool(&pdk.Tool{Name: "ping", Task: pdk.TaskNever, Meta: pdk.Meta{"com.example/k": "v"}}, nothing)

	pdk.AddResource(&pdk.Resource{URI: "ui://plain", Name: "plain", MIMEType: "text/html"},
		func(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
				&pdk.TextResourceContents{URI: req.URI, MIMEType: "text/html", Text: "<p>plain</p>"},
			}}, nil
		})
	pdk.AddTool(&pdk.Tool{Name: "mismatch", Meta: pdk.Meta{
		"ui": map[string]any{"resourceUri": "ui://dashboard"}, "ui/resourceUri": "ui://other",
	}}, nothing)
	pdk.AddTool(&pdk.Tool{Name: "notui", Meta: pdk.Meta{
		"ui": map[string]any{"resourceUri": "alpha+ui://dashboard"},
	}}, nothing)
}

func nothing(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return pdk.TextResult(""), nil
}
