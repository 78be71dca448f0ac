//go:build wasip1

// Command pdkuser is the plugin of the PDK-side contract tests (see
// TestContractPDK in internal/plugin/contract_test.go): it is written with
// Hangar's own pdk package, and its one tool calls a host import through
// the PDK, so that the tests can check what the PDK sends against the seed
// schema, as they check Hangar.
//
// Its tool:
//
//	call {"import": name, "variant": string}: calls the host import of
//	     that name through the pdk method that reaches it, with the
//	     parameters of the variant (see calls; "full" sets every member the
//	     schema has). It answers, as text, the JSON of the result for the
//	     imports that return one, "host error: <message>" when the PDK
//	     reports a *pdk.HostError, and "" for notifications. An unknown
//	     import or variant is a tool error.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pdkuser.wasm ./internal/testplugins/contract/pdkuser
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

func init() {
	pdk.AddTool(&pdk.Tool{
		Name:        "call",
		Description: "Calls a host import through the PDK",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"import":{"type":"string"},"variant":{"type":"string"}},"required":["import"]}`),
	}, call)
}

// main is required by the toolchain; Hangar never calls it.
func main() {}

// calls are the variants of each import: each calls it through the PDK and
// returns its result, or nil for notifications.
var calls = map[string]map[string]func(ctx *pdk.Context) (any, error){
	"create_message": {
		"minimal": func(ctx *pdk.Context) (any, error) {
			return ctx.CreateMessage(&pdk.CreateMessageParams{
				Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "hi"}}},
				MaxTokens: 1,
			})
		},
		"full": func(ctx *pdk.Context) (any, error) {
			return ctx.CreateMessage(&pdk.CreateMessageParams{
				Messages: []*pdk.SamplingMessage{
					{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "hi"}},
					{Role: pdk.RoleAssistant, Content: &pdk.ImageContent{Data: []byte("png"), MIMEType: "image/png"}},
					{Role: pdk.RoleUser, Content: &pdk.AudioContent{Data: []byte("wav"), MIMEType: "audio/wav"}},
				},
				MaxTokens:     64,
				SystemPrompt:  "be brief",
				Temperature:   0.5,
				StopSequences: []string{"END"},
				ModelPreferences: &pdk.ModelPreferences{
					Hints:        []*pdk.ModelHint{{Name: "claude"}},
					CostPriority: 0.1, SpeedPriority: 0.2, IntelligencePriority: 0.9,
				},
				IncludeContext: pdk.IncludeThisServer,
			})
		},
	},
	"create_elicitation": {
		"minimal": func(ctx *pdk.Context) (any, error) {
			return ctx.Elicit(&pdk.ElicitParams{Message: "Who?"})
		},
		"full": func(ctx *pdk.Context) (any, error) {
			return ctx.Elicit(&pdk.ElicitParams{
				Message: "Who?",
				RequestedSchema: json.RawMessage(`{"type":"object","required":["name"],"properties":{` +
					`"name":{"type":"string","title":"Name","description":"your name","minLength":1,"maxLength":50,"format":"email"},` +
					`"age":{"type":"integer","title":"Age","description":"in years","minimum":0,"maximum":150},` +
					`"ok":{"type":"boolean","title":"OK","description":"agree?","default":true},` +
					`"color":{"type":"string","title":"Color","description":"pick","enum":["r","g"],"enumNames":["Red","Green"]}}}`),
				Timeout: time.Minute,
			})
		},
		"url": func(ctx *pdk.Context) (any, error) {
			return ctx.ElicitURL(&pdk.ElicitURLParams{Message: "Log in", URL: "https://example.com/login", ElicitationID: "e-1", Timeout: time.Minute})
		},
	},
	"list_roots": {
		"": func(ctx *pdk.Context) (any, error) { return ctx.ListRoots() },
	},
	"notify_logging_message": {
		"logf": func(ctx *pdk.Context) (any, error) {
			return nil, ctx.Logf(pdk.LevelWarning, "disk %d%% full", 91)
		},
		"text": func(ctx *pdk.Context) (any, error) {
			return nil, ctx.Log(&pdk.LoggingMessageParams{Level: pdk.LevelInfo, Data: "plain"})
		},
		"full": func(ctx *pdk.Context) (any, error) {
			return nil, ctx.Log(&pdk.LoggingMessageParams{Level: pdk.LevelError, Logger: "pdkuser", Data: map[string]any{"n": 2}})
		},
	},
	"notify_progress": {
		// The token of the request being served.
		"minimal": func(ctx *pdk.Context) (any, error) {
			return nil, ctx.Progress(&pdk.ProgressParams{Progress: 1})
		},
		"full": func(ctx *pdk.Context) (any, error) {
			return nil, ctx.Progress(&pdk.ProgressParams{Progress: 50, Total: 100, Message: "half way"})
		},
		"number": func(ctx *pdk.Context) (any, error) {
			return nil, ctx.Progress(&pdk.ProgressParams{ProgressToken: 3, Progress: 2})
		},
	},
	"notify_tool_list_changed": {
		"": func(ctx *pdk.Context) (any, error) { ctx.NotifyToolListChanged(); return nil, nil },
	},
	"notify_resource_list_changed": {
		"": func(ctx *pdk.Context) (any, error) { ctx.NotifyResourceListChanged(); return nil, nil },
	},
	"notify_prompt_list_changed": {
		"": func(ctx *pdk.Context) (any, error) { ctx.NotifyPromptListChanged(); return nil, nil },
	},
	"notify_resource_updated": {
		"": func(ctx *pdk.Context) (any, error) { ctx.NotifyResourceUpdated("contract://r/1"); return nil, nil },
	},
	"notify_url_elicitation_completed": {
		"": func(ctx *pdk.Context) (any, error) { ctx.NotifyURLElicitationCompleted("e-1"); return nil, nil },
	},
}

func call(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Import  string `json:"import"`
		Variant string `json:"variant"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	fn, ok := calls[args.Import][args.Variant]
	if !ok {
		return nil, fmt.Errorf("no variant %q of import %q", args.Variant, args.Import)
	}
	res, err := fn(ctx)
	var herr *pdk.HostError
	if errors.As(err, &herr) {
		return pdk.TextResult("host error: " + herr.Message), nil
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		return pdk.TextResult(""), nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	return pdk.TextResult(string(b)), nil
}
