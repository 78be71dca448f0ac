package server_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestReload swaps the plugin set under a connected session: the session
// stays, the client hears that the tool list changed, a bad new set leaves
// the old one serving, and a call in flight finishes on the old plugin.
func TestReload(t *testing.T) {
	ctx := context.Background()
	full := v1full(t, config.Limits{})
	s := newServer(t, nil, server.Mount{Plugin: legacy(t)}, server.Mount{Plugin: full})
	changed := make(chan struct{}, 10)
	cs := connect(t, s, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})

	// A call in flight on the old set.
	slow := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep_ms", Arguments: map[string]any{"ms": 1000}})
		if err != nil {
			t.Error(err)
		}
		slow <- res
	}()
	time.Sleep(200 * time.Millisecond)

	servlet := loadPlugin(t, "servlet", testutil.BuildPlugin(t, "./internal/testplugins/servlet"), config.Limits{})
	if err := s.Reload(ctx, []server.Mount{{Plugin: servlet}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed after reload")
	}
	if got := strings.Join(toolNames(t, cs), ","); got != "lookup" {
		t.Errorf("tools after reload = %s", got)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("a tool of the old set is still served")
	}
	if res := <-slow; res == nil || res.IsError || resultText(t, res) != "slept 1000ms" {
		t.Errorf("call in flight during reload = %+v", res)
	}

	// A new set with a conflict is refused; the current one goes on.
	a := legacy(t)
	b := loadPlugin(t, "legacy2", testutil.BuildPlugin(t, "./internal/testplugins/legacy"), config.Limits{})
	err := s.Reload(ctx, []server.Mount{{Plugin: a}, {Plugin: b}})
	if !errors.Is(err, server.ErrConflict) {
		t.Fatalf("conflicting reload: err = %v", err)
	}
	if names := toolNames(t, cs); !slices.Equal(names, []string{"lookup"}) {
		t.Errorf("tools after a refused reload = %v", names)
	}
	if res := callTool(t, cs, "lookup", map[string]any{"key": "beta"}); resultText(t, res) != "two" {
		t.Errorf("lookup after a refused reload = %q", resultText(t, res))
	}
}
