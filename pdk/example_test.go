package pdk_test

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

// A tool with typed arguments and structured output.
func ExampleAddTool() {
	pdk.AddTool(&pdk.Tool{
		Name:        "add",
		Description: "Add two numbers.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"a": {"type": "number"}, "b": {"type": "number"}},
			"required": ["a", "b"]
		}`),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"sum": {"type": "number"}},
			"required": ["sum"]
		}`),
	}, func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		var args struct{ A, B float64 }
		if err := req.BindArguments(&args); err != nil {
			return nil, err
		}
		sum := args.A + args.B
		res := pdk.TextResult(fmt.Sprint(sum))
		res.StructuredContent = map[string]float64{"sum": sum}
		return res, nil
	})
}

// A resource template: reads of weather://forecast/paris reach the handler
// with Vars["city"] set to "paris".
func ExampleAddResourceTemplate() {
	pdk.AddResourceTemplate(&pdk.ResourceTemplate{
		URITemplate: "weather://forecast/{city}",
		Name:        "forecast",
		MIMEType:    "text/plain",
	}, func(ctx *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
		text := "Sunny in " + req.Vars["city"]
		return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
			&pdk.TextResourceContents{URI: req.URI, MIMEType: "text/plain", Text: text},
		}}, nil
	})
}

// Sampling: a tool asks the client's language model.
func ExampleContext_CreateMessage() {
	pdk.AddTool(&pdk.Tool{Name: "haiku", Description: "Write a haiku."},
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			res, err := ctx.CreateMessage(&pdk.CreateMessageParams{
				Messages: []*pdk.SamplingMessage{
					{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "Write a haiku about WebAssembly."}},
				},
				MaxTokens: 200,
			})
			if err != nil {
				return nil, err // for example, the client does not support sampling
			}
			if text, ok := res.Content.(*pdk.TextContent); ok {
				return pdk.TextResult(text.Text), nil
			}
			return nil, fmt.Errorf("unexpected %T answer", res.Content)
		})
}

// Elicitation: a tool asks the user to confirm, waiting at most a minute.
func ExampleContext_Elicit() {
	pdk.AddTool(&pdk.Tool{Name: "delete_all", Description: "Delete everything, after confirmation."},
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			res, err := ctx.Elicit(&pdk.ElicitParams{
				Message: "Really delete everything?",
				RequestedSchema: json.RawMessage(`{
					"type": "object",
					"properties": {"confirm": {"type": "boolean", "default": false}},
					"required": ["confirm"]
				}`),
				Timeout: time.Minute,
			})
			if err != nil {
				return nil, err
			}
			if res.Action != pdk.ElicitAccept || res.Content["confirm"] != true {
				return pdk.TextResult("Nothing deleted."), nil
			}
			return pdk.TextResult("Deleted everything."), nil
		})
}

// Progress and logging from a long-running tool.
func ExampleContext_Progress() {
	pdk.AddTool(&pdk.Tool{Name: "index", Description: "Index the documents."},
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			docs := []string{"a.md", "b.md", "c.md"}
			for i, doc := range docs {
				_ = ctx.Logf(pdk.LevelDebug, "indexing %s", doc)
				// Sent only if the client asked for progress.
				_ = ctx.Progress(&pdk.ProgressParams{Progress: float64(i + 1), Total: float64(len(docs))})
			}
			return pdk.TextResult(fmt.Sprintf("Indexed %d documents.", len(docs))), nil
		})
}

// Several requests for input at once, under the plugin's own keys: a
// client of MCP 2026-07-28 gets them in one input_required result and
// answers them together; a session of an older version is asked one after
// another.
func ExampleContext_Ask() {
	pdk.AddTool(&pdk.Tool{Name: "introduce", Description: "Greet the user in the client's roots."},
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			res, err := ctx.Ask(map[string]*pdk.InputRequest{
				"user_name": {Elicit: &pdk.ElicitParams{
					Message:         "What is your name?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
				}},
				"roots": {ListRoots: true},
			})
			if err != nil {
				return nil, err // for example, the client cannot elicit or list roots
			}
			for _, r := range res {
				if r.Err != nil {
					return nil, r.Err
				}
			}
			name := res["user_name"].Elicit.Content["name"]
			return pdk.TextResult(fmt.Sprintf("Hello %v, in %d roots", name, len(res["roots"].ListRoots.Roots))), nil
		})
}

// A tool that asks only for what the client declared it can give: at MCP
// 2026-07-28 every request declares the client's capabilities. (A plugin
// that asks for what the client cannot give has its request refused with
// MissingRequiredClientCapability.)
func ExampleContext_ClientCapabilities() {
	pdk.AddTool(&pdk.Tool{Name: "summarize", Description: "Summarize, with the client's model if it has one."},
		func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			caps, declared := ctx.ClientCapabilities()
			if declared && caps.Sampling == nil {
				return pdk.TextResult("(no model to summarize with)"), nil
			}
			res, err := ctx.CreateMessage(&pdk.CreateMessageParams{
				Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "Summarize: ..."}}},
				MaxTokens: 200,
			})
			if err != nil {
				return nil, err
			}
			return pdk.TextResult(fmt.Sprint(res.Content)), nil
		})
}

// dashboardHTML is the view of ExampleAddApp, embedded in the module.
//
//go:embed testdata/dashboard.html
var dashboardHTML string

// An interactive view (MCP Apps): hosts that render views show the
// dashboard with the result of show; the view itself calls refresh, which
// hosts keep out of the model's tool list.
func ExampleAddApp() {
	pdk.AddApp(&pdk.App{
		URI:  "ui://dashboard",
		Name: "dashboard",
		HTML: dashboardHTML, // //go:embed dashboard.html
		CSP:  &pdk.AppCSP{ConnectDomains: []string{"https://api.example.com"}},
	})
	pdk.AddTool(&pdk.Tool{
		Name:        "show",
		Description: "Show the dashboard.",
		UI:          &pdk.ToolUI{ResourceURI: "ui://dashboard"},
	}, func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		return pdk.TextResult("3 alerts, 12 services up."), nil // what a host without views shows
	})
	pdk.AddTool(&pdk.Tool{
		Name:        "refresh",
		Description: "The dashboard's data, for the view.",
		UI: &pdk.ToolUI{
			ResourceURI: "ui://dashboard",
			Visibility:  []pdk.Visibility{pdk.VisibleToApp},
		},
	}, func(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
		res := pdk.TextResult(`{"alerts":3,"up":12}`)
		res.StructuredContent = map[string]int{"alerts": 3, "up": 12}
		return res, nil
	})
}
