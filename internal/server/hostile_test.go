package server_test

// The hostile suite, seen from MCP clients: misbehaving plugins beside good
// ones, several sessions at once. Every hostile call is a clear tool error
// in bounded time, and the server goes on serving every session and
// plugin.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if testing.Verbose() {
		os.Stderr.Write(p)
	}
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// TestHostileToolSchemas: tools whose input schema is not an object, not a
// valid JSON Schema or not self-contained are not offered, each with an
// error in the log naming the tool; the plugin's other tools work.
func TestHostileToolSchemas(t *testing.T) {
	var logs logBuffer
	p := loadWith(t, "hostile", testutil.BuildPlugin(t, "./internal/testplugins/hostile"), config.Limits{}, logs.logger())
	s, err := server.New(context.Background(), []server.Mount{{Plugin: p}}, &server.Options{Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, nil)
	names := toolNames(t, cs)
	want := []string{"alloc", "bad_json", "bad_utf8", "config", "env", "fsop", "http", "huge", "list", "ok", "panic", "rawread", "read", "recurse", "spin", "symlink", "var", "write"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	for _, bad := range []struct{ tool, why string }{
		{"bad_properties", "cannot unmarshal number"},
		{"bad_pattern", "error parsing regexp"},
		{"bad_ref", "cannot resolve remote schemas"},
		{"bad_type", `must have \"type\": \"object\"`},
		{"not_object", "inputSchema must be a JSON object"},
		{"", "tool has no name"},
	} {
		found := false
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, bad.tool) && strings.Contains(line, bad.why) {
				found = true
			}
		}
		if !found {
			t.Errorf("no error logged for tool %q (%s); log:\n%s", bad.tool, bad.why, logs.String())
		}
	}
	if got := resultText(t, callTool(t, cs, "ok", map[string]any{})); got != "ok" {
		t.Errorf("ok = %q", got)
	}
}

