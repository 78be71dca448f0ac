//go:build wasip1

package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

// The tools and the prompt of the suite's MCP 2026-07-28 scenarios: those
// that ask their client for input (multi round-trip requests, SEP-2322),
// the diagnostic tools of the stateless scenario (SEP-2575) and a tool
// with header parameters (SEP-2243). Hangar parks a call that asks, answers
// the request input_required, and resumes the call with the retry's
// answers; the plugin only asks and waits.

// formOf returns a form with one required property of the given type.
func formOf(name, typ string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q}},"required":[%q]}`, name, typ, name))
}

var (
	nameForm    = formOf("name", "string")
	confirmForm = formOf("ok", "boolean")
)

// headerArgs are the arguments of test_header_params, sent by 2026-07-28
// clients in Mcp-Param-Region and Mcp-Param-Priority too.
type headerArgs struct {
	Region   string `json:"region" mcpheader:"Region" jsonschema:"the region to route the request to"`
	Priority int    `json:"priority,omitempty" mcpheader:"Priority" jsonschema:"the request's priority"`
	Query    string `json:"query,omitempty" jsonschema:"what to look up"`
}

func addMRTR() {
	for _, t := range []struct {
		name, description string
		handler           pdk.ToolHandler
	}{
		{"test_input_required_result_elicitation", "Asks the user's name (input request \"user_name\") and greets them", askName},
		{"test_input_required_result_sampling", "Asks the client's model for the capital of France", askCapital},
		{"test_input_required_result_list_roots", "Asks the client for its roots and counts them", askRoots},
		{"test_input_required_result_request_state", "Asks for a confirmation; the retry carries Hangar's requestState", askConfirmation},
		{"test_input_required_result_multiple_inputs", "Asks for a name, a greeting and the roots in one round", askMultiple},
		{"test_input_required_result_multi_round", "Asks for a name, then for a colour, in two rounds", askTwoRounds},
		{"test_input_required_result_tampered_state", "Asks for a confirmation; a retry with a tampered requestState is refused by Hangar", askConfirmation},
		{"test_input_required_result_capabilities", "Asks only for what the client declared it can give (elicitation, sampling)", askWhatClientCan},
		{"test_missing_capability", "Needs sampling: a client that did not declare it gets MissingRequiredClientCapability", needSampling},
		{"test_streaming_elicitation", "Reports progress, then asks the user a question", streamThenAsk},
		{"test_logging_tool", "Logs three messages at once", logThree},
	} {
		pdk.AddTool(&pdk.Tool{Name: t.name, Description: t.description, InputSchema: noArguments}, t.handler)
	}
	typed.AddTool(&pdk.Tool{
		Name:        "test_header_params",
		Description: "Echoes its arguments; region and priority are header parameters (x-mcp-header)",
	}, func(_ *pdk.Context, in headerArgs) (headerArgs, error) { return in, nil })
	pdk.AddTool(&pdk.Tool{Name: "test_trigger_tool_change", Description: "Changes the description of test_dynamic_tool, a change of the tool list", InputSchema: noArguments}, triggerToolChange)
	pdk.AddTool(&pdk.Tool{Name: "test_trigger_prompt_change", Description: "Changes the description of test_dynamic_prompt, a change of the prompt list", InputSchema: noArguments}, triggerPromptChange)
	addDynamicTool("as it started")
	addDynamicPrompt("as it started")
	pdk.AddPrompt(&pdk.Prompt{
		Name:        "test_input_required_result_prompt",
		Description: "A prompt that asks the user for its context first",
	}, promptAskingContext)
}

// askOne asks one request under key and returns its answer.
func askOne(ctx *pdk.Context, key string, req *pdk.InputRequest) (*pdk.InputResponse, error) {
	res, err := ctx.Ask(map[string]*pdk.InputRequest{key: req})
	if err != nil {
		return nil, err
	}
	if res[key].Err != nil {
		return nil, res[key].Err
	}
	return res[key], nil
}

// formValue returns the string value of field in an accepted form, or a
// word for the user's refusal.
func formValue(res *pdk.ElicitResult, field string) string {
	if res.Action != pdk.ElicitAccept {
		return "(" + res.Action + ")"
	}
	return fmt.Sprint(res.Content[field])
}

func askName(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := askOne(ctx, "user_name", &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "What is your name?", RequestedSchema: nameForm}})
	if err != nil {
		return nil, err
	}
	return pdk.TextResult("Hello, " + formValue(res.Elicit, "name") + "!"), nil
}

func askCapital(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := askOne(ctx, "capital_question", &pdk.InputRequest{CreateMessage: &pdk.CreateMessageParams{
		Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "What is the capital of France?"}}},
		MaxTokens: 100,
	}})
	if err != nil {
		return nil, err
	}
	return pdk.TextResult("Sampling result: " + sampledText(res.CreateMessage)), nil
}

// sampledText returns the text of a sampled message, or its kind.
func sampledText(res *pdk.CreateMessageResult) string {
	if text, ok := res.Content.(*pdk.TextContent); ok {
		return text.Text
	}
	return fmt.Sprintf("[%T content]", res.Content)
}

func askRoots(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := askOne(ctx, "client_roots", &pdk.InputRequest{ListRoots: true})
	if err != nil {
		return nil, err
	}
	return pdk.TextResult(fmt.Sprintf("Found %d root(s)", len(res.ListRoots.Roots))), nil
}

func askConfirmation(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := askOne(ctx, "confirm", &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "Please confirm", RequestedSchema: confirmForm}})
	if err != nil {
		return nil, err
	}
	// The call resumed where it stopped: Hangar opened and checked the
	// requestState (sealed, single-use, bound to this request) first.
	return pdk.TextResult("state-ok: confirmed=" + formValue(res.Elicit, "ok")), nil
}

func askMultiple(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := ctx.Ask(map[string]*pdk.InputRequest{
		"user_name": {Elicit: &pdk.ElicitParams{Message: "What is your name?", RequestedSchema: nameForm}},
		"greeting": {CreateMessage: &pdk.CreateMessageParams{
			Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "Generate a greeting"}}},
			MaxTokens: 50,
		}},
		"client_roots": {ListRoots: true},
	})
	if err != nil {
		return nil, err
	}
	for key, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("%s: %w", key, r.Err)
		}
	}
	return pdk.TextResult(fmt.Sprintf("Name: %s; Greeting: %s; Roots: %d",
		formValue(res["user_name"].Elicit, "name"), sampledText(res["greeting"].CreateMessage), len(res["client_roots"].ListRoots.Roots))), nil
}

func askTwoRounds(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	name, err := askOne(ctx, "step1", &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "Step 1: What is your name?", RequestedSchema: nameForm}})
	if err != nil {
		return nil, err
	}
	color, err := askOne(ctx, "step2", &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "Step 2: What is your favorite color?", RequestedSchema: formOf("color", "string")}})
	if err != nil {
		return nil, err
	}
	return pdk.TextResult(fmt.Sprintf("Multi-round complete for %s who likes %s", formValue(name.Elicit, "name"), formValue(color.Elicit, "color"))), nil
}

// askWhatClientCan asks for the inputs the client declared it can give;
// a client that declared nothing (a session's, which declares it at
// initialize) is asked for both.
func askWhatClientCan(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	caps, declared := ctx.ClientCapabilities()
	reqs := map[string]*pdk.InputRequest{}
	if !declared || caps.CanElicit() {
		reqs["elicit_input"] = &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "Elicitation input", RequestedSchema: formOf("value", "string")}}
	}
	if !declared || caps.Sampling != nil {
		reqs["sample_input"] = &pdk.InputRequest{CreateMessage: &pdk.CreateMessageParams{
			Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "Sample request"}}},
			MaxTokens: 50,
		}}
	}
	if len(reqs) == 0 {
		return pdk.TextResult("No supported capabilities declared"), nil
	}
	res, err := ctx.Ask(reqs)
	if err != nil {
		return nil, err
	}
	var got []string
	for key := range reqs {
		if res[key].Err == nil {
			got = append(got, key)
		}
	}
	return pdk.TextResult("capabilities-ok: received " + strings.Join(got, ",")), nil
}

// needSampling samples: Hangar refuses a 2026-07-28 request whose client
// did not declare sampling with MissingRequiredClientCapability (-32021),
// before asking anything.
func needSampling(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := ctx.CreateMessage(&pdk.CreateMessageParams{
		Messages:  []*pdk.SamplingMessage{{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "Say success"}}},
		MaxTokens: 10,
	})
	if err != nil {
		return nil, err
	}
	return pdk.TextResult("Success: " + sampledText(res)), nil
}

// streamThenAsk reports progress and asks a question: at 2026-07-28 the
// question is the request's input_required result, never a request of
// the server's on the response stream.
func streamThenAsk(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	if err := ctx.Progress(&pdk.ProgressParams{Progress: 50, Total: 100}); err != nil {
		return nil, err
	}
	res, err := askOne(ctx, "confirm", &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "Continue?", RequestedSchema: confirmForm}})
	if err != nil {
		return nil, err
	}
	return pdk.TextResult("Streaming complete: confirmed=" + formValue(res.Elicit, "ok")), nil
}

func promptAskingContext(ctx *pdk.Context, _ *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
	res, err := askOne(ctx, "user_context", &pdk.InputRequest{Elicit: &pdk.ElicitParams{
		Message: "What context should the prompt use?", RequestedSchema: formOf("context", "string"),
	}})
	if err != nil {
		return nil, err
	}
	if res.Elicit.Action != pdk.ElicitAccept {
		return nil, errors.New("the user gave no context (" + res.Elicit.Action + ")")
	}
	return userMessages(&pdk.TextContent{Text: "Prompt with context: " + formValue(res.Elicit, "context")}), nil
}

// logThree logs three messages without pausing: a 2026-07-28 request gets
// them only if its _meta names a log level.
func logThree(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	for _, msg := range []string{"first", "second", "third"} {
		if err := ctx.Logf(pdk.LevelInfo, "test_logging_tool: %s message", msg); err != nil {
			return nil, err
		}
	}
	return pdk.TextResult("Logged three messages"), nil
}

// changes counts the list changes of this instance, for the descriptions.
var changes int

func addDynamicTool(state string) {
	pdk.AddTool(&pdk.Tool{Name: "test_dynamic_tool", Description: "A tool that test_trigger_tool_change changes: " + state, InputSchema: noArguments},
		func(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
			return pdk.TextResult("dynamic tool " + state), nil
		})
}

func addDynamicPrompt(state string) {
	pdk.AddPrompt(&pdk.Prompt{Name: "test_dynamic_prompt", Description: "A prompt that test_trigger_prompt_change changes: " + state},
		func(*pdk.Context, *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
			return userMessages(&pdk.TextContent{Text: "dynamic prompt " + state}), nil
		})
}

// changed names a change: this instance's count and a random part, since
// another instance may have made as many.
func changed() string {
	changes++
	return fmt.Sprintf("change %d (%s)", changes, rand.Text()[:8])
}

// triggerToolChange changes the tool list: the listeners of 2026-07-28
// (subscriptions/listen) and the sessions are told when the call returns.
func triggerToolChange(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	state := changed()
	addDynamicTool(state)
	ctx.NotifyToolListChanged()
	return pdk.TextResult("test_dynamic_tool: " + state), nil
}

func triggerPromptChange(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	state := changed()
	addDynamicPrompt(state)
	ctx.NotifyPromptListChanged()
	return pdk.TextResult("test_dynamic_prompt: " + state), nil
}
