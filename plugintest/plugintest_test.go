package plugintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/plugintest"
)

var (
	typedOnce sync.Once
	typedWasm string
	cleanups  []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	os.Exit(code)
}

// typedDir is the directory of the typed test plugin.
const typedDir = "../internal/testplugins/typed"

// start starts the typed test plugin with opts, and returns its session.
func start(t *testing.T, opts *plugintest.Options) *plugintest.Session {
	t.Helper()
	return plugintest.New(t, typedDir, opts).Session()
}

func call(t *testing.T, s *plugintest.Session, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestTypedTools checks, through Hangar's server, the schemas and results
// of tools added with pdk/typed.
func TestTypedTools(t *testing.T) {
	s := start(t, nil)
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	add := byName["add"]
	if add == nil {
		t.Fatalf("no tool add in %v", tools.Tools)
	}
	wantIn := `{"type":"object","properties":{"a":{"type":"number","description":"the first number"},"b":{"type":"number","description":"the second number"}},"required":["a","b"],"additionalProperties":false}`
	if got := jsonOf(t, add.InputSchema); !sameJSON(t, got, wantIn) {
		t.Errorf("add input schema\n got %s\nwant %s", got, wantIn)
	}
	wantOut := `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"],"additionalProperties":false}`
	if got := jsonOf(t, add.OutputSchema); !sameJSON(t, got, wantOut) {
		t.Errorf("add output schema\n got %s\nwant %s", got, wantOut)
	}
	if got := jsonOf(t, byName["greet"].InputSchema); !strings.Contains(got, `"required":["name"]`) {
		t.Errorf("greet: an omitempty field is optional: %s", got)
	}
	if byName["plain"].OutputSchema != nil {
		t.Errorf("plain (Out any) has an output schema: %s", jsonOf(t, byName["plain"].OutputSchema))
	}

	res := call(t, s, "add", map[string]any{"a": 1.5, "b": 2})
	if res.IsError || text(res) != `{"sum":3.5}` || jsonOf(t, res.StructuredContent) != `{"sum":3.5}` {
		t.Errorf("add: isError %v, text %q, structured %s", res.IsError, text(res), jsonOf(t, res.StructuredContent))
	}

	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"a": "one", "b": 2}, "a"},
		{map[string]any{"a": 1}, "b"},
		{map[string]any{"a": 1, "b": 2, "c": 3}, "c"},
	} {
		res := call(t, s, "add", bad.args)
		if !res.IsError || !strings.Contains(text(res), `invalid arguments for tool "add"`) || !strings.Contains(text(res), bad.want) {
			t.Errorf("add %v: isError %v, %q; want an input error naming %q", bad.args, res.IsError, text(res), bad.want)
		}
	}

	for _, c := range []struct {
		tool, text, structured string
		isError                bool
	}{
		{"fail", "it failed", "null", true},
		{"plain", `"plain"`, "null", false},
		{"nothing", `{"sum":0}`, `{"sum":0}`, false},
	} {
		res := call(t, s, c.tool, nil)
		if res.IsError != c.isError || text(res) != c.text || jsonOf(t, res.StructuredContent) != c.structured {
			t.Errorf("%s: isError %v, text %q, structured %s; want %v, %q, %s", c.tool,
				res.IsError, text(res), jsonOf(t, res.StructuredContent), c.isError, c.text, c.structured)
		}
	}
}

func TestPromptsResourcesCompletions(t *testing.T) {
	s := start(t, nil)
	ctx := t.Context()
	p, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"topic": "style"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Messages[0].Content.(*mcp.TextContent).Text; got != "Review style." {
		t.Errorf("prompt: %q", got)
	}
	for uri, want := range map[string]string{"typed://readme": "typed tools", "typed://items/7": "item 7"} {
		r, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		if got := r.Contents[0].Text; got != want {
			t.Errorf("%s: %q, want %q", uri, got, want)
		}
	}
	c, err := s.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "review"},
		Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"security", "style"}; !reflect.DeepEqual(c.Completion.Values, want) {
		t.Errorf("completion: %v, want %v", c.Completion.Values, want)
	}
}

