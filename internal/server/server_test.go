package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
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

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

var (
	engineOnce sync.Once
	engine     *plugin.Engine
)

// quietLogger drops diagnostics unless the test runs with -v.
func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// sharedEngine returns the engine all tests share, and with it their
// compiled plugins.
func sharedEngine(tb testing.TB) *plugin.Engine {
	tb.Helper()
	engineOnce.Do(func() {
		var err error
		if engine, err = plugin.NewEngine(testutil.CacheDir()); err != nil {
			tb.Fatal(err)
		}
	})
	return engine
}

// loadPlugin compiles the module at path into a plugin named name.
func loadPlugin(t testing.TB, name, path string, limits config.Limits) *plugin.Plugin {
	t.Helper()
	return loadWith(t, name, path, limits, quietLogger())
}

// loadWith is loadPlugin logging to log; the plugin is closed at the end of
// the test.
func loadWith(t testing.TB, name, path string, limits config.Limits, log *slog.Logger) *plugin.Plugin {
	t.Helper()
	e := sharedEngine(t)
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Load(context.Background(), wasm, plugin.Options{Name: name, Limits: limits, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// sessionOpts opens a session at 2025-11-25: the go-sdk's client would
// speak 2026-07-28 first, which has none. The tests of sessions use it;
// those of 2026-07-28 are in modern_test.go.
var sessionOpts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

func newServer(t *testing.T, opts *server.Options, mounts ...server.Mount) *server.Server {
	t.Helper()
	if opts == nil {
		opts = &server.Options{}
	}
	opts.Logger = quietLogger()
	s, err := server.New(context.Background(), mounts, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connect runs s on an in-memory stream (with the fast path, unless s
// disables it) and returns a connected client.
func connect(t *testing.T, s *server.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, s, mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts))
}

// connectClient connects an existing client to s over an in-memory stream.
func connectClient(t testing.TB, s *server.Server, c *mcp.Client) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	sc, cc := net.Pipe()
	ss, err := s.ConnectIO(ctx, sc, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: cc, Writer: cc}, sessionOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("content %T, want text", c)
		}
		b.WriteString(tc.Text)
	}
	return b.String()
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func legacy(t *testing.T) *plugin.Plugin {
	return loadPlugin(t, "legacy", testutil.BuildPlugin(t, "./internal/testplugins/legacy"), config.Limits{})
}

func TestLegacyTools(t *testing.T) {
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: legacy(t)}), nil)
	if got := strings.Join(toolNames(t, cs), ","); got != "add,fail,reverse" {
		t.Errorf("tools = %s", got)
	}
	if got := resultText(t, callTool(t, cs, "reverse", map[string]any{"text": "abc"})); got != "cba" {
		t.Errorf("reverse = %q", got)
	}

	// The plugin's own error comes back as a tool error the model can read.
	res := callTool(t, cs, "fail", map[string]any{})
	if !res.IsError || resultText(t, res) != "fail: requested failure" {
		t.Errorf("fail = %+v", res)
	}

	// Arguments are checked against the input schema before the plugin runs.
	res = callTool(t, cs, "reverse", map[string]any{"text": 5})
	if !res.IsError || !strings.Contains(resultText(t, res), "invalid arguments") {
		t.Errorf("reverse with a number: %+v", res)
	}
	res = callTool(t, cs, "reverse", map[string]any{})
	if !res.IsError || !strings.Contains(resultText(t, res), "text") {
		t.Errorf("reverse without text: %+v", res)
	}

	// An unknown tool is a protocol error.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
}

func TestServletResources(t *testing.T) {
	p := loadPlugin(t, "servlet", testutil.BuildPlugin(t, "./internal/testplugins/servlet"), config.Limits{})
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: p}), nil)
	ctx := context.Background()

	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if got := strings.Join(uris, ","); got != "servlet://greeting,servlet://logo.bin" {
		t.Errorf("resources = %s", got)
	}
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if rt.URITemplate != "servlet://item/{id}" {
			t.Errorf("template = %s", rt.URITemplate)
		}
	}
	// A read that matches the template reaches the plugin.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "servlet://item/42"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "42") {
		t.Errorf("item/42 = %+v", rr.Contents)
	}
	bin, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "servlet://logo.bin"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bin.Contents) != 1 || len(bin.Contents[0].Blob) == 0 {
		t.Errorf("logo.bin = %+v", bin.Contents)
	}
	// A URI no plugin serves is refused without reaching any plugin.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "other://x"}); err == nil {
		t.Error("reading an unknown URI succeeded")
	}
}

