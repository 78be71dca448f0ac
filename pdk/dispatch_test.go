package pdk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// invokeJSON runs an export of the package registry and returns its output.
func invokeJSON(t *testing.T, h hostAPI, export, input string) (string, error) {
	t.Helper()
	out, err := plugin.invoke(h, export, []byte(input))
	return string(out), err
}

func TestEmptyPluginLists(t *testing.T) {
	withRegistry(t)
	for export, want := range map[string]string{
		exportListTools:             `{"tools":[]}`,
		exportListResources:         `{"resources":[]}`,
		exportListResourceTemplates: `{"resourceTemplates":[]}`,
		exportListPrompts:           `{"prompts":[]}`,
	} {
		got, err := invokeJSON(t, &fakeHost{}, export, `{"context":{"id":"","_meta":{}}}`)
		if err != nil || got != want {
			t.Errorf("%s = %s, %v; want %s", export, got, err, want)
		}
	}
	got, err := invokeJSON(t, &fakeHost{}, exportComplete,
		`{"request":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}},"context":{"id":"1","_meta":{}}}`)
	if want := `{"completion":{"values":[]}}`; err != nil || got != want {
		t.Errorf("complete = %s, %v; want %s", got, err, want)
	}
	if got, err := invokeJSON(t, &fakeHost{}, exportOnRootsListChanged, `{"_meta":{}}`); err != nil || got != "" {
		t.Errorf("on_roots_list_changed = %q, %v", got, err)
	}
}

func TestCallTool(t *testing.T) {
	withRegistry(t)
	var seen *Context
	AddTool(&Tool{Name: "echo", Description: "Echo."}, func(ctx *Context, req *CallToolRequest) (*CallToolResult, error) {
		seen = ctx
		var args struct{ Text string }
		if err := req.BindArguments(&args); err != nil {
			return nil, err
		}
		return TextResult(args.Text), nil
	})
	AddTool(&Tool{Name: "fail"}, func(*Context, *CallToolRequest) (*CallToolResult, error) {
		return nil, errors.New("boom")
	})
	AddTool(&Tool{Name: "nothing"}, func(*Context, *CallToolRequest) (*CallToolResult, error) {
		return nil, nil
	})
	AddTool(&Tool{Name: "panic"}, func(*Context, *CallToolRequest) (*CallToolResult, error) {
		panic("oops")
	})

	got, err := invokeJSON(t, &fakeHost{}, exportListTools, `{"context":{"id":"","_meta":{}}}`)
	want := `{"tools":[{"name":"echo","description":"Echo.","inputSchema":{"type":"object"}},` +
		`{"name":"fail","inputSchema":{"type":"object"}},{"name":"nothing","inputSchema":{"type":"object"}},` +
		`{"name":"panic","inputSchema":{"type":"object"}}]}`
	if err != nil || got != want {
		t.Errorf("list_tools = %s, %v\nwant %s", got, err, want)
	}

	tests := []struct {
		input   string
		want    string
		wantErr string
	}{
		{`{"request":{"name":"echo","arguments":{"text":"hi"}},"context":{"id":"7","_meta":{"progressToken":3}}}`,
			`{"content":[{"type":"text","text":"hi"}]}`, ""},
		{`{"request":{"name":"echo","arguments":{"text":1}},"context":{"id":"7","_meta":{}}}`,
			`{"content":[{"type":"text","text":"invalid arguments for tool \"echo\": json: cannot unmarshal number into Go struct field .Text of type string"}],"isError":true}`, ""},
		{`{"request":{"name":"fail"},"context":{"id":"8","_meta":{}}}`,
			`{"content":[{"type":"text","text":"boom"}],"isError":true}`, ""},
		{`{"request":{"name":"nothing"},"context":{"id":"9","_meta":{}}}`, `{"content":[]}`, ""},
		{`{"request":{"name":"missing"},"context":{"id":"9","_meta":{}}}`, "", `unknown tool "missing"`},
		{`{"request":{"name":"panic"},"context":{"id":"9","_meta":{}}}`, "", "panic: panic: oops"},
		{`{"context":{"id":"9","_meta":{}}}`, "", "call_tool: missing request"},
		{`not json`, "", "invalid call_tool input"},
	}
	for _, tt := range tests {
		got, err := invokeJSON(t, &fakeHost{}, exportCallTool, tt.input)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("call_tool %s: error %v, want %q", tt.input, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("call_tool %s\n got %s, %v\nwant %s", tt.input, got, err, tt.want)
		}
	}

	if _, err := invokeJSON(t, &fakeHost{}, exportCallTool,
		`{"request":{"name":"echo"},"context":{"id":42,"_meta":{"progressToken":"tok"}}}`); err != nil {
		t.Fatal(err)
	}
	if seen.ID != "42" || seen.ProgressToken() != "tok" {
		t.Errorf("context = %+v, want id 42 and token tok", seen)
	}
}