// TestClientAnswers checks the canned answers, what the plugin is sent,
// and a client without them.
func TestClientAnswers(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	var logs []string
	s := start(t, &plugintest.Options{
		Client: &mcp.ClientOptions{
			CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Messages[0].Content.(*mcp.TextContent).Text)
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "blue"}}, nil
			},
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
			LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, string(req.Params.Level))
			},
		},
		Roots: []*mcp.Root{{URI: "file:///a"}, {URI: "file:///b"}},
	})
	if res := call(t, s, "ask", map[string]any{"question": "Sky?"}); jsonOf(t, res.StructuredContent) != `{"answer":"blue"}` {
		t.Errorf("ask: %s %q", jsonOf(t, res.StructuredContent), text(res))
	}
	if res := call(t, s, "confirm", map[string]any{"action": "delete"}); jsonOf(t, res.StructuredContent) != `{"confirmed":false}` {
		t.Errorf("confirm: %s %q", jsonOf(t, res.StructuredContent), text(res))
	}
	if res := call(t, s, "roots", nil); jsonOf(t, res.StructuredContent) != `{"uris":["file:///a","file:///b"]}` {
		t.Errorf("roots: %s %q", jsonOf(t, res.StructuredContent), text(res))
	}
	mu.Lock()
	if want := []string{"Sky?", "Really delete?"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("the client was asked %q, want %q", asked, want)
	}
	mu.Unlock()

	bare := start(t, nil)
	for tool, c := range map[string]struct {
		args map[string]any
		want string
	}{
		"ask":     {map[string]any{"question": "?"}, "sampling"},
		"confirm": {map[string]any{"action": "x"}, "elicitation"},
	} {
		res := call(t, bare, tool, c.args)
		want := c.want
		if !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("%s without a handler: isError %v, %q; want an error about %s", tool, res.IsError, text(res), want)
		}
	}
	if res := call(t, bare, "roots", nil); jsonOf(t, res.StructuredContent) != `{"uris":[]}` {
		t.Errorf("roots without roots: %s %q", jsonOf(t, res.StructuredContent), text(res))
	}
}

// TestGrantsAndLimits checks that the entry's grants, limits and config
// apply, and that without them the plugin is refused what they grant.
func TestGrantsAndLimits(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("granted"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, &plugintest.Options{
		Config: map[string]string{"greeting": "Hi"},
		Grants: plugintest.Grants{AllowedPaths: []plugintest.Path{{Host: dir, Guest: "/data", ReadOnly: true}}},
		Limits: plugintest.Limits{CallTimeout: time.Second, Memory: 64 << 20},
	})
	if res := call(t, s, "read_file", map[string]any{"path": "/data/note.txt"}); jsonOf(t, res.StructuredContent) != `{"text":"granted"}` {
		t.Errorf("read_file with the grant: %s %q", jsonOf(t, res.StructuredContent), text(res))
	}
	if res := call(t, s, "greet", map[string]any{"name": "Ada"}); jsonOf(t, res.StructuredContent) != `{"greeting":"Hi, Ada."}` {
		t.Errorf("greet with config: %s %q", jsonOf(t, res.StructuredContent), text(res))
	}
	if res := call(t, s, "spin", nil); !res.IsError || !strings.Contains(text(res), "1s") {
		t.Errorf("spin with call_timeout 1s: isError %v, %q", res.IsError, text(res))
	}

	bare := start(t, nil)
	if res := call(t, bare, "read_file", map[string]any{"path": "/data/note.txt"}); !res.IsError {
		t.Errorf("read_file without a grant: %q", text(res))
	}
	if res := call(t, bare, "greet", map[string]any{"name": "Ada"}); jsonOf(t, res.StructuredContent) != `{"greeting":"Hello, Ada."}` {
		t.Errorf("greet without config: %s %q", jsonOf(t, res.StructuredContent), text(res))
	}
}

// TestOptionsErrors checks that bad settings are refused with the
// setting's name, as hangar serve refuses them in hangar.yaml.
func TestOptionsErrors(t *testing.T) {
	wasm := buildTyped()
	for _, c := range []struct {
		opts plugintest.Options
		want string
	}{
		{plugintest.Options{Limits: plugintest.Limits{Memory: 3 << 40}}, "plugintest: Options: limits.memory: 3298534883328 is more than the maximum"},
		{plugintest.Options{Limits: plugintest.Limits{CallTimeout: -time.Second}}, "plugintest: Options: limits.call_timeout:"},
		{plugintest.Options{Grants: plugintest.Grants{AllowedHosts: []string{"http://api.test/"}}}, "plugintest: Options: grants.allowed_hosts[0]:"},
		{plugintest.Options{Grants: plugintest.Grants{Env: map[string]string{"KEY": "${PLUGINTEST_SURELY_UNSET}"}}}, "grants.env.KEY: environment variable PLUGINTEST_SURELY_UNSET is not set"},
		{plugintest.Options{Prefix: "9bad"}, "plugintest: Options: prefix:"},
	} {
		_, err := plugintest.Start(t.Context(), wasm, &c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, plugintest.ErrInvalidOptions) {
			t.Errorf("options %+v: error %v\nwant it to contain %q", c.opts, err, c.want)
		}
	}
	if _, err := plugintest.Start(t.Context(), filepath.Join(t.TempDir(), "missing.wasm"), nil); err == nil || !strings.Contains(err.Error(), "missing.wasm") {
		t.Errorf("missing module: %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	mod := "module broken\n\ngo 1.26\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { undefinedName() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := plugintest.Build(t.Context(), dir, filepath.Join(dir, "out.wasm"))
	if err == nil || !strings.Contains(err.Error(), "undefinedName") {
		t.Errorf("build of a broken plugin: %v", err)
	}

	t.Setenv("PATH", t.TempDir())
	err = plugintest.Build(t.Context(), dir, filepath.Join(dir, "out.wasm"))
	if !errors.Is(err, plugintest.ErrNoGo) || !strings.Contains(err.Error(), "install Go") {
		t.Errorf("build without go: %v", err)
	}
}
