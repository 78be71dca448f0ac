package core_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// syncBuffer is a log the core writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// claimer loads the claims test plugin as name, answering as who, its own
// tools named tools+"claim" and so on.
func claimer(t *testing.T, name, who, tools string) *plugin.Plugin {
	return servertest.LoadWith(t, "./internal/testplugins/claims", plugin.Options{Name: name, Config: map[string]string{"who": who, "tools": tools}})
}

// claimsCore serves alpha and beta (no prefix) and gamma (prefix g), each
// the claims plugin, with its log and metrics.
func claimsCore(t *testing.T) (*core.Core, *syncBuffer, *metrics.Metrics) {
	log := &syncBuffer{}
	m := metrics.New("test")
	c := core.New(&core.Options{Logger: slog.New(slog.NewTextHandler(log, nil)), Metrics: m})
	err := c.Reload(context.Background(), []core.Mount{
		{Plugin: claimer(t, "alpha", "alpha", "a.")},
		{Plugin: claimer(t, "beta", "beta", "b.")},
		{Plugin: claimer(t, "gamma", "gamma", ""), Prefix: "g"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, log, m
}

func claimIn(t *testing.T, c *core.Core, tool, kind, name string) {
	t.Helper()
	res, err := c.CallTool(context.Background(), core.Request{}, tool, args(map[string]any{"kind": kind, "name": name}))
	if err != nil || res.IsError {
		t.Fatalf("%s %s %s: %v, %v", tool, kind, name, res, err)
	}
}

func readText(t *testing.T, c *core.Core, uri string) string {
	t.Helper()
	res, err := c.ReadResource(context.Background(), core.Request{}, uri)
	if err != nil {
		return "error: " + err.Error()
	}
	return res.Contents[0].Text
}

func callText(t *testing.T, c *core.Core, name string) string {
	t.Helper()
	res, err := c.CallTool(context.Background(), core.Request{}, name, args(map[string]any{}))
	if err != nil {
		return "error: " + err.Error()
	}
	return text(t, res)
}

// refused is the value of hangar_plugin_refused_total for the labels.
func refused(t *testing.T, m *metrics.Metrics, plugin, kind, reason string) float64 {
	t.Helper()
	return testutil.Counter(t, m.Registry(), "hangar_plugin_refused_total", map[string]string{"plugin": plugin, "kind": kind, "reason": reason})
}

// TestShadowing: what a plugin adds at run time cannot take what another
// plugin offers (issue 15.5). Before, a template with a renamed variable
// that sorted first, a template of another shape that sorted first, a
// resource that another's template serves, and a name that carries
// another plugin's prefix all took its requests.
func TestShadowing(t *testing.T) {
	c, log, m := claimsCore(t)

	// beta offers a template; alpha the same one with a renamed variable
	// (which sorts first), another that sorts first, and a resource it
	// serves.
	claimIn(t, c, "b.claim", "template", "weather://{day}")
	claimIn(t, c, "a.claim", "template", "weather://{a}")
	claimIn(t, c, "a.claim", "template", "weather://t{rest}")
	claimIn(t, c, "a.claim", "resource", "weather://monday")
	for _, uri := range []string{"weather://friday", "weather://today", "weather://monday"} {
		if got := readText(t, c, uri); got != "beta template "+uri {
			t.Errorf("read %s: %q, want beta's", uri, got)
		}
	}

	// A name that carries gamma's prefix is gamma's, even before gamma
	// offers it.
	claimIn(t, c, "a.claim", "tool", "g_secret")
	claimIn(t, c, "a.claim", "resource", "g+file:///secret")
	claimIn(t, c, "g_claim", "tool", "secret")             // gamma's own: exposed g_secret
	claimIn(t, c, "g_claim", "resource", "file:///secret") // exposed g+file:///secret
	if got := callText(t, c, "g_secret"); got != "gamma tool secret" {
		t.Errorf("g_secret: %q, want gamma's", got)
	}
	if got := readText(t, c, "g+file:///secret"); got != "gamma resource g+file:///secret" && got != "gamma resource file:///secret" {
		t.Errorf("read g+file:///secret: %q, want gamma's", got)
	}
	// So is a view's URI that carries it (ui://g+...).
	claimIn(t, c, "a.claim", "resource", "ui://g+dashboard")
	claimIn(t, c, "g_claim", "resource", "ui://dashboard") // exposed ui://g+dashboard
	if got := readText(t, c, "ui://g+dashboard"); got != "gamma resource ui://dashboard" {
		t.Errorf("read ui://g+dashboard: %q, want gamma's", got)
	}

	// The first to claim a plain name keeps it; the later claim is refused,
	// logged once however often the plugin lists it again, and counted.
	claimIn(t, c, "a.claim", "tool", "search")
	claimIn(t, c, "b.claim", "tool", "search")
	for range 5 {
		if _, err := c.CallTool(context.Background(), core.Request{}, "b.relist", args(map[string]any{})); err != nil {
			t.Fatal(err)
		}
	}
	if got := callText(t, c, "search"); got != "alpha tool search" {
		t.Errorf("search: %q, want alpha's", got)
	}
	if n := log.count(`tool=search plugin=beta`); n != 1 {
		t.Errorf("beta's refused tool search logged %d times, want once", n)
	}
	if n := refused(t, m, "beta", "tool", "conflict"); n < 6 {
		t.Errorf("hangar_plugin_refused_total{beta,tool,conflict} = %v, want at least 6 (one per listing)", n)
	}
	for _, uri := range []string{"weather://{a}", "weather://monday", "g+file:///secret", "ui://g+dashboard"} {
		if n := log.count(uri); n != 1 {
			t.Errorf("alpha's refused %s logged %d times, want once", uri, n)
		}
	}
}

// TestToolNames: a tool name longer than MCP's 128 characters is refused
// at registration, however long (issue 15.6); one with characters MCP's
// rules do not list is served, and both are logged once however often the
// plugin lists them (issue 15.16).
func TestToolNames(t *testing.T) {
	c, log, m := claimsCore(t)
	ctx := context.Background()
	if res, err := c.CallTool(ctx, core.Request{}, "a.claim_tools", args(map[string]any{"prefix": "long", "count": 20, "length": 60000})); err != nil || res.IsError {
		t.Fatal(res, err)
	}
	claimIn(t, c, "a.claim", "tool", "has space")
	claimIn(t, c, "a.claim", "tool", strings.Repeat("n", core.MaxNameLength))
	for range 10 {
		if _, err := c.CallTool(ctx, core.Request{}, "a.relist", args(map[string]any{})); err != nil {
			t.Fatal(err)
		}
	}
	if c.HasTool("long0" + strings.Repeat("x", 60000-5)) {
		t.Error("a tool of 60,000 characters is offered")
	}
	if !c.HasTool(strings.Repeat("n", core.MaxNameLength)) || !c.HasTool("has space") {
		t.Error("a tool of 128 characters, or one with a space, is not offered")
	}
	if got := callText(t, c, "has space"); got != "alpha tool has space" {
		t.Errorf("has space: %q", got)
	}
	if n := log.count("MCP allows 1 to 128"); n != 20 {
		t.Errorf("%d log lines for 20 names too long, listed 13 times; want 20", n)
	}
	if n := log.count(`which MCP's naming rules do not list`); n != 1 {
		t.Errorf("%d log lines for a name with a space, listed 12 times; want 1", n)
	}
	if n := refused(t, m, "alpha", "tool", "invalid"); n != 20*13 {
		t.Errorf("hangar_plugin_refused_total{alpha,tool,invalid} = %v, want 260 (20 names, 13 listings)", n)
	}
	// The log does not hold the names whole.
	if log.count(strings.Repeat("x", 1000)) != 0 {
		t.Error("the log holds a name of 60,000 characters whole")
	}
}

// TestStartupConflicts: at start-up, a template of another plugin's shape,
// or a name that carries another plugin's prefix, stops the start.
func TestStartupConflicts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mounts func() []core.Mount
		want   string
	}{
		{"prefix", func() []core.Mount {
			return []core.Mount{
				{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{})},
				{Plugin: load(t, "conformance", "./examples/conformance", config.Limits{}), Prefix: "list"},
			}
		}, `tool "list_roots" of plugin "v1full" carries the prefix of plugin "conformance"`},
	} {
		c := core.New(&core.Options{Logger: servertest.Logger()})
		err := c.Reload(ctx, tc.mounts())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}

	// Two plugins with templates of one shape.
	c := core.New(&core.Options{Logger: servertest.Logger()})
	a, b := claimer(t, "alpha", "alpha", "a."), claimer(t, "beta", "beta", "b.")
	if err := c.Reload(ctx, []core.Mount{{Plugin: a}, {Plugin: b}}); err != nil {
		t.Fatal(err)
	}
	claimIn(t, c, "a.claim", "template", "x://{a}")
	claimIn(t, c, "b.claim", "template", "x://{b}")
	err := c.Reload(ctx, []core.Mount{{Plugin: a}, {Plugin: b}})
	if !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), `resource template "x://{b}" of plugin "beta" has the shape of a template of plugin "alpha"`) {
		t.Errorf("two templates of one shape: %v", err)
	}
}
