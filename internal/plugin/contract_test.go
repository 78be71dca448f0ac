package plugin_test

// Contract tests: what crosses the v1 interface is checked against the seed
// schema (shared/spec/plugin-schema-v1.json, converted to JSON Schema by
// internal/testplugins/contract/xtp), not against Hangar's own PDK. The
// plugin is internal/testplugins/contract, written against the raw Extism Go
// PDK: each export records its input, and a tool calls any host import with
// a payload the test chooses.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero/api"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testplugins/contract/xtp"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func contractSchema(t *testing.T) *xtp.Contract {
	t.Helper()
	c, err := xtp.Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// contractPlugin loads the recorder plugin with one instance, so that what
// one export records the next call can read.
func contractPlugin(t *testing.T) *plugin.Plugin {
	t.Helper()
	return load(t, testutil.BuildPlugin(t, "./internal/testplugins/contract"),
		plugin.Options{Name: "contract", Limits: config.Limits{MaxInstances: 1}, Logger: quiet()})
}

// contractCall is the request every contract test serves: a JSON-RPC id and
// a _meta as the server decodes them (a numeric progress token is a float64).
func contractCall(h plugin.Host) *plugin.Call {
	return &plugin.Call{Host: h, ID: "7", Meta: map[string]any{"progressToken": float64(3), "trace": "t-1"}}
}

const contractContext = `{"id":"7","_meta":{"progressToken":3,"trace":"t-1"}}`

// callContract calls a tool of the recorder plugin and returns its text.
func callContract(t *testing.T, p *plugin.Plugin, c *plugin.Call, tool string, args any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.CallTool(context.Background(), c, tool, b)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", tool, text(t, res))
	}
	return text(t, res)
}

// sameJSON reports whether two JSON documents are equal as values.
func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// TestContractExportInputs checks the envelope Hangar sends to each of the
// nine v1 exports: exactly the schema's input type (strictly: no member the
// schema does not name), with the values of the request.
func TestContractExportInputs(t *testing.T) {
	c := contractSchema(t)
	p := contractPlugin(t)
	ctx := context.Background()
	call := contractCall(nil)
	seen := map[string]bool{}

	for _, tc := range []struct {
		export string
		run    func(t *testing.T) string // returns the envelope the plugin saw
		want   string
	}{
		{"list_tools", func(t *testing.T) string {
			tools, err := p.ListTools(ctx, call)
			if err != nil || len(tools) != 5 || tools[0].Name != "envelope" {
				t.Fatalf("ListTools = %v, %v", tools, err)
			}
			return tools[0].Description
		}, `{"context":` + contractContext + `}`},
		{"list_resources", func(t *testing.T) string {
			rs, err := p.ListResources(ctx, call)
			if err != nil || len(rs) != 1 {
				t.Fatalf("ListResources = %v, %v", rs, err)
			}
			return rs[0].Description
		}, `{"context":` + contractContext + `}`},
		{"list_resource_templates", func(t *testing.T) string {
			rs, err := p.ListResourceTemplates(ctx, call)
			if err != nil || len(rs) != 1 {
				t.Fatalf("ListResourceTemplates = %v, %v", rs, err)
			}
			return rs[0].Description
		}, `{"context":` + contractContext + `}`},
		{"list_prompts", func(t *testing.T) string {
			ps, err := p.ListPrompts(ctx, call)
			if err != nil || len(ps) != 1 {
				t.Fatalf("ListPrompts = %v, %v", ps, err)
			}
			return ps[0].Description
		}, `{"context":` + contractContext + `}`},
		{"call_tool", func(t *testing.T) string {
			return callContract(t, p, call, "echo", map[string]any{"a": 1, "b": map[string]any{"c": []any{"d"}}})
		}, `{"request":{"name":"echo","arguments":{"a":1,"b":{"c":["d"]}}},"context":` + contractContext + `}`},
		{"call_tool", func(t *testing.T) string {
			res, err := p.CallTool(ctx, call, "echo", json.RawMessage("null"))
			if err != nil {
				t.Fatal(err)
			}
			return text(t, res)
		}, `{"request":{"name":"echo","arguments":{}},"context":` + contractContext + `}`},
		{"read_resource", func(t *testing.T) string {
			res, err := p.ReadResource(ctx, call, "contract://envelope")
			if err != nil || len(res.Contents) != 1 {
				t.Fatalf("ReadResource = %v, %v", res, err)
			}
			return res.Contents[0].Text
		}, `{"request":{"uri":"contract://envelope"},"context":` + contractContext + `}`},
		{"get_prompt", func(t *testing.T) string {
			res, err := p.GetPrompt(ctx, call, "envelope", map[string]string{"k": "v"})
			if err != nil || len(res.Messages) != 1 {
				t.Fatalf("GetPrompt = %v, %v", res, err)
			}
			return res.Messages[0].Content.(*mcp.TextContent).Text
		}, `{"request":{"name":"envelope","arguments":{"k":"v"}},"context":` + contractContext + `}`},
		// complete gets the schema's reference types, "prompt" and
		// "resource", not MCP's "ref/prompt" and "ref/resource"; the
		// request's _meta is in context._meta only.
		{"complete", func(t *testing.T) string {
			return complete(t, p, call, &mcp.CompleteParams{
				Meta:     mcp.Meta{"progressToken": float64(3)},
				Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "envelope"},
				Argument: mcp.CompleteParamsArgument{Name: "k", Value: "v"},
				Context:  &mcp.CompleteContext{Arguments: map[string]string{"other": "x"}},
			})
		}, `{"request":{"ref":{"type":"prompt","name":"envelope"},"argument":{"name":"k","value":"v"},"context":{"arguments":{"other":"x"}}},"context":` + contractContext + `}`},
		{"complete", func(t *testing.T) string {
			return complete(t, p, call, &mcp.CompleteParams{
				Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "contract://{x}"},
				Argument: mcp.CompleteParamsArgument{Name: "x", Value: ""},
			})
		}, `{"request":{"ref":{"type":"resource","uri":"contract://{x}"},"argument":{"name":"x","value":""}},"context":` + contractContext + `}`},
		// on_roots_list_changed gets the schema's PluginNotificationContext
		// itself, {"_meta": ...}, and the same as "meta", which bindings
		// written for the schema by hand read (hyper-mcp's).
		{"on_roots_list_changed", func(t *testing.T) string {
			if err := p.RootsListChanged(ctx, call); err != nil {
				t.Fatal(err)
			}
			return callContract(t, p, call, "recorded", map[string]string{"export": "on_roots_list_changed"})
		}, `{"_meta":{"progressToken":3,"trace":"t-1"},"meta":{"progressToken":3,"trace":"t-1"}}`},
		// With no request being served (listing at start-up), the context
		// is still complete.
		{"list_tools", func(t *testing.T) string {
			tools, err := p.ListTools(ctx, nil)
			if err != nil || len(tools) != 5 || tools[0].Name != "envelope" {
				t.Fatalf("ListTools = %v, %v", tools, err)
			}
			return tools[0].Description
		}, `{"context":{"id":"","_meta":{}}}`},
		{"on_roots_list_changed", func(t *testing.T) string {
			if err := p.RootsListChanged(ctx, nil); err != nil {
				t.Fatal(err)
			}
			return callContract(t, p, call, "recorded", map[string]string{"export": "on_roots_list_changed"})
		}, `{"_meta":{},"meta":{}}`},
	} {
		t.Run(tc.export, func(t *testing.T) {
			got := tc.run(t)
			seen[tc.export] = true
			// The members Hangar sends beyond the schema's, for bindings
			// that read them, are checked against want and left out of the
			// strict validation.
			strict := got
			if extra := extraMembers[tc.export]; len(extra) > 0 {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(got), &m); err != nil {
					t.Fatal(err)
				}
				for _, name := range extra {
					delete(m, name)
				}
				b, _ := json.Marshal(m)
				strict = string(b)
			}
			if err := c.Export(tc.export).Input.Validate([]byte(strict)); err != nil {
				t.Errorf("%s input does not follow the schema: %v\n%s", tc.export, err, got)
			}
			if !sameJSON(t, got, tc.want) {
				t.Errorf("%s input = %s\nwant %s", tc.export, got, tc.want)
			}
		})
	}
	for _, name := range c.Exports() {
		if !seen[name] {
			t.Errorf("export %s is not covered", name)
		}
	}
}

