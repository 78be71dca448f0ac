package server_test

// Contract tests through the server: a real go-sdk MCP client drives the
// recorder plugin internal/testplugins/contract (written against the raw
// Extism PDK), and what the plugin sees and gets back is checked against the
// seed schema (internal/testplugins/contract/xtp). internal/plugin's
// contract tests cover every export and import with samples of every
// member; these check that the server's own paths (prefixes, request ids,
// _meta, the SDK's decoding of client answers) keep to the schema too.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testplugins/contract/xtp"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// envelope is a v1 export's input, decoded.
type envelope struct {
	Request map[string]any `json:"request"`
	Context struct {
		ID   string         `json:"id"`
		Meta map[string]any `json:"_meta"`
	} `json:"context"`
}

// checkEnvelope validates the input export got strictly against the schema
// and decodes it.
func checkEnvelope(t *testing.T, c *xtp.Contract, export, got string) envelope {
	t.Helper()
	if err := c.Export(export).Input.Validate([]byte(got)); err != nil {
		t.Errorf("%s input does not follow the schema: %v\n%s", export, err, got)
	}
	var env envelope
	if err := json.Unmarshal([]byte(got), &env); err != nil {
		t.Fatalf("%s input %s: %v", export, got, err)
	}
	return env
}

func sameValue(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

// TestContractExportsThroughServer: prompts/get, resources/read,
// completion/complete (both reference types), tools/call, the listings and
// notifications/roots/list_changed, under a prefix, reach the plugin as the
// schema's envelopes, with the plugin's own names and URIs.
func TestContractExportsThroughServer(t *testing.T) {
	c, err := xtp.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := loadPlugin(t, "contract", testutil.BuildPlugin(t, "./internal/testplugins/contract"), config.Limits{MaxInstances: 1})
	s := newServer(t, nil, server.Mount{Plugin: p, Prefix: "k"})
	client := mcp.NewClient(&mcp.Implementation{Name: "contract", Version: "1"}, nil)
	client.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	cs := connectClient(t, s, client)
	ctx := context.Background()

	// The listings Hangar made when it started: no request, so an empty id
	// and _meta.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed string
	for _, tool := range tools.Tools {
		if tool.Name == "k_envelope" {
			listed = tool.Description
		}
	}
	env := checkEnvelope(t, c, "list_tools", listed)
	if env.Context.ID != "" || len(env.Context.Meta) != 0 || env.Request != nil {
		t.Errorf("list_tools input %s", listed)
	}
	for _, export := range []string{"list_resources", "list_resource_templates", "list_prompts"} {
		checkEnvelope(t, c, export, callTool(t, cs, "k_recorded", map[string]any{"export": export}).Content[0].(*mcp.TextContent).Text)
	}

	// tools/call: the plugin's name, the JSON-RPC id as a string, _meta as sent.
	params := &mcp.CallToolParams{Name: "k_echo", Arguments: map[string]any{"a": 1}, Meta: mcp.Meta{"trace": "x"}}
	params.SetProgressToken(5)
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	env = checkEnvelope(t, c, "call_tool", resultText(t, res))
	if _, err := strconv.Atoi(env.Context.ID); err != nil || !sameValue(t, env.Request, `{"name":"echo","arguments":{"a":1}}`) ||
		!sameValue(t, env.Context.Meta, `{"progressToken":5,"trace":"x"}`) {
		t.Errorf("call_tool input %s", resultText(t, res))
	}

	// prompts/get.
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "k_envelope", Arguments: map[string]string{"x": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	got := pr.Messages[0].Content.(*mcp.TextContent).Text
	if env = checkEnvelope(t, c, "get_prompt", got); !sameValue(t, env.Request, `{"name":"envelope","arguments":{"x":"y"}}`) {
		t.Errorf("get_prompt input %s", got)
	}

	// resources/read.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "k+contract://envelope"})
	if err != nil {
		t.Fatal(err)
	}
	got = rr.Contents[0].Text
	if env = checkEnvelope(t, c, "read_resource", got); !sameValue(t, env.Request, `{"uri":"contract://envelope"}`) {
		t.Errorf("read_resource input %s", got)
	}

	// completion/complete: MCP's "ref/prompt" and "ref/resource" are the
	// schema's "prompt" and "resource"; the client's _meta is in context.
	for _, tc := range []struct {
		ref  *mcp.CompleteReference
		want string
	}{
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "k_envelope"},
			`{"ref":{"type":"prompt","name":"envelope"},"argument":{"name":"a","value":"b"},"context":{"arguments":{"c":"d"}}}`},
		{&mcp.CompleteReference{Type: "ref/resource", URI: "k+contract://{x}"},
			`{"ref":{"type":"resource","uri":"contract://{x}"},"argument":{"name":"a","value":"b"},"context":{"arguments":{"c":"d"}}}`},
	} {
		comp, err := cs.Complete(ctx, &mcp.CompleteParams{
			Meta:     mcp.Meta{"trace": "y"},
			Ref:      tc.ref,
			Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"},
			Context:  &mcp.CompleteContext{Arguments: map[string]string{"c": "d"}},
		})
		if err != nil {
			t.Fatalf("complete %s: %v", tc.ref.Type, err)
		}
		got := comp.Completion.Values[0]
		env := checkEnvelope(t, c, "complete", got)
		if !sameValue(t, env.Request, tc.want) || env.Context.Meta["trace"] != "y" {
			t.Errorf("complete input %s\nwant request %s", got, tc.want)
		}
	}

	// notifications/roots/list_changed: {"_meta": {}, "meta": {}}, for
	// readers of either (XTP's generated bindings read "meta"); the
	// schema's strict check sees it without "meta".
	client.AddRoots(&mcp.Root{URI: "file:///tmp"})
	got = ""
	waitFor(t, "on_roots_list_changed", func() bool {
		got = resultText(t, callTool(t, cs, "k_recorded", map[string]any{"export": "on_roots_list_changed"}))
		return got != ""
	}, nil)
	if err := c.Export("on_roots_list_changed").Input.Validate([]byte(strings.Replace(got, `,"meta":{}`, "", 1))); err != nil || got != `{"_meta":{},"meta":{}}` {
		t.Errorf("on_roots_list_changed input %s: %v", got, err)
	}
}

