//go:build wasip1

package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hangar-mcp/hangar/pdk"
)

func addPrompts() {
	pdk.AddPrompt(&pdk.Prompt{
		Name:        "test_simple_prompt",
		Description: "A simple prompt without arguments",
	}, simplePrompt)
	pdk.AddPrompt(&pdk.Prompt{
		Name:        "test_prompt_with_arguments",
		Description: "A prompt with two required arguments",
		Arguments: []*pdk.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
	}, promptWithArguments)
	pdk.AddPrompt(&pdk.Prompt{
		Name:        "test_prompt_with_embedded_resource",
		Description: "A prompt embedding a resource",
		Arguments: []*pdk.PromptArgument{
			{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
		},
	}, promptWithEmbeddedResource)
	pdk.AddPrompt(&pdk.Prompt{
		Name:        "test_prompt_with_image",
		Description: "A prompt with an image",
	}, promptWithImage)
}

func userMessages(contents ...pdk.Content) *pdk.GetPromptResult {
	res := &pdk.GetPromptResult{}
	for _, c := range contents {
		res.Messages = append(res.Messages, &pdk.PromptMessage{Role: pdk.RoleUser, Content: c})
	}
	return res
}

func simplePrompt(*pdk.Context, *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
	return userMessages(&pdk.TextContent{Text: "This is a simple prompt for testing."}), nil
}

func promptWithArguments(_ *pdk.Context, req *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
	text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Arguments["arg1"], req.Arguments["arg2"])
	return userMessages(&pdk.TextContent{Text: text}), nil
}

func promptWithEmbeddedResource(_ *pdk.Context, req *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
	uri := req.Arguments["resourceUri"]
	if uri == "" {
		return nil, errors.New("argument resourceUri is required")
	}
	return userMessages(
		&pdk.EmbeddedResource{Resource: &pdk.TextResourceContents{
			URI:      uri,
			MIMEType: "text/plain",
			Text:     "Embedded resource content for testing.",
		}},
		&pdk.TextContent{Text: "Please process the embedded resource above."},
	), nil
}

func promptWithImage(*pdk.Context, *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
	return userMessages(
		&pdk.ImageContent{Data: pngImage, MIMEType: "image/png"},
		&pdk.TextContent{Text: "Please analyze the image above."},
	), nil
}

// suggestions are the completion candidates of the arguments of
// test_prompt_with_arguments.
var suggestions = map[string][]string{
	"arg1": {"paris", "park", "party"},
	"arg2": {"apple", "apricot", "banana"},
}

// complete suggests values for the arguments of
// test_prompt_with_arguments that start with the typed prefix.
func complete(_ *pdk.Context, req *pdk.CompleteRequest) (*pdk.CompleteResult, error) {
	if req.Ref.Type != pdk.RefPrompt || req.Ref.Name != "test_prompt_with_arguments" {
		return nil, nil
	}
	prefix := strings.ToLower(req.Argument.Value)
	var values []string
	for _, v := range suggestions[req.Argument.Name] {
		if strings.HasPrefix(v, prefix) {
			values = append(values, v)
		}
	}
	return &pdk.CompleteResult{Completion: pdk.Completion{Values: values, Total: len(values)}}, nil
}