// extraMembers are the members of export inputs that the schema does not
// name, which Hangar sends for bindings that read them.
var extraMembers = map[string][]string{
	"on_roots_list_changed": {"meta"}, // PluginNotificationContext's _meta, as hyper-mcp's bindings read it
}

func complete(t *testing.T, p *plugin.Plugin, c *plugin.Call, params *mcp.CompleteParams) string {
	t.Helper()
	res, err := p.Complete(context.Background(), c, params)
	if err != nil || len(res.Completion.Values) != 1 {
		t.Fatalf("Complete = %v, %v", res, err)
	}
	return res.Completion.Values[0]
}

// Samples of the schema's types that use every member; a test checks that
// with xtp's Uncovered.
const (
	annotations  = `{"audience":["user","assistant"],"lastModified":"2025-01-02T03:04:05Z","priority":0.5}`
	textContent  = `{"type":"text","text":"hello","annotations":` + annotations + `,"_meta":{"k":"v"}}`
	imageContent = `{"type":"image","data":"aGVsbG8=","mimeType":"image/png","annotations":` + annotations + `,"_meta":{"k":"v"}}`
	audioContent = `{"type":"audio","data":"aGVsbG8=","mimeType":"audio/wav","annotations":` + annotations + `,"_meta":{"k":"v"}}`
	textContents = `{"uri":"contract://r/1","text":"hello","mimeType":"text/plain","_meta":{"k":"v"}}`
	blobContents = `{"uri":"contract://r/2","blob":"aGVsbG8=","mimeType":"application/octet-stream","_meta":{"k":"v"}}`
	resourceLink = `{"type":"resource_link","uri":"contract://r/1","name":"r1","title":"R1","description":"one","mimeType":"text/plain","size":5,"annotations":` + annotations + `,"_meta":{"k":"v"}}`
	embeddedText = `{"type":"resource","resource":` + textContents + `,"annotations":` + annotations + `,"_meta":{"k":"v"}}`
	embeddedBlob = `{"type":"resource","resource":` + blobContents + `,"annotations":` + annotations + `,"_meta":{"k":"v"}}`
)

// exportOutputs are schema-valid outputs of each export with an output, at
// least one minimal and one using every member.
var exportOutputs = map[string][]string{
	"list_tools": {
		`{"tools":[]}`,
		`{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":"t","title":"T","description":"a tool","inputSchema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},` +
			`"outputSchema":{"type":"object","properties":{"r":{"type":"number"}},"required":["r"]},"annotations":` + annotations + `}]}`,
	},
	"list_resources": {
		`{"resources":[]}`,
		`{"resources":[{"uri":"contract://r/1","name":"r1"}]}`,
		`{"resources":[{"uri":"contract://r/1","name":"r1","title":"R1","description":"one","mimeType":"text/plain","size":5,"annotations":` + annotations + `}]}`,
	},
	"list_resource_templates": {
		`{"resourceTemplates":[]}`,
		`{"resourceTemplates":[{"uriTemplate":"contract://r/{id}","name":"r"}]}`,
		`{"resourceTemplates":[{"uriTemplate":"contract://r/{id}","name":"r","title":"R","description":"any r","mimeType":"text/plain","annotations":` + annotations + `}]}`,
	},
	"list_prompts": {
		`{"prompts":[]}`,
		`{"prompts":[{"name":"p"}]}`,
		`{"prompts":[{"name":"p","title":"P","description":"a prompt","arguments":[{"name":"a","title":"A","description":"an argument","required":true}]}]}`,
	},
	"call_tool": {
		`{"content":[]}`,
		`{"content":[` + textContent + `,` + imageContent + `,` + audioContent + `,` + resourceLink + `,` + embeddedText + `,` + embeddedBlob + `],` +
			`"isError":true,"structuredContent":{"r":1},"_meta":{"k":"v"}}`,
	},
	"read_resource": {
		`{"contents":[]}`,
		`{"contents":[` + textContents + `,` + blobContents + `]}`,
	},
	"get_prompt": {
		`{"messages":[]}`,
		`{"description":"a prompt","messages":[{"role":"user","content":` + textContent + `},{"role":"assistant","content":` + imageContent + `},` +
			`{"role":"user","content":` + audioContent + `},{"role":"user","content":` + embeddedText + `},{"role":"user","content":` + embeddedBlob + `},` +
			`{"role":"user","content":` + resourceLink + `}]}`,
	},
	"complete": {
		`{"completion":{"values":[]}}`,
		`{"completion":{"values":["a","b"],"total":10,"hasMore":true}}`,
	},
}

// uncoveredOK are the members the full samples leave out, and why.
var uncoveredOK = map[string]string{
	// The schema gives list_resource_templates a nextCursor but no way to
	// pass it back (ListResourceTemplatesRequest has no request member).
	// Hangar sends it back as request.cursor; a plugin that ignores it
	// returns the same cursor, which Hangar refuses. Paging is outside the
	// schema; see docs/abi.md.
	"list_resource_templates:nextCursor": "paging",
}

