package typed_test

import (
	"encoding/json"
	"fmt"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

type forecastIn struct {
	City string `json:"city" jsonschema:"the city, in English"`
	Days int    `json:"days,omitempty" jsonschema:"how many days, 1 to 7 (default 1)"`
}

type forecastOut struct {
	City string   `json:"city"`
	Days []string `json:"days"`
}

// A tool whose input and output schemas are inferred from Go types. Its
// input schema requires "city" (tagged without omitempty), allows "days"
// and nothing else; its result is the structured content
// {"city": ..., "days": [...]}, and the same JSON as text.
func ExampleAddTool() {
	typed.AddTool(&pdk.Tool{
		Name:        "forecast",
		Description: "Forecast the weather of a city.",
		Annotations: &pdk.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx *pdk.Context, in forecastIn) (*forecastOut, error) {
		if in.Days == 0 {
			in.Days = 1
		}
		if in.Days < 1 || in.Days > 7 {
			return nil, fmt.Errorf("days must be 1 to 7, not %d", in.Days) // a tool error the model sees
		}
		out := &forecastOut{City: in.City}
		for range in.Days {
			out.Days = append(out.Days, "sunny")
		}
		return out, nil
	})
}

// A schema written by hand says more than Go types can (here, bounds),
// while the arguments are still decoded into a Go type.
func ExampleAddTool_schema() {
	typed.AddTool(&pdk.Tool{
		Name: "forecast",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"city": {"type": "string"},
				"days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 1}
			},
			"required": ["city"],
			"additionalProperties": false
		}`),
	}, func(ctx *pdk.Context, in forecastIn) (forecastOut, error) {
		return forecastOut{City: in.City, Days: []string{"sunny"}}, nil
	})
}

type searchIn struct {
	Region string `json:"region" mcpheader:"Region" jsonschema:"the region whose index to search"`
	Query  string `json:"query" jsonschema:"what to search for"`
}

// A tool with a header parameter: MCP 2026-07-28 clients send the region
// in the HTTP header Mcp-Param-Region too, so that a load balancer can
// route on it without reading the body; Hangar refuses a request whose
// header and argument differ.
func ExampleAddTool_headerParameter() {
	typed.AddTool(&pdk.Tool{Name: "search", Description: "Search a region's index."},
		func(ctx *pdk.Context, in searchIn) (map[string]any, error) {
			return map[string]any{"region": in.Region, "hits": []string{}}, nil
		})
}
