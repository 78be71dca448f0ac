//go:build wasip1

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

// noArguments is the input schema of the tools without arguments.
var noArguments = json.RawMessage(`{"type":"object","properties":{}}`)

// tools are the conformance tools, in listing order.
var tools = []struct {
	tool    *pdk.Tool
	handler pdk.ToolHandler
}{
	{&pdk.Tool{Name: "test_simple_text", Description: "Returns simple text content", InputSchema: noArguments}, simpleText},
	{&pdk.Tool{Name: "test_image_content", Description: "Returns image content (a 1x1 red PNG)", InputSchema: noArguments}, imageContent},
	{&pdk.Tool{Name: "test_audio_content", Description: "Returns audio content (a short WAV tone)", InputSchema: noArguments}, audioContent},
	{&pdk.Tool{Name: "test_embedded_resource", Description: "Returns an embedded resource", InputSchema: noArguments}, embeddedResource},
	{&pdk.Tool{Name: "test_multiple_content_types", Description: "Returns text, image and resource content", InputSchema: noArguments}, multipleContentTypes},
	{&pdk.Tool{Name: "test_tool_with_logging", Description: "Sends three info log messages while running", InputSchema: noArguments}, toolWithLogging},
	{&pdk.Tool{Name: "test_error_handling", Description: "Always fails with a tool error", InputSchema: noArguments}, errorHandling},
	{&pdk.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100 while running", InputSchema: noArguments}, toolWithProgress},
	{&pdk.Tool{
		Name:        "test_sampling",
		Description: "Asks the client to sample a language model with the given prompt",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
	}, sampling},
	{&pdk.Tool{
		Name:        "test_elicitation",
		Description: "Asks the user for a username and an email address",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
	}, elicitation},
	{&pdk.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits a form whose fields have default values (SEP-1034)", InputSchema: noArguments}, elicitationDefaults},
	{&pdk.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits a form with every kind of enum field (SEP-1330)", InputSchema: noArguments}, elicitationEnums},
	{&pdk.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features", InputSchema: schema2020}, jsonSchema2020},
	{&pdk.Tool{Name: "test_reconnection", Description: "Runs long enough for the server to close the SSE stream mid-call (SEP-1699)", InputSchema: noArguments}, reconnection},
}

// schema2020 uses JSON Schema 2020-12 keywords that must reach the client
// unchanged.
var schema2020 = json.RawMessage(`{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "addressDef",
			"type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`)

// step is the pause between the notifications of the logging and progress
// tools.
const step = 50 * time.Millisecond

func simpleText(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return pdk.TextResult("This is a simple text response for testing."), nil
}

func imageContent(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return &pdk.CallToolResult{Content: []pdk.Content{&pdk.ImageContent{Data: pngImage, MIMEType: "image/png"}}}, nil
}

func audioContent(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return &pdk.CallToolResult{Content: []pdk.Content{&pdk.AudioContent{Data: wavAudio, MIMEType: "audio/wav"}}}, nil
}

func embeddedResource(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return &pdk.CallToolResult{Content: []pdk.Content{&pdk.EmbeddedResource{
		Resource: &pdk.TextResourceContents{
			URI:      "test://embedded-resource",
			MIMEType: "text/plain",
			Text:     "This is an embedded resource content.",
		},
	}}}, nil
}

func multipleContentTypes(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return &pdk.CallToolResult{Content: []pdk.Content{
		&pdk.TextContent{Text: "Multiple content types test:"},
		&pdk.ImageContent{Data: pngImage, MIMEType: "image/png"},
		&pdk.EmbeddedResource{Resource: &pdk.TextResourceContents{
			URI:      "test://mixed-content-resource",
			MIMEType: "application/json",
			Text:     `{"test":"data","value":123}`,
		}},
	}}, nil
}

func toolWithLogging(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			time.Sleep(step)
		}
		if err := ctx.Logf(pdk.LevelInfo, "%s", msg); err != nil {
			return nil, err
		}
	}
	return pdk.TextResult("Tool with logging executed successfully"), nil
}

func errorHandling(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return nil, errors.New("This tool intentionally returns an error for testing")
}

func toolWithProgress(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	for i, progress := range []float64{0, 50, 100} {
		if i > 0 {
			time.Sleep(step)
		}
		if err := ctx.Progress(&pdk.ProgressParams{Progress: progress, Total: 100}); err != nil {
			return nil, err
		}
	}
	return pdk.TextResult("Tool with progress executed successfully"), nil
}

func sampling(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Prompt string `json:"prompt"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := ctx.CreateMessage(&pdk.CreateMessageParams{
		Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: args.Prompt}}},
		MaxTokens: 100,
	})
	if err != nil {
		return nil, fmt.Errorf("sampling failed: %w", err)
	}
	answer := fmt.Sprintf("[%T content]", res.Content)
	if text, ok := res.Content.(*pdk.TextContent); ok {
		answer = text.Text
	}
	return pdk.TextResult("LLM response: " + answer), nil
}

func elicitation(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Message string `json:"message"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := ctx.Elicit(&pdk.ElicitParams{Message: args.Message, RequestedSchema: userSchema})
	if err != nil {
		return nil, fmt.Errorf("elicitation failed: %w", err)
	}
	return pdk.TextResult("User response: " + describe(res)), nil
}

func elicitationDefaults(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return elicitForm(ctx, "Please review and update the form fields with defaults", defaultsSchema)
}

func elicitationEnums(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return elicitForm(ctx, "Please select options from the enum fields", enumsSchema)
}

// elicitForm elicits a form and reports the answer.
func elicitForm(ctx *pdk.Context, message string, schema json.RawMessage) (*pdk.CallToolResult, error) {
	res, err := ctx.Elicit(&pdk.ElicitParams{Message: message, RequestedSchema: schema})
	if err != nil {
		return nil, fmt.Errorf("elicitation failed: %w", err)
	}
	return pdk.TextResult("Elicitation completed: " + describe(res)), nil
}

// describe formats an elicitation answer as "action=..., content={...}".
func describe(res *pdk.ElicitResult) string {
	content, err := json.Marshal(res.Content)
	if err != nil {
		content = []byte(fmt.Sprint(res.Content))
	}
	return fmt.Sprintf("action=%s, content=%s", res.Action, content)
}

func jsonSchema2020(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	args := string(req.Arguments)
	if args == "" {
		args = "{}"
	}
	return pdk.TextResult("JSON Schema 2020-12 tool called with: " + args), nil
}

// reconnection runs for a while so that a server can close the request's
// SSE stream before the result is ready and deliver it after the client
// reconnects.
func reconnection(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	time.Sleep(200 * time.Millisecond)
	return pdk.TextResult("Reconnection test completed successfully"), nil
}
