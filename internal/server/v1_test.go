package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func fixture(t *testing.T) *plugin.Plugin {
	return loadPlugin(t, "conformance", testutil.BuildPlugin(t, "./examples/conformance"), config.Limits{})
}

func TestSamplingReachesTheCallingClient(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	var got *mcp.CreateMessageParams
	cs := connect(t, s, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			got = req.Params
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	})
	res := callTool(t, cs, "test_sampling", map[string]any{"prompt": "the answer?"})
	if res.IsError || resultText(t, res) != "LLM response: forty-two" {
		t.Errorf("test_sampling = %+v", res)
	}
	if got == nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "the answer?" || got.MaxTokens != 100 {
		t.Errorf("client got sampling request %+v", got)
	}

	// A client without sampling gets a clean tool error, not a hang.
	plain := connect(t, s, nil)
	res = callTool(t, plain, "test_sampling", map[string]any{"prompt": "x"})
	if !res.IsError || !strings.Contains(resultText(t, res), "does not support sampling") {
		t.Errorf("without sampling: %+v", res)
	}
}

func TestElicitationSchemaPassesThrough(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	var schema json.RawMessage
	cs := connect(t, s, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			schema, _ = json.Marshal(req.Params.RequestedSchema)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"untitledSingle": "option2"}}, nil
		},
	})
	res := callTool(t, cs, "test_elicitation_sep1330_enums", map[string]any{})
	if res.IsError || !strings.Contains(resultText(t, res), `action=accept, content={"untitledSingle":"option2"}`) {
		t.Errorf("result = %q", resultText(t, res))
	}
	var got map[string]any
	if err := json.Unmarshal(schema, &got); err != nil {
		t.Fatal(err)
	}
	props := got["properties"].(map[string]any)
	titled := props["titledSingle"].(map[string]any)["oneOf"].([]any)
	legacy := props["legacyEnum"].(map[string]any)["enumNames"].([]any)
	multi := props["titledMulti"].(map[string]any)["items"].(map[string]any)["anyOf"].([]any)
	if len(props) != 5 || len(titled) != 3 || len(legacy) != 3 || len(multi) != 3 {
		t.Errorf("schema reached the client changed: %s", schema)
	}

	// Declining is reported to the plugin as such.
	decline := connect(t, s, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	res = callTool(t, decline, "test_elicitation", map[string]any{"message": "who?"})
	if !strings.Contains(resultText(t, res), "action=decline") {
		t.Errorf("declined: %q", resultText(t, res))
	}

	// No elicitation capability: a clean error.
	res = callTool(t, connect(t, s, nil), "test_elicitation", map[string]any{"message": "who?"})
	if !res.IsError || !strings.Contains(resultText(t, res), "does not support elicitation") {
		t.Errorf("without elicitation: %+v", res)
	}
}

func TestLoggingRespectsLevel(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	var mu sync.Mutex
	var msgs []string
	cs := connect(t, s, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			// The schema's data is an object; the PDK sends text as {"message": text}.
			data, _ := req.Params.Data.(map[string]any)
			msgs = append(msgs, fmt.Sprintf("%s:%v", req.Params.Level, data["message"]))
		},
	})
	ctx := context.Background()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(msgs)
	}
	waitFor(t, "3 log messages", func() bool {
		return count() >= 3
	}, func() {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		callTool(t, cs, "test_tool_with_logging", map[string]any{})
	})
	mu.Lock()
	if got := strings.Join(msgs, "|"); got != "info:Tool execution started|info:Tool processing data|info:Tool execution completed" {
		t.Errorf("messages = %s", got)
	}
	msgs = nil
	mu.Unlock()

	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "test_tool_with_logging", map[string]any{})
	// Notifications for a call are sent before its result.
	if n := count(); n != 0 {
		t.Errorf("%d messages at level error, want none", n)
	}
}

func TestProgressUsesTheCallersToken(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	var mu sync.Mutex
	var got []string
	cs := connect(t, s, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%v@%v/%v", req.Params.ProgressToken, req.Params.Progress, req.Params.Total))
		},
	})
	params := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
	params.SetProgressToken("tok-7")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	}, nil)
	mu.Lock()
	defer mu.Unlock()
	if s := strings.Join(got, ","); s != "tok-7@0/100,tok-7@50/100,tok-7@100/100" {
		t.Errorf("progress = %s", s)
	}
}

// waitFor runs act (if any), then polls cond for up to 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool, act func()) {
	t.Helper()
	if act != nil {
		act()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPromptsResourcesAndCompletion(t *testing.T) {
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: fixture(t), Prefix: "c"}), nil)
	ctx := context.Background()
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "c_test_prompt_with_arguments", Arguments: map[string]string{"arg1": "A", "arg2": "B"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Messages) != 1 || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "arg1='A'") {
		t.Errorf("prompt = %+v", pr.Messages[0].Content)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "c+test://template/123/data"})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Contents[0].URI != "c+test://template/123/data" || !strings.Contains(rr.Contents[0].Text, "123") {
		t.Errorf("template read = %+v", rr.Contents[0])
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "c_test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Completion.Values) == 0 {
		t.Errorf("no completions")
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "nope"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1"},
	}); err == nil {
		t.Errorf("completing an unknown prompt succeeded")
	}
}