// droppedOK are the members of schema-valid outputs that do not reach MCP,
// and why.
var droppedOK = map[string]string{
	// The schema's Tool.annotations is the content Annotations type
	// (audience, lastModified, priority); MCP's tool annotations are hints
	// (readOnlyHint, ...), which have none of those members.
	"list_tools:tools[0].annotations": "no such members in MCP tool annotations",
}

// dropped reports whether the member at path (export:path) is in droppedOK
// or inside a member that is.
func dropped(path string) bool {
	for p := range droppedOK {
		if path == p || strings.HasPrefix(path, p+".") {
			return true
		}
	}
	return false
}

// TestContractExportOutputs checks that Hangar accepts every schema-valid
// output of each export and that every member reaches its MCP result.
func TestContractExportOutputs(t *testing.T) {
	c := contractSchema(t)
	p := contractPlugin(t)
	ctx := context.Background()
	call := contractCall(nil)

	// result runs the export through Hangar and returns what Hangar made of
	// the output, as JSON in the shape of the schema's output type.
	result := map[string]func() (any, error){
		"list_tools": func() (any, error) {
			l, err := p.ListTools(ctx, call)
			return map[string]any{"tools": l}, err
		},
		"list_resources": func() (any, error) {
			l, err := p.ListResources(ctx, call)
			return map[string]any{"resources": l}, err
		},
		"list_resource_templates": func() (any, error) {
			l, err := p.ListResourceTemplates(ctx, call)
			return map[string]any{"resourceTemplates": l}, err
		},
		"list_prompts": func() (any, error) {
			l, err := p.ListPrompts(ctx, call)
			return map[string]any{"prompts": l}, err
		},
		"call_tool": func() (any, error) { return p.CallTool(ctx, call, "canned", nil) },
		"read_resource": func() (any, error) {
			return p.ReadResource(ctx, call, "contract://r/1")
		},
		"get_prompt": func() (any, error) { return p.GetPrompt(ctx, call, "p", nil) },
		"complete": func() (any, error) {
			return p.Complete(ctx, call, &mcp.CompleteParams{
				Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "p"},
				Argument: mcp.CompleteParamsArgument{Name: "a", Value: ""},
			})
		},
	}
	for _, name := range c.Exports() {
		out := c.Export(name).Output
		if out == nil {
			continue
		}
		samples := exportOutputs[name]
		if len(samples) == 0 {
			t.Errorf("export %s: no sample outputs", name)
			continue
		}
		covered := map[string]bool{}
		for i, sample := range samples {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				if err := out.Validate([]byte(sample)); err != nil {
					t.Fatalf("sample is not valid: %v", err)
				}
				un, err := out.Uncovered([]byte(sample))
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range un {
					covered[u] = covered[u] || false
				}
				if i == len(samples)-1 {
					for _, u := range un {
						if uncoveredOK[name+":"+u] == "" {
							t.Errorf("the full sample leaves out %s", u)
						}
					}
				}
				callContract(t, p, call, "set_output", map[string]any{"export": name, "output": json.RawMessage(sample)})
				defer callContract(t, p, call, "set_output", map[string]any{"export": name})
				got, err := result[name]()
				if err != nil {
					t.Fatalf("Hangar refused a schema-valid %s output: %v\n%s", name, err, sample)
				}
				b, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				for _, miss := range missing(t, sample, string(b)) {
					if !dropped(name + ":" + miss) {
						t.Errorf("%s: %s does not reach the MCP result %s", name, miss, b)
					}
				}
			})
		}
	}
}

// missing returns the paths of the members of want that got lacks or has
// with another value.
func missing(t *testing.T, want, got string) []string {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatal(err)
	}
	var out []string
	subset("", w, g, &out)
	return out
}

func subset(path string, want, got any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, orRoot(path))
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			gv, ok := g[k]
			if !ok {
				*out = append(*out, p)
				continue
			}
			subset(p, w[k], gv, out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*out = append(*out, orRoot(path))
			return
		}
		for i := range w {
			subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			*out = append(*out, orRoot(path))
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// contractHost is the MCP client as the host imports see it: it records
// what Hangar asks of it and answers with results that use every member the
// schema gives them, and MCP members the schema does not have.
type contractHost struct {
	mu   sync.Mutex
	got  map[string]any // by method: the params Hangar passed
	fail error          // when set, every request fails with it
}

func (h *contractHost) record(method string, params any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.got == nil {
		h.got = map[string]any{}
	}
	h.got[method] = params
}

func (h *contractHost) take(method string) any {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.got[method]
	delete(h.got, method)
	return v
}

var hostAnnotations = &mcp.Annotations{Audience: []mcp.Role{"user"}, LastModified: "2025-01-02T03:04:05Z", Priority: 0.25}

func (h *contractHost) CreateMessage(_ context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h.record("create_message", params)
	if h.fail != nil {
		return nil, h.fail
	}
	var content mcp.Content = &mcp.TextContent{Text: "answer", Annotations: hostAnnotations, Meta: mcp.Meta{"k": "v"}}
	switch params.SystemPrompt {
	case "image":
		content = &mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png", Annotations: hostAnnotations, Meta: mcp.Meta{"k": "v"}}
	case "audio":
		content = &mcp.AudioContent{Data: []byte("wav"), MIMEType: "audio/wav", Annotations: hostAnnotations, Meta: mcp.Meta{"k": "v"}}
	}
	return &mcp.CreateMessageResult{Meta: mcp.Meta{"mcp": "only"}, Content: content, Model: "m-1", Role: "assistant", StopReason: "endTurn"}, nil
}

func (h *contractHost) Elicit(_ context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.record("create_elicitation", params)
	if h.fail != nil {
		return nil, h.fail
	}
	return &mcp.ElicitResult{Meta: mcp.Meta{"mcp": "only"}, Action: "accept", Content: map[string]any{"name": "Ada", "age": 36.0, "ok": true}}, nil
}

func (h *contractHost) ListRoots(context.Context) (*mcp.ListRootsResult, error) {
	h.record("list_roots", nil)
	if h.fail != nil {
		return nil, h.fail
	}
	return &mcp.ListRootsResult{Meta: mcp.Meta{"mcp": "only"}, Roots: []*mcp.Root{
		{URI: "file:///work", Name: "work", Meta: mcp.Meta{"mcp": "only"}},
		{URI: "file:///tmp"},
	}}, nil
}

func (h *contractHost) Log(_ context.Context, params *mcp.LoggingMessageParams) error {
	h.record("notify_logging_message", params)
	return nil
}

func (h *contractHost) NotifyProgress(_ context.Context, params *mcp.ProgressNotificationParams) error {
	h.record("notify_progress", params)
	return nil
}

func (h *contractHost) NotifyElicitationComplete(_ context.Context, params *mcp.ElicitationCompleteParams) error {
	h.record("notify_url_elicitation_completed", params)
	return nil
}

// contractEvents records the plugin's list-changed and resource-updated
// events.
type contractEvents struct {
	mu  sync.Mutex
	got []string
}

func (e *contractEvents) ListsChanged(l *plugin.Lists) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, kind := range []plugin.ListKind{plugin.ToolList, plugin.ResourceList, plugin.PromptList} {
		if l.Read.Has(kind) {
			e.got = append(e.got, "list_changed:"+kind.String())
		}
	}
}