// TestContractImportsThroughServer: the request imports reach a real client
// and return its answer as the schema's output types; logging and progress
// reach it with the schema's input members.
func TestContractImportsThroughServer(t *testing.T) {
	c, err := xtp.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := loadPlugin(t, "contract", testutil.BuildPlugin(t, "./internal/testplugins/contract"), config.Limits{MaxInstances: 1})
	s := newServer(t, nil, server.Mount{Plugin: p})

	var mu sync.Mutex
	got := map[string]any{}
	put := func(k string, v any) {
		mu.Lock()
		defer mu.Unlock()
		got[k] = v
	}
	take := func(k string) any {
		mu.Lock()
		defer mu.Unlock()
		return got[k]
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "contract", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{
			Sampling:    &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			put("create_message", req.Params)
			return &mcp.CreateMessageResult{
				Meta:    mcp.Meta{"mcp": "only"},
				Content: &mcp.TextContent{Text: "answer", Annotations: &mcp.Annotations{Priority: 0.5}},
				Model:   "m-1", Role: "assistant", StopReason: "endTurn",
			}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			put("create_elicitation", req.Params)
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Meta: mcp.Meta{"mcp": "only"}, Action: "accept", Content: map[string]any{"name": "Ada", "age": 36}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			put("notify_logging_message", req.Params)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			put("notify_progress", req.Params)
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work", Name: "work", Meta: mcp.Meta{"mcp": "only"}})
	cs := connectClient(t, s, client)
	ctx := context.Background()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}

	importCall := func(name, payload string, token any) string {
		t.Helper()
		args := map[string]any{"name": name}
		if payload != "" {
			args["payload"] = json.RawMessage(payload)
		}
		params := &mcp.CallToolParams{Name: "import", Arguments: args}
		if token != nil {
			params.SetProgressToken(token)
		}
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("import %s: %s", name, resultText(t, res))
		}
		return resultText(t, res)
	}
	checkOutput := func(name, out, want string) {
		t.Helper()
		if err := c.Import(name).Output.Validate([]byte(out)); err != nil {
			t.Errorf("%s returned %s, which does not follow the schema: %v", name, out, err)
		}
		var o any
		json.Unmarshal([]byte(out), &o)
		if !sameValue(t, o, want) {
			t.Errorf("%s returned %s\nwant %s", name, out, want)
		}
	}

	in := `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":64,"systemPrompt":"be brief",` +
		`"temperature":0.5,"stopSequences":["END"],"modelPreferences":{"costPriority":0.1,"speedPriority":0.2,"intelligencePriority":0.9,` +
		`"hints":[{"name":"claude"}]},"includeContext":"thisServer"}`
	out := importCall("create_message", in, nil)
	checkOutput("create_message", out, `{"content":{"type":"text","text":"answer","annotations":{"priority":0.5}},"model":"m-1","role":"assistant","stopReason":"endTurn"}`)
	if sent := take("create_message"); !sameValue(t, sent, in) {
		b, _ := json.Marshal(sent)
		t.Errorf("the client got %s\nwant %s", b, in)
	}

	in = `{"mode":"form","message":"Who?","timeout":60000,"requestedSchema":{"type":"object","required":["name"],"properties":{` +
		`"name":{"type":"string","title":"Name","minLength":1},"age":{"type":"integer","minimum":0}}}}`
	out = importCall("create_elicitation", in, nil)
	checkOutput("create_elicitation", out, `{"action":"accept","content":{"name":"Ada","age":36}}`)
	if sent := take("create_elicitation"); !sameValue(t, sent, `{"mode":"form","message":"Who?","requestedSchema":{"type":"object","required":["name"],"properties":{`+
		`"name":{"type":"string","title":"Name","minLength":1},"age":{"type":"integer","minimum":0}}}}`) {
		b, _ := json.Marshal(sent)
		t.Errorf("the client got %s", b)
	}
	out = importCall("create_elicitation", `{"mode":"url","message":"Log in","url":"https://example.com/login","elicitationId":"e-1"}`, nil)
	checkOutput("create_elicitation", out, `{"action":"decline"}`)

	checkOutput("list_roots", importCall("list_roots", "", nil), `{"roots":[{"uri":"file:///work","name":"work"}]}`)

	// notify_logging_message: the data object as the plugin sent it.
	importCall("notify_logging_message", `{"level":"warning","data":{"msg":"careful","n":2},"logger":"contract"}`, nil)
	waitFor(t, "the log message", func() bool { return take("notify_logging_message") != nil }, nil)
	if lm := take("notify_logging_message").(*mcp.LoggingMessageParams); lm.Level != "warning" || lm.Logger != "contract" ||
		!sameValue(t, lm.Data, `{"msg":"careful","n":2}`) {
		t.Errorf("log message %+v", lm)
	}

	// notify_progress: the schema's token is a string; the client's numeric
	// token comes back to it as the number it sent.
	importCall("notify_progress", `{"progress":50,"progressToken":"9","total":100,"message":"half way"}`, 9)
	waitFor(t, "the progress notification", func() bool { return take("notify_progress") != nil }, nil)
	pn := take("notify_progress").(*mcp.ProgressNotificationParams)
	if tok := fmt.Sprintf("%T:%v", pn.ProgressToken, pn.ProgressToken); tok == "string:9" || pn.Progress != 50 || pn.Total != 100 || pn.Message != "half way" {
		t.Errorf("progress %+v (token %s)", pn, tok)
	}
}