func TestToolListChanges(t *testing.T) {
	withRegistry(t)
	noop := func(*Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	AddTool(&Tool{Name: "a"}, noop)
	AddTool(&Tool{Name: "b"}, noop)
	AddTool(&Tool{Name: "a", Title: "A again"}, noop)
	RemoveTools("b", "unknown")
	AddTool(&Tool{Name: "c"}, noop)
	got, _ := invokeJSON(t, &fakeHost{}, exportListTools, `{}`)
	want := `{"tools":[{"name":"a","title":"A again","inputSchema":{"type":"object"}},{"name":"c","inputSchema":{"type":"object"}}]}`
	if got != want {
		t.Errorf("list_tools = %s\nwant %s", got, want)
	}
}

func TestReadResource(t *testing.T) {
	withRegistry(t)
	text := func(ctx *Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
		body, _ := json.Marshal(req.Vars)
		return &ReadResourceResult{Contents: []ResourceContents{&TextResourceContents{URI: req.URI, Text: string(body)}}}, nil
	}
	AddResource(&Resource{URI: "test://items/special", Name: "special"}, text)
	AddResourceTemplate(&ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"}, text)
	AddResourceTemplate(&ResourceTemplate{URITemplate: "test://{kind}/{id}", Name: "any"}, text)
	AddResource(&Resource{URI: "test://broken", Name: "broken"}, func(*Context, *ReadResourceRequest) (*ReadResourceResult, error) {
		return nil, errors.New("disk on fire")
	})

	tests := []struct {
		uri, want, wantErr string
	}{
		{"test://items/special", `{"contents":[{"uri":"test://items/special","text":"null"}]}`, ""},
		{"test://items/42", `{"contents":[{"uri":"test://items/42","text":"{\"id\":\"42\"}"}]}`, ""},
		{"test://things/x%2Fy", `{"contents":[{"uri":"test://things/x%2Fy","text":"{\"id\":\"x/y\",\"kind\":\"things\"}"}]}`, ""},
		{"test://nowhere", "", `resource "test://nowhere" not found`},
		{"test://broken", "", "disk on fire"},
	}
	for _, tt := range tests {
		got, err := invokeJSON(t, &fakeHost{}, exportReadResource,
			`{"request":{"uri":"`+tt.uri+`"},"context":{"id":"1","_meta":{}}}`)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("read %s: error %v, want %q", tt.uri, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("read %s\n got %s, %v\nwant %s", tt.uri, got, err, tt.want)
		}
	}

	got, _ := invokeJSON(t, &fakeHost{}, exportListResourceTemplates, `{}`)
	want := `{"resourceTemplates":[{"uriTemplate":"test://items/{id}","name":"item"},{"uriTemplate":"test://{kind}/{id}","name":"any"}]}`
	if got != want {
		t.Errorf("list_resource_templates = %s\nwant %s", got, want)
	}
}

func TestAddResourceTemplatePanicsOnLevel2(t *testing.T) {
	withRegistry(t)
	defer func() {
		if recover() == nil {
			t.Error("no panic for {+path}")
		}
	}()
	AddResourceTemplate(&ResourceTemplate{URITemplate: "file:///{+path}", Name: "f"},
		func(*Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil })
}

func TestGetPrompt(t *testing.T) {
	withRegistry(t)
	AddPrompt(&Prompt{Name: "greet", Arguments: []*PromptArgument{{Name: "who", Required: true}}},
		func(ctx *Context, req *GetPromptRequest) (*GetPromptResult, error) {
			if req.Arguments["who"] == "" {
				return nil, errors.New("who is required")
			}
			return &GetPromptResult{Messages: []*PromptMessage{
				{Role: RoleUser, Content: &TextContent{Text: "Say hello to " + req.Arguments["who"]}},
			}}, nil
		})
	got, err := invokeJSON(t, &fakeHost{}, exportGetPrompt,
		`{"request":{"name":"greet","arguments":{"who":"Ada"}},"context":{"id":"1","_meta":{}}}`)
	want := `{"messages":[{"role":"user","content":{"type":"text","text":"Say hello to Ada"}}]}`
	if err != nil || got != want {
		t.Errorf("get_prompt = %s, %v\nwant %s", got, err, want)
	}
	if _, err := invokeJSON(t, &fakeHost{}, exportGetPrompt, `{"request":{"name":"greet"},"context":{}}`); err == nil ||
		err.Error() != "who is required" {
		t.Errorf("get_prompt without argument: %v", err)
	}
	if _, err := invokeJSON(t, &fakeHost{}, exportGetPrompt, `{"request":{"name":"nope"},"context":{}}`); err == nil ||
		err.Error() != `unknown prompt "nope"` {
		t.Errorf("get_prompt of unknown prompt: %v", err)
	}
	got, _ = invokeJSON(t, &fakeHost{}, exportListPrompts, `{}`)
	want = `{"prompts":[{"name":"greet","arguments":[{"name":"who","required":true}]}]}`
	if got != want {
		t.Errorf("list_prompts = %s\nwant %s", got, want)
	}
}

func TestComplete(t *testing.T) {
	withRegistry(t)
	var seen *CompleteRequest
	SetCompletionHandler(func(ctx *Context, req *CompleteRequest) (*CompleteResult, error) {
		seen = req
		values := make([]string, 150)
		for i := range values {
			values[i] = req.Argument.Value
		}
		return &CompleteResult{Completion: Completion{Values: values}}, nil
	})
	out, err := invokeJSON(t, &fakeHost{}, exportComplete,
		`{"request":{"ref":{"type":"ref/resource","uri":"test://t/{id}"},"argument":{"name":"id","value":"4"},`+
			`"context":{"arguments":{"other":"x"}}},"context":{"id":"1","_meta":{}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Ref.Type != RefResource || seen.Ref.URI != "test://t/{id}" || seen.Argument.Name != "id" ||
		seen.Context.Arguments["other"] != "x" {
		t.Errorf("request decoded as %+v", seen)
	}
	var res CompleteResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Completion.Values) != 100 || res.Completion.Total != 150 || !res.Completion.HasMore {
		t.Errorf("completion has %d values, total %d, hasMore %v; want 100, 150, true",
			len(res.Completion.Values), res.Completion.Total, res.Completion.HasMore)
	}
}

func TestOnRootsListChanged(t *testing.T) {
	withRegistry(t)
	h := &fakeHost{answers: map[string]string{importListRoots: `{"roots":[{"uri":"file:///a"}]}`}}
	var roots []*Root
	SetRootsListChangedHandler(func(ctx *Context) error {
		res, err := ctx.ListRoots()
		if err != nil {
			return err
		}
		roots = res.Roots
		if ctx.Meta["k"] != "v" {
			t.Errorf("meta = %v", ctx.Meta)
		}
		return nil
	})
	// The schema's form, and the form wrapped in "context" some hosts send.
	for _, in := range []string{`{"_meta":{"k":"v"}}`, `{"context":{"_meta":{"k":"v"}}}`} {
		roots = nil
		if _, err := invokeJSON(t, h, exportOnRootsListChanged, in); err != nil {
			t.Fatal(err)
		}
		if len(roots) != 1 || roots[0].URI != "file:///a" {
			t.Errorf("%s: roots = %v", in, roots)
		}
	}
}

func TestUnknownExport(t *testing.T) {
	if _, err := plugin.invoke(&fakeHost{}, "describe", nil); err == nil {
		t.Error("unknown export accepted")
	}
}

// TestCompleteReferenceForms: the schema's reference types ("prompt",
// "resource"), which Hangar sends, and MCP's ("ref/prompt",
// "ref/resource") reach the handler as RefPrompt and RefResource.
func TestCompleteReferenceForms(t *testing.T) {
	withRegistry(t)
	var seen CompleteReference
	SetCompletionHandler(func(ctx *Context, req *CompleteRequest) (*CompleteResult, error) {
		seen = req.Ref
		return &CompleteResult{Completion: Completion{Values: []string{"v"}}}, nil
	})
	for _, tc := range []struct {
		ref  string
		want CompleteReference
	}{
		{`{"type":"prompt","name":"p"}`, CompleteReference{Type: RefPrompt, Name: "p"}},
		{`{"type":"ref/prompt","name":"p"}`, CompleteReference{Type: RefPrompt, Name: "p"}},
		{`{"type":"resource","uri":"t://{x}"}`, CompleteReference{Type: RefResource, URI: "t://{x}"}},
		{`{"type":"ref/resource","uri":"t://{x}"}`, CompleteReference{Type: RefResource, URI: "t://{x}"}},
		{`{"type":"other","name":"p"}`, CompleteReference{Type: "other", Name: "p"}},
	} {
		seen = CompleteReference{}
		_, err := invokeJSON(t, &fakeHost{}, exportComplete,
			`{"request":{"ref":`+tc.ref+`,"argument":{"name":"a","value":""}},"context":{"id":"1","_meta":{}}}`)
		if err != nil || seen != tc.want {
			t.Errorf("ref %s: handler saw %+v (err %v), want %+v", tc.ref, seen, err, tc.want)
		}
	}
}

// TestPanicWithoutPluginFrame: a panic with no frame of the plugin between
// the PDK's dispatch and the panic (here the handler is the PDK's own
// package) names no line, rather than one of the dispatch's callers.
func TestPanicWithoutPluginFrame(t *testing.T) {
	withRegistry(t)
	AddTool(&Tool{Name: "boom"}, func(*Context, *CallToolRequest) (*CallToolResult, error) {
		panic("oops")
	})
	_, err := invokeJSON(t, &fakeHost{}, exportCallTool, `{"request":{"name":"boom"},"context":{"id":"1"}}`)
	if err == nil {
		t.Fatal("no error")
	}
	first, stack, _ := strings.Cut(err.Error(), "\n\n")
	if first != "boom: panic: oops" || !strings.Contains(stack, "TestPanicWithoutPluginFrame") {
		t.Errorf("error %q, stack\n%s", first, stack)
	}
}
