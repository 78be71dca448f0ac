package plugintest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Plugin is a plugin started by [New] for one test, and the MCP client
// connected to it. Its methods stop the test (t.Fatal) when the server
// answers with a JSON-RPC error rather than a result. A tool's error is a
// result, with IsError set.
type Plugin struct {
	t testing.TB
	s *Session
}

// New builds the plugin whose main package is in dir (see [Build]), starts
// it with opts (see [Start]), and returns it; the plugin is closed when the
// test ends. The module is built once per directory and test process, so
// that every test of a package can start its plugin afresh, with its own
// options, for the cost of one build. The plugin is named after the
// directory (after the working directory for "."), as "hangar new" names
// it, or "plugin" when that is no valid plugin name. A failed build or
// start stops the test with the compiler's output or the problem in opts.
func New(t testing.TB, dir string, opts *Options) *Plugin {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	wasm, err := built(t, abs)
	if err != nil {
		t.Fatal(err)
	}
	// A copy in the test's directory: Start loads a file, and removing
	// the copy with the test leaves nothing behind.
	name := filepath.Base(abs)
	if config.CheckName(name) != nil {
		name = "plugin"
	}
	path := filepath.Join(t.TempDir(), name+".wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	s, err := Start(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &Plugin{t: t, s: s}
}

// builds holds the module built from each directory, or the error of its
// build, for the life of the test process.
var builds struct {
	sync.Mutex
	m map[string]*build
}

type build struct {
	once sync.Once
	wasm []byte
	err  error
}

// built returns the module built from the main package in dir, building
// it on first use.
func built(t testing.TB, dir string) ([]byte, error) {
	builds.Lock()
	if builds.m == nil {
		builds.m = map[string]*build{}
	}
	b := builds.m[dir]
	if b == nil {
		b = new(build)
		builds.m[dir] = b
	}
	builds.Unlock()
	b.once.Do(func() {
		out := filepath.Join(t.TempDir(), "plugin.wasm")
		if b.err = Build(t.Context(), dir, out); b.err == nil {
			b.wasm, b.err = os.ReadFile(out)
		}
	})
	return b.wasm, b.err
}

// Session returns the MCP client's session, for what the other methods do
// not cover: listing tools, completions, resource templates, progress.
func (p *Plugin) Session() *Session { return p.s }

// Result is the result of a tool call.
type Result struct {
	// IsError reports a tool error: the error a handler returned, or
	// arguments that do not match the tool's input schema.
	IsError bool
	// Text is the text of the result's text blocks, one per line.
	Text string
	// Structured is the result's structured content (a typed tool's
	// output), as JSON; nil when there is none.
	Structured json.RawMessage
	// MCP is the result as the client got it.
	MCP *mcp.CallToolResult

	t testing.TB
}

// Decode decodes the result's structured content into v, such as a
// pointer to the Out type of a typed tool. It stops the test when the
// result is a tool error, has no structured content, or does not decode.
func (r *Result) Decode(v any) {
	r.t.Helper()
	switch {
	case r.IsError:
		r.t.Fatalf("plugintest: the tool failed: %s", r.Text)
	case r.Structured == nil:
		r.t.Fatalf("plugintest: the result has no structured content; its text is %q", r.Text)
	}
	if err := json.Unmarshal(r.Structured, v); err != nil {
		r.t.Fatalf("plugintest: decoding the structured content %s: %v", r.Structured, err)
	}
}

// Call calls the tool name with args, a value that encodes to a JSON
// object (a struct such as the In type of a typed tool, a map) or nil for
// none, and returns its result.
func (p *Plugin) Call(name string, args any) *Result {
	p.t.Helper()
	res, err := p.s.CallTool(p.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		p.t.Fatalf("plugintest: calling tool %s: %v", name, err)
	}
	r := &Result{IsError: res.IsError, Text: texts(res.Content), MCP: res, t: p.t}
	if res.StructuredContent != nil {
		if r.Structured, err = json.Marshal(res.StructuredContent); err != nil {
			p.t.Fatalf("plugintest: tool %s: %v", name, err)
		}
	}
	return r
}

// Read reads the resource at uri and returns its text: the text of its
// contents, one per line. A resource with binary contents stops the test.
func (p *Plugin) Read(uri string) string {
	p.t.Helper()
	res, err := p.s.ReadResource(p.t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		p.t.Fatalf("plugintest: reading %s: %v", uri, err)
	}
	var lines []string
	for _, c := range res.Contents {
		if c.Blob != nil {
			p.t.Fatalf("plugintest: %s has binary contents (%s); use Session().ReadResource", uri, c.MIMEType)
		}
		lines = append(lines, c.Text)
	}
	return strings.Join(lines, "\n")
}

// Prompt gets the prompt name with args and returns the text of its
// messages, one per line, each after its role ("user: ...").
func (p *Plugin) Prompt(name string, args map[string]string) string {
	p.t.Helper()
	res, err := p.s.GetPrompt(p.t.Context(), &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		p.t.Fatalf("plugintest: getting prompt %s: %v", name, err)
	}
	var lines []string
	for _, m := range res.Messages {
		lines = append(lines, fmt.Sprintf("%s: %s", m.Role, texts([]mcp.Content{m.Content})))
	}
	return strings.Join(lines, "\n")
}

// texts returns the text of the text blocks of cs, one per line.
func texts(cs []mcp.Content) string {
	var lines []string
	for _, c := range cs {
		if tc, ok := c.(*mcp.TextContent); ok {
			lines = append(lines, tc.Text)
		}
	}
	return strings.Join(lines, "\n")
}