func (e *contractEvents) ResourceUpdated(uri string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, "resource_updated:"+uri)
}

// wait waits up to 10 seconds for the event want.
func (e *contractEvents) wait(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		for i, got := range e.got {
			if got == want {
				e.got = append(e.got[:i], e.got[i+1:]...)
				e.mu.Unlock()
				return
			}
		}
		seen := strings.Join(e.got, ", ")
		e.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no event %s (got %s)", want, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// importInputs are schema-valid inputs of each import that takes one:
// minimal ones, and last one using every member.
var importInputs = map[string][]string{
	"create_message": {
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":1}`,
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":1,"systemPrompt":"image"}`,
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":1,"systemPrompt":"audio"}`,
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}},{"role":"assistant","content":{"type":"text","text":"yes?"}}],` +
			`"maxTokens":64,"systemPrompt":"be brief","temperature":0.5,"stopSequences":["END"],` +
			`"modelPreferences":{"costPriority":0.1,"speedPriority":0.2,"intelligencePriority":0.9,"hints":[{"name":"claude"}]},"includeContext":"thisServer"}`,
	},
	"create_elicitation": {
		`{"mode":"form","message":"Who?","requestedSchema":{"type":"object","properties":{}}}`,
		`{"mode":"url","message":"Log in","url":"https://example.com/login","elicitationId":"e-1"}`,
		`{"mode":"url","message":"Log in","url":"https://example.com/login","elicitationId":"e-1","timeout":60000}`,
		`{"mode":"form","message":"Who?","timeout":60000,"requestedSchema":{"type":"object","required":["name"],"properties":{` +
			`"name":{"type":"string","title":"Name","description":"your name","minLength":1,"maxLength":50,"format":"email"},` +
			`"age":{"type":"integer","title":"Age","description":"in years","minimum":0,"maximum":150},` +
			`"ok":{"type":"boolean","title":"OK","description":"agree?","default":true},` +
			`"color":{"type":"string","title":"Color","description":"pick","enum":["r","g"],"enumNames":["Red","Green"]}}}}`,
	},
	"notify_logging_message": {
		`{"level":"debug","data":{}}`,
		`{"level":"warning","data":{"msg":"careful","n":2},"logger":"contract"}`,
	},
	"notify_progress": {
		`{"progress":1,"progressToken":"3"}`,
		`{"progress":50,"progressToken":"3","total":100,"message":"half way"}`,
	},
	"notify_resource_updated":          {`{"uri":"contract://r/1"}`},
	"notify_url_elicitation_completed": {`{"elicitationId":"e-1"}`},
}

// consumedOK are the members of import inputs that Hangar acts on instead of
// passing to the client.
var consumedOK = map[string]bool{
	"create_elicitation:timeout": true, // bounds Hangar's wait for the client
}

// TestContractImports checks each of the ten v1 host imports both ways:
// Hangar accepts every schema-valid input and passes all of it on, and
// what it returns follows the schema's output type strictly.
func TestContractImports(t *testing.T) {
	c := contractSchema(t)
	p := contractPlugin(t)
	h := &contractHost{}
	ev := &contractEvents{}
	p.SetEvents(ev)
	call := contractCall(h)
	seen := map[string]bool{}

	importCall := func(t *testing.T, name, payload string) string {
		t.Helper()
		args := map[string]any{"name": name}
		if payload != "" {
			args["payload"] = json.RawMessage(payload)
		}
		return callContract(t, p, call, "import", args)
	}

	for _, name := range c.Imports() {
		f := c.Import(name)
		inputs := importInputs[name]
		if f.Input == nil {
			inputs = []string{""}
		} else if len(inputs) == 0 {
			t.Errorf("import %s: no sample inputs", name)
			continue
		}
		for i, in := range inputs {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				seen[name] = true
				if f.Input != nil {
					if err := f.Input.Validate([]byte(in)); err != nil {
						t.Fatalf("sample is not valid: %v", err)
					}
					if i == len(inputs)-1 {
						un, err := f.Input.Uncovered([]byte(in))
						if err != nil {
							t.Fatal(err)
						}
						if len(un) > 0 {
							t.Errorf("the full sample leaves out %v", un)
						}
					}
				}
				out := importCall(t, name, in)

				// Output: exactly the schema's type.
				if f.Output != nil {
					if err := f.Output.Validate([]byte(out)); err != nil {
						t.Errorf("%s returned %s, which does not follow the schema: %v", name, out, err)
					}
				} else if out != "" {
					t.Errorf("%s returned %q", name, out)
				}

				// Input: what reached the client, or the event.
				switch name {
				case "notify_tool_list_changed", "notify_resource_list_changed", "notify_prompt_list_changed":
					ev.wait(t, "list_changed:"+strings.TrimSuffix(strings.TrimPrefix(name, "notify_"), "_list_changed")+"s")
					return
				case "notify_resource_updated":
					ev.wait(t, "resource_updated:contract://r/1")
					return
				}
				got := h.take(name)
				if got == nil && name != "list_roots" {
					t.Fatalf("%s did not reach the client", name)
				}
				checkImportOutput(t, name, out)
				if in == "" {
					return
				}
				b, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				want := in
				if name == "notify_progress" {
					// The schema's token is a string; the client's was the
					// number 3, and gets it back as such.
					want = strings.Replace(in, `"progressToken":"3"`, `"progressToken":3`, 1)
				}
				for _, miss := range missing(t, want, string(b)) {
					if !consumedOK[name+":"+miss] {
						t.Errorf("%s: %s of %s does not reach the client, which got %s", name, miss, in, b)
					}
				}
			})
		}
	}
	for _, name := range c.Imports() {
		if !seen[name] {
			t.Errorf("import %s is not covered", name)
		}
	}

	// The progress token: the call's, whatever form the plugin gives it in;
	// progress under any other token, or from a call that has none, does
	// not reach the client (MCP allows progress only under the token of a
	// request in progress) and is counted.
	for _, tc := range []struct {
		call any
		in   string
		want any // nil: dropped
	}{
		{float64(3), `{"progress":1,"progressToken":"3"}`, float64(3)},
		{float64(3), `{"progress":1,"progressToken":3}`, float64(3)},
		{float64(3), `{"progress":1}`, float64(3)},
		{float64(3), `{"progress":1,"progressToken":null}`, float64(3)},
		{"tok", `{"progress":1,"progressToken":"tok"}`, "tok"},
		{"3", `{"progress":1,"progressToken":"3"}`, "3"},
		// Bindings that always write the token send "" when the call had
		// none, or tokens of their own.
		{float64(3), `{"progress":1,"progressToken":""}`, nil},
		{float64(3), `{"progress":1,"progressToken":"4"}`, nil},
		{float64(3), `{"progress":1,"progressToken":"other"}`, nil},
		{"3", `{"progress":1,"progressToken":3}`, nil},
		{"tok", `{"progress":1,"progressToken":"\"tok\""}`, nil},
		{nil, `{"progress":1,"progressToken":""}`, nil},
		{nil, `{"progress":1,"progressToken":"7"}`, nil},
		{nil, `{"progress":1}`, nil},
	} {
		meta := map[string]any{}
		if tc.call != nil {
			meta["progressToken"] = tc.call
		}
		c := &plugin.Call{Host: h, ID: "8", Meta: meta}
		before := p.ProgressDropped()
		callContract(t, p, c, "import", map[string]any{"name": "notify_progress", "payload": json.RawMessage(tc.in)})
		got, _ := h.take("notify_progress").(*mcp.ProgressNotificationParams)
		dropped := p.ProgressDropped() - before
		switch {
		case tc.want == nil && (got != nil || dropped != 1):
			t.Errorf("call token %#v, plugin sent %s: client got %+v (dropped %d), want it dropped and counted", tc.call, tc.in, got, dropped)
		case tc.want != nil && (got == nil || got.ProgressToken != tc.want || dropped != 0):
			t.Errorf("call token %#v, plugin sent %s: client got %+v (dropped %d), want token %#v", tc.call, tc.in, got, dropped, tc.want)
		}
	}
}

// checkImportOutput checks the values of a request import's output.
func checkImportOutput(t *testing.T, name, out string) {
	t.Helper()
	var want string
	switch name {
	case "create_message":
		var res struct {
			Content struct {
				Type string `json:"type"`
			} `json:"content"`
		}
		json.Unmarshal([]byte(out), &res)
		switch res.Content.Type {
		case "image":
			want = `{"content":{"type":"image","data":"cG5n","mimeType":"image/png","annotations":{"audience":["user"],"lastModified":"2025-01-02T03:04:05Z","priority":0.25},"_meta":{"k":"v"}},"model":"m-1","role":"assistant","stopReason":"endTurn"}`
		case "audio":
			want = `{"content":{"type":"audio","data":"d2F2","mimeType":"audio/wav","annotations":{"audience":["user"],"lastModified":"2025-01-02T03:04:05Z","priority":0.25},"_meta":{"k":"v"}},"model":"m-1","role":"assistant","stopReason":"endTurn"}`
		default:
			want = `{"content":{"type":"text","text":"answer","annotations":{"audience":["user"],"lastModified":"2025-01-02T03:04:05Z","priority":0.25},"_meta":{"k":"v"}},"model":"m-1","role":"assistant","stopReason":"endTurn"}`
		}
	case "create_elicitation":
		want = `{"action":"accept","content":{"name":"Ada","age":36,"ok":true}}`
	case "list_roots":
		want = `{"roots":[{"uri":"file:///work","name":"work"},{"uri":"file:///tmp"}]}`
	default:
		return
	}
	if !sameJSON(t, out, want) {
		t.Errorf("%s returned %s\nwant %s", name, out, want)
	}
}

// TestContractImportErrors: a request import that fails returns a JSON
// object whose "error" member is the message. Where the schema's output
// type has a neutral value, the error carries it, so that it is a valid
// output (as the schema is written, which allows other members) for a
// plugin that does not look at "error": create_elicitation answers
// {"error", "action": "cancel"}, list_roots {"error", "roots": []}. A
// CreateMessageResult has no neutral value: create_message answers
// {"error"} alone, which is not a valid result, so that no plugin mistakes
// it for one. "error" is the first member.
func TestContractImportErrors(t *testing.T) {
	c := contractSchema(t)
	p := contractPlugin(t)
	h := &contractHost{fail: errors.New("the client said no")}
	call := contractCall(h)
	neutral := map[string]string{
		"create_message":     "",
		"create_elicitation": `,"action":"cancel"`,
		"list_roots":         `,"roots":[]`,
	}
	for _, tc := range []struct{ name, in, msg string }{
		{"create_message", importInputs["create_message"][0], "the client said no"},
		{"create_elicitation", importInputs["create_elicitation"][0], "the client said no"},
		{"list_roots", "", "the client said no"},
		{"create_message", `{"maxTokens":"many"}`, "invalid input: "},
		{"create_elicitation", `{"mode":"sideways","message":"m"}`, "unknown elicitation mode"},
		{"create_elicitation", `{"mode":"url","message":"m"}`, "url elicitation needs url and elicitationId"},
	} {
		args := map[string]any{"name": tc.name}
		if tc.in != "" {
			args["payload"] = json.RawMessage(tc.in)
		}
		out := callContract(t, p, call, "import", args)
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &e); err != nil || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s(%s) = %s, want an error containing %q", tc.name, tc.in, out, tc.msg)
			continue
		}
		if want := fmt.Sprintf(`{"error":%q%s}`, e.Error, neutral[tc.name]); !sameJSON(t, out, want) || !strings.HasPrefix(out, `{"error":`) {
			t.Errorf("%s(%s) = %s, want %s", tc.name, tc.in, out, want)
		}
		schema := c.Import(tc.name).Output
		err := schema.ValidateLoose([]byte(out))
		if neutral[tc.name] == "" {
			if err == nil {
				t.Errorf("%s: the error %s is a valid %s output: plugins could mistake it for a result", tc.name, out, tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: the error %s is not a valid output as the schema is written: %v", tc.name, out, err)
		}
		// Strictly, only the error member is not the schema's.
		var m map[string]any
		json.Unmarshal([]byte(out), &m)
		delete(m, "error")
		rest, _ := json.Marshal(m)
		if err := schema.Validate(rest); err != nil {
			t.Errorf("%s: %s without its error does not follow the schema strictly: %v", tc.name, out, err)
		}
	}
}

// TestContractElicitationFormats: the schema's string format "date_time" is
// MCP's "date-time"; the others are the same in both.
func TestContractElicitationFormats(t *testing.T) {
	c := contractSchema(t)
	p := contractPlugin(t)
	h := &contractHost{}
	call := contractCall(h)
	in := `{"mode":"form","message":"When?","requestedSchema":{"type":"object","properties":{` +
		`"at":{"type":"string","format":"date_time"},"day":{"type":"string","format":"date"},` +
		`"mail":{"type":"string","format":"email"},"site":{"type":"string","format":"uri"}}}}`
	if err := c.Import("create_elicitation").Input.Validate([]byte(in)); err != nil {
		t.Fatalf("sample is not valid: %v", err)
	}
	callContract(t, p, call, "import", map[string]any{"name": "create_elicitation", "payload": json.RawMessage(in)})
	got, _ := h.take("create_elicitation").(*mcp.ElicitParams)
	if got == nil {
		t.Fatal("the elicitation did not reach the client")
	}
	b, _ := json.Marshal(got.RequestedSchema)
	if want := `{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},` +
		`"mail":{"type":"string","format":"email"},"site":{"type":"string","format":"uri"}}}`; !sameJSON(t, string(b), want) {
		t.Errorf("the client got requestedSchema %s\nwant %s", b, want)
	}
}

// pdkCalls are the calls of the pdkuser plugin (internal/testplugins/
// contract/pdkuser, written with Hangar's pdk): import and variant; the
// "full" variants set every member the schema has.
var pdkCalls = []struct{ name, variant string }{
	{"create_message", "minimal"},
	{"create_message", "full"},
	{"create_elicitation", "minimal"},
	{"create_elicitation", "full"},
	{"create_elicitation", "url"},
	{"list_roots", ""},
	{"notify_logging_message", "logf"},
	{"notify_logging_message", "text"},
	{"notify_logging_message", "full"},
	{"notify_progress", "minimal"},
	{"notify_progress", "full"},
	{"notify_progress", "number"},
	{"notify_tool_list_changed", ""},
	{"notify_resource_list_changed", ""},
	{"notify_prompt_list_changed", ""},
	{"notify_resource_updated", ""},
	{"notify_url_elicitation_completed", ""},
}

// pdkAnswers are the schema-valid outputs the recording host gives the
// request imports.
var pdkAnswers = map[string]string{
	"create_message":     `{"content":{"type":"text","text":"answer"},"model":"m-1","role":"assistant","stopReason":"endTurn"}`,
	"create_elicitation": `{"action":"accept","content":{"name":"Ada"}}`,
	"list_roots":         `{"roots":[{"uri":"file:///work","name":"work"}]}`,
}

// pdkImport is one import call the recording host saw.
type pdkImport struct {
	name  string
	input []byte // nil for imports without input
}

// recordPDKImports runs the pdkuser plugin under Extism alone, with host
// imports made from the schema (its ten imports, with the signatures it
// gives them) that record their raw input and answer pdkAnswers. It calls
// the plugin's tool once per pdkCalls entry and returns, for each, the
// import calls and the tool's text.
func recordPDKImports(t *testing.T, c *xtp.Contract) (seen [][]pdkImport, texts []string) {
	t.Helper()
	ctx := context.Background()
	var got []pdkImport
	var fns []extism.HostFunction
	for _, name := range c.Imports() {
		f := c.Import(name)
		var params, results []api.ValueType
		if f.Input != nil {
			params = []api.ValueType{extism.ValueTypePTR}
		}
		if f.Output != nil {
			results = []api.ValueType{extism.ValueTypePTR}
		}
		fn := extism.NewHostFunctionWithStack(name, func(_ context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			call := pdkImport{name: name}
			if f.Input != nil {
				in, err := cp.ReadBytes(stack[0])
				if err != nil {
					in = []byte("unreadable input: " + err.Error())
				}
				call.input = in
			}
			got = append(got, call)
			if f.Output != nil {
				off, err := cp.WriteBytes([]byte(pdkAnswers[name]))
				if err != nil {
					panic(err)
				}
				stack[0] = off
			}
		}, params, results)
		fn.SetNamespace(plugin.HostNamespace)
		fns = append(fns, fn)
	}
	manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmFile{Path: testutil.BuildPlugin(t, "./internal/testplugins/contract/pdkuser")}}}
	p, err := extism.NewPlugin(ctx, manifest, extism.PluginConfig{EnableWasi: true}, fns)
	if err != nil {
		t.Fatalf("instantiating pdkuser with the schema's imports: %v", err)
	}
	defer p.Close(ctx)
	for _, pc := range pdkCalls {
		env := fmt.Sprintf(`{"request":{"name":"call","arguments":{"import":%q,"variant":%q}},"context":{"id":"7","_meta":{"progressToken":3}}}`, pc.name, pc.variant)
		if err := c.Export("call_tool").Input.Validate([]byte(env)); err != nil {
			t.Fatalf("test envelope: %v", err)
		}
		got = nil
		rc, out, err := p.Call("call_tool", []byte(env))
		if err != nil || rc != 0 {
			t.Fatalf("%s/%s: call_tool = %d, %v", pc.name, pc.variant, rc, err)
		}
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s/%s: call_tool output %s (%v)", pc.name, pc.variant, out, err)
		}
		seen = append(seen, got)
		texts = append(texts, res.Content[0].Text)
	}
	return seen, texts
}

// TestContractPDK holds Hangar's own PDK to the schema: a plugin written
// with it (internal/testplugins/contract/pdkuser) runs under a host made
// from the schema's import signatures, and every payload the PDK sends is
// validated strictly against the import's input type, as the plugin
// contract tests validate Hangar's. The "full" calls cover every member of
// the input types, and the PDK decodes the schema's outputs.
func TestContractPDK(t *testing.T) {
	c := contractSchema(t)
	seen, texts := recordPDKImports(t, c)
	uncovered := map[string]map[string]int{} // import: member: variants leaving it out
	variants := map[string]int{}
	for i, pc := range pdkCalls {
		what := pc.name + "/" + pc.variant
		got := seen[i]
		if len(got) != 1 || got[0].name != pc.name {
			t.Errorf("%s: the PDK called %v, want %s once", what, got, pc.name)
			continue
		}
		f := c.Import(pc.name)
		if f.Input != nil {
			if err := f.Input.Validate(got[0].input); err != nil {
				t.Errorf("%s: the PDK sent %s, which does not follow the schema: %v", what, got[0].input, err)
			}
			un, err := f.Input.Uncovered(got[0].input)
			if err != nil {
				t.Fatal(err)
			}
			if uncovered[pc.name] == nil {
				uncovered[pc.name] = map[string]int{}
			}
			variants[pc.name]++
			for _, u := range un {
				uncovered[pc.name][u]++
			}
		} else if got[0].input != nil {
			t.Errorf("%s: the PDK sent input %q to an import without input", what, got[0].input)
		}
		if want, ok := pdkAnswers[pc.name]; ok && !sameJSON(t, texts[i], want) {
			t.Errorf("%s: the PDK decoded %s as %s", what, want, texts[i])
		}
	}
	for name, members := range uncovered {
		for m, n := range members {
			if n == variants[name] {
				t.Errorf("%s: no call of the PDK sends %s", name, m)
			}
		}
	}
	for _, name := range c.Imports() {
		found := false
		for _, pc := range pdkCalls {
			found = found || pc.name == name
		}
		if !found {
			t.Errorf("import %s is not covered", name)
		}
	}
	// The values the PDK chose for the schema's types.
	for i, pc := range pdkCalls {
		var want string
		switch pc.name + "/" + pc.variant {
		case "notify_logging_message/logf":
			want = `{"level":"warning","data":{"message":"disk 91% full"}}`
		case "notify_logging_message/text":
			want = `{"level":"info","data":{"message":"plain"}}`
		case "notify_progress/minimal":
			want = `{"progressToken":"3","progress":1}`
		case "notify_progress/number":
			want = `{"progressToken":"3","progress":2}`
		default:
			continue
		}
		if len(seen[i]) == 1 && !sameJSON(t, string(seen[i][0].input), want) {
			t.Errorf("%s/%s: the PDK sent %s, want %s", pc.name, pc.variant, seen[i][0].input, want)
		}
	}
}

// TestContractPDKWithHangar runs the pdkuser plugin under Hangar: what the
// PDK sends in the schema's forms reaches the client as MCP has it, and
// Hangar's import errors, neutral values included, reach the plugin as
// *pdk.HostError.
func TestContractPDKWithHangar(t *testing.T) {
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/contract/pdkuser"),
		plugin.Options{Name: "pdkuser", Logger: quiet()})
	h := &contractHost{}
	call := contractCall(h)
	run := func(name, variant string) string {
		return callContract(t, p, call, "call", map[string]string{"import": name, "variant": variant})
	}

	run("notify_logging_message", "logf")
	if lm, _ := h.take("notify_logging_message").(*mcp.LoggingMessageParams); lm == nil || lm.Level != "warning" ||
		!reflect.DeepEqual(lm.Data, map[string]any{"message": "disk 91% full"}) {
		t.Errorf("Logf reached the client as %+v", lm)
	}
	for _, variant := range []string{"minimal", "number"} {
		run("notify_progress", variant)
		if pn, _ := h.take("notify_progress").(*mcp.ProgressNotificationParams); pn == nil || pn.ProgressToken != float64(3) {
			t.Errorf("Progress (%s) reached the client as %+v, want the call's token 3", variant, pn)
		}
	}
	if got, want := run("list_roots", ""), `{"roots":[{"uri":"file:///work","name":"work"},{"uri":"file:///tmp"}]}`; !sameJSON(t, got, want) {
		t.Errorf("ListRoots = %s, want %s", got, want)
	}

	h.fail = errors.New("the client said no")
	for _, pc := range [][2]string{{"create_message", "minimal"}, {"create_elicitation", "minimal"}, {"create_elicitation", "url"}, {"list_roots", ""}} {
		if got := run(pc[0], pc[1]); got != "host error: the client said no" {
			t.Errorf("%s/%s with a failing client: %q, want the host error", pc[0], pc[1], got)
		}
	}
}

// TestContractToolchainShapes: what bindings generated from the schema
// send, where the schema leaves room, and what a user of each sees.
// XTP's generated bindings type create_message's messages as untyped
// objects, which plugins fill with bare content blocks; Go structs whose
// Type field was never set send content blocks with "type": "" (or none);
// bindings that always write the progress token send "" (tested in
// TestContractImports), and hand-written ones read on_roots_list_changed's
// "meta" (TestContractExportInputs). A payload Hangar cannot use gets an
// error naming the member and what was expected.
func TestContractToolchainShapes(t *testing.T) {
	c := contractSchema(t)
	p := contractPlugin(t)
	h := &contractHost{}
	call := contractCall(h)
	answer := `{"content":{"type":"text","text":"answer","annotations":{"audience":["user"],"lastModified":"2025-01-02T03:04:05Z","priority":0.25},"_meta":{"k":"v"}},"model":"m-1","role":"assistant","stopReason":"endTurn"}`

	// create_message: the messages the client is asked with, or the
	// error the plugin gets back (and the client is not asked).
	for _, tc := range []struct {
		name     string
		messages string // the "messages" member
		want     string // the messages the client gets; "" for an error
		err      string // the error the plugin gets
	}{
		{"bare text block (XTP's Go and Rust bindings)",
			`[{"type":"text","text":"What is 2+2?"}]`,
			`[{"role":"user","content":{"type":"text","text":"What is 2+2?"}}]`, ""},
		{"a run of bare blocks: one user message each",
			`[{"type":"text","text":"Describe"},{"type":"image","data":"aGVsbG8=","mimeType":"image/png"},{"type":"audio","data":"aGVsbG8=","mimeType":"audio/wav"}]`,
			`[{"role":"user","content":{"type":"text","text":"Describe"}},{"role":"user","content":{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}},` +
				`{"role":"user","content":{"type":"audio","data":"aGVsbG8=","mimeType":"audio/wav"}}]`, ""},
		{"MCP messages and bare blocks mixed",
			`[{"role":"assistant","content":{"type":"text","text":"Ask me."}},{"type":"text","text":"Why?"}]`,
			`[{"role":"assistant","content":{"type":"text","text":"Ask me."}},{"role":"user","content":{"type":"text","text":"Why?"}}]`, ""},
		{"an MCP message whose content is an array",
			`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`,
			`[{"role":"user","content":{"type":"text","text":"a"}},{"role":"user","content":{"type":"text","text":"b"}}]`, ""},
		{"type empty, as a Go struct whose Type was not set sends it",
			`[{"text":"hi","type":""}]`,
			`[{"role":"user","content":{"type":"text","text":"hi"}}]`, ""},
		{"type missing, told by the members",
			`[{"text":"hi","annotations":{"priority":1}},{"data":"aGVsbG8=","mimeType":"audio/wav"},{"role":"user","content":{"data":"aGVsbG8=","mimeType":"image/png"}}]`,
			`[{"role":"user","content":{"type":"text","text":"hi","annotations":{"priority":1}}},{"role":"user","content":{"type":"audio","data":"aGVsbG8=","mimeType":"audio/wav"}},` +
				`{"role":"user","content":{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}}]`, ""},
		{"type missing, and the members do not tell",
			`[{"data":"aGVsbG8=","mimeType":"application/pdf"}]`, "",
			`invalid input: messages[0].type: missing, and the mimeType "application/pdf" is neither image/ nor audio/; expected "text", "image" or "audio"`},
		{"type missing, no members of any type",
			`[{"annotations":{}}]`, "",
			`invalid input: messages[0].type: missing, and its members do not tell which type it is; expected "text", "image" or "audio"`},
		{"a message without content",
			`[{"role":"user"}]`, "",
			`invalid input: messages[0].content: missing; expected a content block ("text", "image" or "audio")`},
		{"a role MCP does not have",
			`[{"role":"system","content":{"type":"text","text":"hi"}}]`, "",
			`invalid input: messages[0].role: got "system"; expected "user" or "assistant"`},
		{"a content without role",
			`[{"content":{"type":"text","text":"hi"}}]`, "",
			`invalid input: messages[0].role: missing; expected "user" or "assistant"`},
		{"text that is not a string",
			`[{"type":"text","text":4}]`, "",
			`invalid input: messages[0].text: expected a string, got a number`},
		{"a type sampling does not take",
			`[{"role":"user","content":{"type":"resource_link","uri":"file:///a","name":"a"}}]`, "",
			`invalid input: messages[0].content.type: "resource_link" is not allowed here; expected "text", "image" or "audio"`},
		{"a type a bare block cannot be",
			`[{"uri":"file:///a","name":"a"}]`, "",
			`invalid input: messages[0].type: missing, and the members are those of "resource_link", which is not allowed here; expected "text", "image" or "audio"`},
		{"data that is not base64",
			`[{"type":"image","data":"not base64!","mimeType":"image/png"}]`, "",
			`invalid input: messages[0].data: expected base64 data: illegal base64 data at input byte 3`},
		{"a string for a message",
			`["What is 2+2?"]`, "",
			`invalid input: messages[0]: expected a message ({"role", "content"}) or a content block, got a string`},
		{"messages that are not an array",
			`{"type":"text","text":"hi"}`, "",
			`invalid input: messages: expected an array of messages ({"role", "content"}) or content blocks, got an object`},
		{"no messages", ``, "",
			`invalid input: messages: missing; expected an array of messages ({"role", "content"}) or content blocks`},
	} {
		t.Run("create_message/"+tc.name, func(t *testing.T) {
			in := `{"maxTokens":5}`
			if tc.messages != "" {
				in = `{"messages":` + tc.messages + `,"maxTokens":5}`
			}
			out := callContract(t, p, call, "import", map[string]any{"name": "create_message", "payload": json.RawMessage(in)})
			sent, _ := h.take("create_message").(*mcp.CreateMessageParams)
			if tc.err != "" {
				if want, _ := json.Marshal(map[string]string{"error": tc.err}); out != string(want) {
					t.Errorf("the plugin got %s\nwant %s", out, want)
				}
				if sent != nil {
					t.Errorf("the client was asked, with %+v", sent)
				}
				return
			}
			if !sameJSON(t, out, answer) {
				t.Errorf("the plugin got %s\nwant the client's answer %s", out, answer)
			}
			if sent == nil {
				t.Fatal("the client was not asked")
			}
			b, err := json.Marshal(sent.Messages)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, string(b), tc.want) || sent.MaxTokens != 5 {
				t.Errorf("the client got messages %s (maxTokens %d)\nwant %s", b, sent.MaxTokens, tc.want)
			}
			if err := c.Import("create_message").Input.Validate([]byte(in)); err != nil && tc.err == "" {
				t.Errorf("the sample does not follow the schema: %v", err)
			}
		})
	}

	// Outputs whose content blocks lack their type: the result the client
	// gets, or the error.
	ctx := context.Background()
	for _, tc := range []struct {
		name, export, output string
		want                 string // the MCP result; "" for an error
		err                  string
	}{
		{"tool result, type empty", "call_tool",
			`{"content":[{"type":"","text":"hi"}]}`,
			`{"content":[{"type":"text","text":"hi"}]}`, ""},
		{"tool result, every type told by its members", "call_tool",
			`{"content":[{"text":"hi"},{"data":"aGVsbG8=","mimeType":"image/png"},{"data":"aGVsbG8=","mimeType":"audio/wav"},` +
				`{"uri":"contract://r/1","name":"r1"},{"resource":{"uri":"contract://r/1","text":"one"}}],"isError":true}`,
			`{"content":[{"type":"text","text":"hi"},{"type":"image","data":"aGVsbG8=","mimeType":"image/png"},{"type":"audio","data":"aGVsbG8=","mimeType":"audio/wav"},` +
				`{"type":"resource_link","uri":"contract://r/1","name":"r1"},{"type":"resource","resource":{"uri":"contract://r/1","text":"one"}}],"isError":true}`, ""},
		{"tool result, type missing and not told", "call_tool",
			`{"content":[{"type":"text","text":"ok"},{"data":"aGVsbG8="}]}`, "",
			`plugin contract: call_tool: plugin returned malformed output: content[1].type: missing, and its members do not tell which type it is; expected "text", "image", "audio", "resource_link" or "resource"`},
		{"tool result, a type MCP does not have", "call_tool",
			`{"content":[{"type":"html","text":"<b>hi</b>"}]}`, "",
			`plugin contract: call_tool: plugin returned malformed output: content[0].type: "html" is not allowed here; expected "text", "image", "audio", "resource_link" or "resource"`},
		{"tool result, content not an array", "call_tool",
			`{"content":{"type":"text","text":"hi"}}`, "",
			`plugin contract: call_tool: plugin returned malformed output: content: expected an array of content blocks, got an object`},
		{"prompt, type empty", "get_prompt",
			`{"messages":[{"role":"user","content":{"type":"","text":"Review this."}}]}`,
			`{"messages":[{"role":"user","content":{"type":"text","text":"Review this."}}]}`, ""},
		{"prompt, a message without content", "get_prompt",
			`{"messages":[{"role":"user"}]}`, "",
			`plugin contract: get_prompt: plugin returned malformed output: messages[0].content: missing; expected a content block`},
	} {
		t.Run(tc.export+"/"+tc.name, func(t *testing.T) {
			callContract(t, p, call, "set_output", map[string]any{"export": tc.export, "output": json.RawMessage(tc.output)})
			defer callContract(t, p, call, "set_output", map[string]any{"export": tc.export})
			var got any
			var err error
			if tc.export == "call_tool" {
				got, err = p.CallTool(ctx, call, "canned", nil)
			} else {
				got, err = p.GetPrompt(ctx, call, "p", nil)
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errors.Is(err, plugin.ErrBadOutput) {
					t.Errorf("got %v (%+v)\nwant the error %s", err, got, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if !sameJSON(t, string(b), tc.want) {
				t.Errorf("the client gets %s\nwant %s", b, tc.want)
			}
		})
	}
}
