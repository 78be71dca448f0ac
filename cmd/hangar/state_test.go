package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestServeKeepsPluginState runs `hangar serve` on a plugin that registers
// tools at run time, with no limits configured, over stdio and over HTTP:
// in each of 10 runs (a fresh server each), after each of three calls, the
// client lists exactly the plugin's tools. (internal/server's
// TestRuntimeToolsAreExact makes 50 runs per transport in process; 50 here
// would take a minute, most of it starting processes.)
func TestServeKeepsPluginState(t *testing.T) {
	register := testutil.BuildPlugin(t, "./internal/testplugins/register")
	cache := t.TempDir() // shared by the runs: compiled once
	const runs = 10
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			for run := range runs {
				cs, stop := startServe(t, transport, cache, register)
				checkRuntimeTools(t, cs, run)
				cs.Close()
				stop()
			}
		})
	}
}

// startServe starts hangar serve on plugin over transport and connects a
// client of 2025-11-25: in a session, a tool's list_changed reaches the
// client before the call's result. (A 2026-07-28 client that does not
// listen for list changes may list from its cache for the list's ttlMs.)
func startServe(t *testing.T, transport, cache, plugin string) (*mcp.ClientSession, func()) {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "state-test", Version: "1"}, nil)
	session := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	if transport == "stdio" {
		cmd := exec.Command(hangar, "serve", "--log-level", "warn", plugin)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
		cmd.Stderr = os.Stderr
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, session)
		if err != nil {
			t.Fatal(err)
		}
		return cs, func() {}
	}
	cmd := exec.Command(hangar, "serve", "--http", "127.0.0.1:0", plugin)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp`)
		for sc.Scan() {
			if u := re.FindString(sc.Text()); u != "" {
				found <- u
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var url string
	select {
	case url = <-found:
	case <-time.After(60 * time.Second):
		stop()
		t.Fatal("hangar did not log its URL")
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, session)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return cs, stop
}

func checkRuntimeTools(t *testing.T, cs *mcp.ClientSession, run int) {
	t.Helper()
	ctx := context.Background()
	static := []string{"count", "flood", "get_var", "register", "register_crash", "register_fail", "register_panic", "set_var", "set_var_bytes"}
	for i := 1; i <= 3; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "register", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("run %d: register #%d: %v", run, i, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != fmt.Sprintf("dyn_%d", i) {
			t.Errorf("run %d: register #%d = %q", run, i, got)
		}
		want := slices.Clone(static)
		for k := 1; k <= i; k++ {
			want = append(want, fmt.Sprintf("dyn_%d", k))
		}
		slices.Sort(want)
		var got []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("run %d: after register #%d: tools %v, want %v", run, i, got, want)
		}
	}
}