// TestHostileServerKeepsServing fires every hostile call at once from one
// session while another session keeps calling a good plugin.
func TestHostileServerKeepsServing(t *testing.T) {
	var logs logBuffer
	log := logs.logger()
	hostile := testutil.BuildPlugin(t, "./internal/testplugins/hostile")
	// The call limit of "h" is generous: its calls end by crashing or by
	// the output limit, long before, except on a loaded machine under the
	// race detector. "hs" is for the time limit.
	mem32 := uint32(32 << 20 / config.PageSize)
	mounts := []server.Mount{
		{Plugin: loadWith(t, "legacy", testutil.BuildPlugin(t, "./internal/testplugins/legacy"), config.Limits{}, log)},
		{Plugin: loadWith(t, "h", hostile, config.Limits{MemoryPages: mem32, CallTimeout: 40 * time.Second, MaxOutput: 1 << 20}, log), Prefix: "h"},
		{Plugin: loadWith(t, "hs", hostile, config.Limits{MemoryPages: mem32, CallTimeout: time.Second}, log), Prefix: "hs"},
		{Plugin: loadWith(t, "stack", testutil.BuildHostileWAT(t, "stack"), config.Limits{}, log)},
		{Plugin: loadWith(t, "hc", testutil.BuildHostileWAT(t, "hostcalls"), config.Limits{}, log), Prefix: "hc"},
		{Plugin: loadWith(t, "loop", testutil.BuildWAT(t, "loop"), config.Limits{CallTimeout: 300 * time.Millisecond}, log)},
		{Plugin: loadWith(t, "badcall", testutil.BuildWAT(t, "badcall"), config.Limits{}, log)},
		{Plugin: loadWith(t, "membomb", testutil.BuildWAT(t, "membomb"), config.Limits{MemoryPages: 64}, log)},
	}
	s, err := server.New(context.Background(), mounts, &server.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	// The hostile session has every capability, so host imports reach it.
	a := connect(t, s, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "x"}}, nil
		},
	})
	b := connect(t, s, nil)
	toolsBefore := toolNames(t, b)

	const bound = 60 * time.Second
	cases := []struct {
		tool string
		args map[string]any
		want string // in the text of the result
		ok   bool   // a successful result, not a tool error
	}{
		{"hs_spin", nil, "time limit", false},
		{"loop", nil, "time limit", false},
		{"h_alloc", map[string]any{"mb": 4096}, "crashed", false},
		{"membomb", nil, "64", true},
		{"h_panic", nil, "crashed", false},
		{"h_recurse", nil, "crashed", false},
		{"stack", nil, "stack overflow", false},
		{"h_huge", map[string]any{"bytes": 1<<20 + 1<<18}, "output exceeds the limit", false},
		{"h_bad_utf8", nil, "not valid UTF-8", false},
		{"h_bad_json", nil, "malformed output", false},
		{"badcall", nil, "malformed output", false},
		{"hc_user", nil, "user imports answered errors", true},
		{"hc_config_get", nil, "crashed", false},
		{"hc_http_request", nil, "crashed", false},
		{"hc_t_output_len", nil, "malformed output", false},
		{"h_http", map[string]any{"url": "http://127.0.0.1:9/"}, "HTTP request denied", false},
		{"h_read", map[string]any{"path": "/etc/passwd"}, "bad file number", false},
		{"h_rawread", map[string]any{"fd": 3, "path": "../etc/passwd"}, "not permitted", false},
	}

	// Session B calls the good plugin until session A is done.
	done := make(chan struct{})
	var goodCalls int
	var slowest time.Duration
	var bErr error
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := time.Now()
			res, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}})
			if err == nil {
				if tc, ok := res.Content[0].(*mcp.TextContent); res.IsError || len(res.Content) != 1 || !ok || tc.Text != "cba" {
					err = fmt.Errorf("reverse = %+v", res)
				}
			}
			if err != nil {
				bErr = err
				return
			}
			goodCalls++
			slowest = max(slowest, time.Since(start))
		}
	}()

	start := time.Now()
	var wg sync.WaitGroup
	for _, tc := range cases {
		wg.Go(func() {
			t0 := time.Now()
			res, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			d := time.Since(t0)
			if err != nil {
				t.Errorf("%s: protocol error %v, want a tool result", tc.tool, err)
				return
			}
			text := resultText(t, res)
			t.Logf("%-16s %6v isError=%v %.90q", tc.tool, d.Round(time.Millisecond), res.IsError, text)
			if res.IsError == tc.ok || !strings.Contains(strings.ToLower(text), strings.ToLower(tc.want)) {
				t.Errorf("%s: isError=%v %q, want isError=%v mentioning %q", tc.tool, res.IsError, text, !tc.ok, tc.want)
			}
			if d > bound {
				t.Errorf("%s took %v", tc.tool, d)
			}
		})
	}
	wg.Wait()
	close(done)
	<-bDone
	t.Logf("all hostile calls in %v; session B: %d good calls meanwhile, slowest %v", time.Since(start).Round(time.Millisecond), goodCalls, slowest.Round(time.Millisecond))
	if bErr != nil {
		t.Errorf("session B failed during the hostile calls: %v", bErr)
	}
	if goodCalls == 0 {
		t.Error("session B made no call during the hostile calls")
	}
	if slowest > 10*time.Second {
		t.Errorf("session B's slowest call took %v", slowest)
	}

	// Both sessions, and every plugin, still serve.
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := cs.Ping(context.Background(), nil); err != nil {
			t.Errorf("ping: %v", err)
		}
		if got := toolNames(t, cs); !slices.Equal(got, toolsBefore) {
			t.Errorf("tools now %v, were %v", got, toolsBefore)
		}
	}
	for _, tool := range []string{"h_ok", "hs_ok"} {
		if got := resultText(t, callTool(t, a, tool, map[string]any{})); got != "ok" {
			t.Errorf("%s = %q", tool, got)
		}
	}
	for _, m := range mounts {
		if inUse, _ := m.Plugin.Stats(); inUse != 0 {
			t.Errorf("plugin %s: %d instances still in use", m.Plugin.Name(), inUse)
		}
	}
	if strings.Contains(logs.String(), "panic in handler") {
		t.Errorf("a handler panicked:\n%s", logs.String())
	}
}

// TestBadToolNamesLoggedOnce: a plugin lists a tool whose name MCP's rules
// do not allow (a space) and one longer than 128 characters, then lists
// its tools again 20 times. Each is reported once, by the core; the
// go-sdk's own error for the first, which it logged at each listing (20 MB
// of log in issue 15.16), is not in the log.
func TestBadToolNamesLoggedOnce(t *testing.T) {
	var logs logBuffer
	p := loadWith(t, "claims", testutil.BuildPlugin(t, "./internal/testplugins/claims"), config.Limits{}, logs.logger())
	s, err := server.New(context.Background(), []server.Mount{{Plugin: p}}, &server.Options{Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, nil)
	callTool(t, cs, "claim", map[string]any{"kind": "tool", "name": "has space"})
	callTool(t, cs, "claim", map[string]any{"kind": "tool", "name": strings.Repeat("n", 129)})
	for range 20 {
		callTool(t, cs, "relist", map[string]any{})
	}
	if got := resultText(t, callTool(t, cs, "has space", map[string]any{})); got != "claims tool has space" {
		t.Errorf("has space: %q", got)
	}
	log := logs.String()
	if n := strings.Count(log, "has space"); n != 1 {
		t.Errorf("the name with a space is in %d log lines, want 1:\n%s", n, log)
	}
	if n := strings.Count(log, "MCP allows 1 to 128"); n != 1 {
		t.Errorf("the name too long is in %d log lines, want 1:\n%s", n, log)
	}
}
