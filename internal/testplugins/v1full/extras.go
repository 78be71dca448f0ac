//go:build wasip1

package main

import "github.com/hangar-mcp/hangar/pdk"

// The names of the extras that tools add and remove at run time.
const (
	extraTool     = "extra_tool"
	extraResource = "v1full://extra"
	extraPrompt   = "extra_prompt"
)

func enableExtraTool(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	pdk.AddTool(&pdk.Tool{Name: extraTool, Description: "A tool added at run time", InputSchema: object(`{}`)},
		func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			return pdk.TextResult("extra tool called"), nil
		})
	ctx.NotifyToolListChanged()
	return pdk.TextResult("enabled " + extraTool), nil
}

func enableExtraResource(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	pdk.AddResource(&pdk.Resource{URI: extraResource, Name: "extra", Description: "A resource added at run time", MIMEType: "text/plain"},
		func(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
				&pdk.TextResourceContents{URI: req.URI, MIMEType: "text/plain", Text: "extra resource"},
			}}, nil
		})
	ctx.NotifyResourceListChanged()
	return pdk.TextResult("enabled " + extraResource), nil
}

func enableExtraPrompt(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	pdk.AddPrompt(&pdk.Prompt{Name: extraPrompt, Description: "A prompt added at run time"},
		func(*pdk.Context, *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
			return &pdk.GetPromptResult{Messages: []*pdk.PromptMessage{
				{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "extra prompt"}},
			}}, nil
		})
	ctx.NotifyPromptListChanged()
	return pdk.TextResult("enabled " + extraPrompt), nil
}

func disableExtras(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	pdk.RemoveTools(extraTool)
	pdk.RemoveResources(extraResource)
	pdk.RemovePrompts(extraPrompt)
	ctx.NotifyToolListChanged()
	ctx.NotifyResourceListChanged()
	ctx.NotifyPromptListChanged()
	return pdk.TextResult("disabled extras"), nil
}