func TestConflict(t *testing.T) {
	a := legacy(t)
	b := loadPlugin(t, "legacy2", testutil.BuildPlugin(t, "./internal/testplugins/legacy"), config.Limits{})
	_, err := server.New(context.Background(), []server.Mount{{Plugin: a}, {Plugin: b}}, &server.Options{Logger: quietLogger()})
	if !errors.Is(err, server.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	for _, want := range []string{`tool "reverse"`, `"legacy"`, `"legacy2"`, "prefix"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}

	// A prefix keeps them apart.
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: a}, server.Mount{Plugin: b, Prefix: "two"}), nil)
	if got := strings.Join(toolNames(t, cs), ","); got != "add,fail,reverse,two_add,two_fail,two_reverse" {
		t.Errorf("tools = %s", got)
	}
	if got := resultText(t, callTool(t, cs, "two_reverse", map[string]any{"text": "xy"})); got != "yx" {
		t.Errorf("two_reverse = %q", got)
	}
}

func TestPrefixedResources(t *testing.T) {
	p := loadPlugin(t, "servlet", testutil.BuildPlugin(t, "./internal/testplugins/servlet"), config.Limits{})
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: p, Prefix: "s"}), nil)
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "s+servlet://item/9"})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Contents[0].URI != "s+servlet://item/9" {
		t.Errorf("content URI = %s, want the prefixed URI", rr.Contents[0].URI)
	}
}

func TestPagination(t *testing.T) {
	cs := connect(t, newServer(t, &server.Options{PageSize: 1}, server.Mount{Plugin: legacy(t)}), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q", len(res.Tools), res.NextCursor)
	}
	if got := len(toolNames(t, cs)); got != 3 {
		t.Errorf("all pages: %d tools, want 3", got)
	}
}

// TestFailuresAreContained runs a looping, a trapping and a garbage-spewing
// plugin beside a good one: each failure is a clear tool error in bounded
// time, and the good plugin and the session go on.
func TestFailuresAreContained(t *testing.T) {
	short := config.Limits{CallTimeout: 300 * time.Millisecond}
	s := newServer(t, nil,
		server.Mount{Plugin: legacy(t)},
		server.Mount{Plugin: loadPlugin(t, "loop", testutil.BuildWAT(t, "loop"), short)},
		server.Mount{Plugin: loadPlugin(t, "trap", testutil.BuildWAT(t, "trap"), config.Limits{})},
		server.Mount{Plugin: loadPlugin(t, "badcall", testutil.BuildWAT(t, "badcall"), config.Limits{})},
	)
	cs := connect(t, s, nil)
	for _, tc := range []struct{ tool, want string }{
		{"loop", "time limit"},
		{"trap", "crashed"},
		{"badcall", "malformed output"},
	} {
		start := time.Now()
		res := callTool(t, cs, tc.tool, map[string]any{})
		if !res.IsError || !strings.Contains(resultText(t, res), tc.want) {
			t.Errorf("%s: %+v, want an error mentioning %q", tc.tool, res, tc.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %v", tc.tool, d)
		}
		if got := resultText(t, callTool(t, cs, "reverse", map[string]any{"text": "ok"})); got != "ko" {
			t.Errorf("after %s: reverse = %q", tc.tool, got)
		}
	}
}

// TestCancellation cancels a call to a looping plugin: the plugin is
// interrupted and the session goes on.
func TestCancellation(t *testing.T) {
	loop := loadPlugin(t, "loop", testutil.BuildWAT(t, "loop"), config.Limits{})
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: loop}, server.Mount{Plugin: legacy(t)}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "loop", Arguments: map[string]any{}})
	if err == nil {
		t.Fatal("cancelled call succeeded")
	}
	// The plugin gives its instance back once interrupted.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if inUse, _ := loop.Stats(); inUse == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("looping call was not interrupted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("interrupted after %v", time.Since(start))
	if got := resultText(t, callTool(t, cs, "reverse", map[string]any{"text": "go"})); got != "og" {
		t.Errorf("after cancel: reverse = %q", got)
	}
}

func TestHTTPGuards(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: legacy(t)})
	ts := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{AllowedOrigins: []string{"https://app.example"}}))
	defer ts.Close()

	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(host, origin string) int {
		req, _ := http.NewRequest("POST", ts.URL+server.Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"", "", http.StatusOK},
		{"evil.example", "", http.StatusForbidden},
		{"", "https://evil.example", http.StatusForbidden},
		{"", "http://localhost:5173", http.StatusOK},
		{"", "https://app.example", http.StatusOK},
	} {
		if got := post(tc.host, tc.origin); got != tc.want {
			t.Errorf("Host %q Origin %q: status %d, want %d", tc.host, tc.origin, got, tc.want)
		}
	}

	// A real client over HTTP.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + server.Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := resultText(t, callTool(t, cs, "reverse", map[string]any{"text": "http"})); got != "ptth" {
		t.Errorf("reverse over HTTP = %q", got)
	}
}
