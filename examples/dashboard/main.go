// Command dashboard is a Hangar plugin with an interactive view (MCP Apps):
// hosts of the extension (io.modelcontextprotocol/ui) render the view
// ui://dashboard, the HTML of view.html, in a sandboxed iframe beside the
// result of the tool show_dashboard, and the view fetches what it shows by
// calling the tool dashboard_data, which only the view may call.
//
//	ui://dashboard   the view: a status table of a few services
//	show_dashboard   {} -> a summary in text, for the model and for hosts
//	                 without views; its view is ui://dashboard
//	dashboard_data   {} -> {title, services, up, total}; app-only
//
// The view has no network (its CSP is the host's default): the data comes
// through the plugin's tools, which is where a real dashboard would fetch
// it (pdk.Fetch, under the plugin's grants). The config value title names
// the dashboard (default "Dashboard").
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o dashboard.wasm .
package main

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

// view is the view's document: one self-contained HTML file, its style
// and script inline, since a view's default CSP allows nothing else.
//
//go:embed view.html
var view string

// viewURI is the view's URI; under a plugin prefix P, Hangar serves it as
// ui://P+dashboard and rewrites the tools' links to it.
const viewURI = "ui://dashboard"

// service is one row of the dashboard.
type service struct {
	Name      string `json:"name"`
	Up        bool   `json:"up"`
	LatencyMS int    `json:"latency_ms" jsonschema:"the last check's round trip in milliseconds; 0 when down"`
}

// data is what the view shows.
type data struct {
	Title    string    `json:"title"`
	Services []service `json:"services"`
	Up       int       `json:"up" jsonschema:"how many services are up"`
	Total    int       `json:"total"`
}

func init() {
	yes := true
	pdk.AddApp(&pdk.App{
		URI:           viewURI,
		Name:          "dashboard",
		Title:         "Service dashboard",
		Description:   "The status of a few services, as a table.",
		HTML:          view,
		PrefersBorder: &yes,
		// CSP and Permissions nil: the host's default, no network and no
		// browser features, which is all this view needs.
	})

	// The tool the model calls. Its text stands on its own, for hosts
	// that show no views; a host that does shows ui://dashboard too.
	pdk.AddTool(&pdk.Tool{
		Name:        "show_dashboard",
		Title:       "Show the dashboard",
		Description: "Show the status of the services: a summary, and an interactive dashboard in hosts that show views.",
		Annotations: &pdk.ToolAnnotations{ReadOnlyHint: true},
		UI:          &pdk.ToolUI{ResourceURI: viewURI},
	}, func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		d := current()
		res := pdk.TextResult(summary(d))
		res.StructuredContent = d
		return res, nil
	})

	// The tool the view calls for its data. Visible to the app only:
	// hosts leave it out of the model's tool list, and Hangar hides it
	// from clients that show no views.
	typed.AddTool(&pdk.Tool{
		Name:        "dashboard_data",
		Description: "The dashboard's data, for its view.",
		Annotations: &pdk.ToolAnnotations{ReadOnlyHint: true},
		UI:          &pdk.ToolUI{ResourceURI: viewURI, Visibility: []pdk.Visibility{pdk.VisibleToApp}},
	}, func(*pdk.Context, struct{}) (data, error) {
		return current(), nil
	})
}

// current returns the dashboard's data: a fixed sample here, where a real
// plugin would ask its monitoring system.
func current() data {
	title, ok := pdk.Config("title")
	if !ok {
		title = "Dashboard"
	}
	d := data{Title: title, Services: []service{
		{Name: "api", Up: true, LatencyMS: 42},
		{Name: "web", Up: true, LatencyMS: 18},
		{Name: "db", Up: true, LatencyMS: 7},
		{Name: "queue", Up: false},
	}}
	for _, s := range d.Services {
		if s.Up {
			d.Up++
		}
	}
	d.Total = len(d.Services)
	return d
}

// summary is the text of show_dashboard: "Dashboard: 3 of 4 services up;
// down: queue."
func summary(d data) string {
	var down []string
	for _, s := range d.Services {
		if !s.Up {
			down = append(down, s.Name)
		}
	}
	s := fmt.Sprintf("%s: %d of %d services up", d.Title, d.Up, d.Total)
	if len(down) > 0 {
		s += "; down: " + strings.Join(down, ", ")
	}
	return s + "."
}

// main is required by the toolchain but never called: Hangar runs the init
// functions when it starts the plugin, then calls its exports.
func main() {}
