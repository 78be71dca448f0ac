package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
)

// TestScanAfterLoading: a tool listed before its plugin loaded (from the
// catalog or the interpreter) has its arguments checked by the one-pass
// scan of its simple schema once the plugin confirmed that schema, and so
// does a call that waited for the plugin whose live schema differs; only
// arguments the scan is not sure of go to the full validator.
func TestScanAfterLoading(t *testing.T) {
	ctx := context.Background()
	p := load(t, "legacy", "./internal/testplugins/legacy", config.Limits{})
	live, err := p.ReadLists(ctx, plugin.AllLists)
	if err != nil {
		t.Fatal(err)
	}
	// expected copies live's lists as a catalog would give them (Seq 0:
	// not read from the plugin), with edit applied to the tools.
	expected := func(edit func(*mcp.Tool)) *plugin.Lists {
		b, err := json.Marshal(live.Tools)
		if err != nil {
			t.Fatal(err)
		}
		var tools []*mcp.Tool
		if err := json.Unmarshal(b, &tools); err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			edit(tool)
		}
		return &plugin.Lists{Read: plugin.AllLists, Tools: tools, Resources: live.Resources, Templates: live.Templates, Prompts: live.Prompts}
	}
	reverse := func(c *core.Core, a map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := c.CallTool(ctx, core.Request{}, "reverse", args(a))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	t.Run("same schema", func(t *testing.T) {
		l := core.NewLoading("legacy", expected(func(*mcp.Tool) {}), time.Minute)
		c := newCore(t, []core.Mount{{Loading: l}})
		l.Loaded(p, live)
		before := core.FullChecks()
		for range 5 {
			if res := reverse(c, map[string]any{"text": "abc"}); res.IsError || text(t, res) != "cba" {
				t.Fatalf("reverse: %s", text(t, res))
			}
		}
		if n := core.FullChecks() - before; n != 0 {
			t.Errorf("%d of 5 valid calls went to the full validator, want none: the one-pass scan was not used", n)
		}
		// Arguments the scan refuses still get the validator's words.
		if res := reverse(c, map[string]any{}); !res.IsError || core.FullChecks()-before != 1 {
			t.Errorf("reverse without text = %s, after %d full checks", text(t, res), core.FullChecks()-before)
		}
	})

	t.Run("schema differs", func(t *testing.T) {
		l := core.NewLoading("legacy", expected(func(tool *mcp.Tool) {
			if tool.Name == "reverse" {
				tool.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}}}
			}
		}), time.Minute)
		c := newCore(t, []core.Mount{{Loading: l}})
		before := core.FullChecks()
		waited := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := c.CallTool(ctx, core.Request{}, "reverse", args(map[string]any{"text": "abc"}))
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			waited <- res
		}()
		time.Sleep(50 * time.Millisecond)
		l.Loaded(p, live)
		if res := <-waited; res.IsError || text(t, res) != "cba" {
			t.Fatalf("reverse that waited: %s", text(t, res))
		}
		if res := reverse(c, map[string]any{"text": "abc"}); res.IsError || text(t, res) != "cba" {
			t.Fatalf("reverse: %s", text(t, res))
		}
		if n := core.FullChecks() - before; n != 0 {
			t.Errorf("%d of 2 valid calls went to the full validator, want none: the one-pass scan of the live schema was not used", n)
		}
	})
}

// TestLoadingOnDemand: a plugin loaded on demand is ready while it is
// listed and not loaded; lists do not ask for it, its first call does,
// and waits for it; if it fails to load, it is not ready.
func TestLoadingOnDemand(t *testing.T) {
	ctx := context.Background()
	p := load(t, "legacy", "./internal/testplugins/legacy", config.Limits{})
	live, err := p.ReadLists(ctx, plugin.AllLists)
	if err != nil {
		t.Fatal(err)
	}
	expected := &plugin.Lists{Read: plugin.AllLists, Tools: live.Tools}

	l := core.NewLoading("legacy", expected, time.Minute)
	l.SetOnDemand()
	c := newCore(t, []core.Mount{{Loading: l}})
	if ready, notReady := c.Readiness(); !ready {
		t.Errorf("Readiness of a plugin loaded on demand, listed = %v, %v", ready, notReady)
	}
	if !c.HasTool("reverse") {
		t.Error("reverse is not offered while the plugin is not loaded")
	}
	select {
	case <-l.Wanted():
		t.Fatal("wanted before any call")
	default:
	}
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.CallTool(ctx, core.Request{}, "reverse", args(map[string]any{"text": "abc"}))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case <-l.Wanted():
	case <-time.After(30 * time.Second):
		t.Fatal("the first call did not ask for the plugin")
	}
	if ready, _ := c.Readiness(); !ready {
		t.Error("not ready while its first call waits for it")
	}
	l.Loaded(p, live)
	if res := <-done; res == nil || res.IsError || text(t, res) != "cba" {
		t.Errorf("the first call = %v", res)
	}

	failing := core.NewLoading("legacy", expected, time.Minute)
	failing.SetOnDemand()
	c = newCore(t, []core.Mount{{Loading: failing}})
	failing.Failed(errors.New("no machine code"))
	if ready, notReady := c.Readiness(); ready || !strings.Contains(notReady["legacy"], "failed to load: no machine code") {
		t.Errorf("Readiness after failing = %v, %v", ready, notReady)
	}
}
