//go:build wasip1

// Command typed is a test plugin whose tools are typed (package
// github.com/hangar-mcp/hangar/pdk/typed), with a prompt, a resource, a
// resource template and completions: what a plugin author tests with
// package plugintest. Its tools:
//
//	add         {a, b: number} -> {sum}
//	greet       {name: string, excited?: bool} -> {greeting}; the greeting
//	            word is the config value "greeting" (default "Hello")
//	ask         {question: string} -> {answer}: asks the client's model (sampling)
//	confirm     {action: string} -> {confirmed: bool}: asks the user (form elicitation)
//	roots       {} -> {uris: [...]}: lists the client's roots
//	read_file   {path: string} -> {text}: reads a file (needs grants.allowed_paths)
//	fail        {} -> always a tool error "it failed"
//	plain       {} -> Out is any: the text "plain", no structured content
//	nothing     {} -> a nil *addOut: structured content {"sum": 0}
//	spin        {} -> loops forever (for limits.call_timeout)
//
// The prompt "review" takes the argument "topic", completed from a fixed
// list. The resource typed://readme is text; the template
// typed://items/{id} echoes its id.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o typed.wasm ./internal/testplugins/typed
package main

import (
	"errors"
	"os"
	"strings"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

type addIn struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type greetIn struct {
	Name    string `json:"name" jsonschema:"who to greet"`
	Excited bool   `json:"excited,omitempty"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

type askOut struct {
	Answer string `json:"answer"`
}

type confirmOut struct {
	Confirmed bool `json:"confirmed"`
}

type rootsOut struct {
	URIs []string `json:"uris"`
}

type empty struct{}

func init() {
	typed.AddTool(&pdk.Tool{Name: "add", Description: "Add two numbers."},
		func(ctx *pdk.Context, in addIn) (addOut, error) {
			return addOut{Sum: in.A + in.B}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "greet", Description: "Greet someone."},
		func(ctx *pdk.Context, in greetIn) (greetOut, error) {
			word, ok := pdk.Config("greeting")
			if !ok {
				word = "Hello"
			}
			end := "."
			if in.Excited {
				end = "!"
			}
			return greetOut{Greeting: word + ", " + in.Name + end}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "ask", Description: "Ask the client's model a question."},
		func(ctx *pdk.Context, in struct {
			Question string `json:"question"`
		}) (askOut, error) {
			res, err := ctx.CreateMessage(&pdk.CreateMessageParams{
				Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: in.Question}}},
				MaxTokens: 100,
			})
			if err != nil {
				return askOut{}, err
			}
			text, _ := res.Content.(*pdk.TextContent)
			if text == nil {
				return askOut{}, errors.New("the model did not answer with text")
			}
			return askOut{Answer: text.Text}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "confirm", Description: "Ask the user to confirm an action."},
		func(ctx *pdk.Context, in struct {
			Action string `json:"action"`
		}) (confirmOut, error) {
			res, err := ctx.Elicit(&pdk.ElicitParams{
				Message: "Really " + in.Action + "?",
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"confirm": map[string]any{"type": "boolean"}},
					"required":   []string{"confirm"},
				},
			})
			if err != nil {
				return confirmOut{}, err
			}
			return confirmOut{Confirmed: res.Action == pdk.ElicitAccept && res.Content["confirm"] == true}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "roots", Description: "List the client's roots."},
		func(ctx *pdk.Context, _ empty) (rootsOut, error) {
			res, err := ctx.ListRoots()
			if err != nil {
				return rootsOut{}, err
			}
			out := rootsOut{URIs: []string{}}
			for _, r := range res.Roots {
				out.URIs = append(out.URIs, r.URI)
			}
			return out, nil
		})
	typed.AddTool(&pdk.Tool{Name: "read_file", Description: "Read a text file."},
		func(ctx *pdk.Context, in struct {
			Path string `json:"path"`
		}) (map[string]string, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return nil, err
			}
			return map[string]string{"text": string(b)}, nil
		})
	typed.AddTool(&pdk.Tool{Name: "fail", Description: "Always fail."},
		func(ctx *pdk.Context, _ empty) (addOut, error) {
			return addOut{}, errors.New("it failed")
		})
	typed.AddTool(&pdk.Tool{Name: "plain", Description: "Answer a plain string."},
		func(ctx *pdk.Context, _ empty) (any, error) {
			return "plain", nil
		})
	typed.AddTool(&pdk.Tool{Name: "nothing", Description: "Answer a nil pointer."},
		func(ctx *pdk.Context, _ empty) (*addOut, error) {
			return nil, nil
		})
	typed.AddTool(&pdk.Tool{Name: "spin", Description: "Loop forever."},
		func(ctx *pdk.Context, _ empty) (empty, error) {
			for n := 0; ; n++ {
				if n < 0 {
					return empty{}, nil
				}
			}
		})

	pdk.AddPrompt(&pdk.Prompt{
		Name:        "review",
		Description: "Review a topic.",
		Arguments:   []*pdk.PromptArgument{{Name: "topic", Required: true}},
	}, func(ctx *pdk.Context, req *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
		return &pdk.GetPromptResult{Messages: []*pdk.PromptMessage{{
			Role:    pdk.RoleUser,
			Content: &pdk.TextContent{Text: "Review " + req.Arguments["topic"] + "."},
		}}}, nil
	})
	pdk.AddResource(&pdk.Resource{URI: "typed://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
				&pdk.TextResourceContents{URI: req.URI, MIMEType: "text/plain", Text: "typed tools"},
			}}, nil
		})
	pdk.AddResourceTemplate(&pdk.ResourceTemplate{URITemplate: "typed://items/{id}", Name: "item", MIMEType: "text/plain"},
		func(ctx *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
				&pdk.TextResourceContents{URI: req.URI, MIMEType: "text/plain", Text: "item " + req.Vars["id"]},
			}}, nil
		})
	pdk.SetCompletionHandler(func(ctx *pdk.Context, req *pdk.CompleteRequest) (*pdk.CompleteResult, error) {
		var res pdk.CompleteResult
		for _, topic := range []string{"performance", "security", "style"} {
			if strings.HasPrefix(topic, req.Argument.Value) {
				res.Completion.Values = append(res.Completion.Values, topic)
			}
		}
		return &res, nil
	})
}

// main is required by the toolchain but never called.
func main() {}
