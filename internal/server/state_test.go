package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// registerStatic are the tools of internal/testplugins/register before any
// is added.
var registerStatic = []string{"count", "flood", "get_var", "register", "register_crash", "register_fail", "register_panic", "set_var", "set_var_bytes"}

func registerTools(n int) []string {
	names := slices.Clone(registerStatic)
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("dyn_%d", i))
	}
	slices.Sort(names)
	return names
}

// serveFresh loads the register plugin with default limits, serves it on a
// new server over transport ("stdio": newline-delimited JSON on pipes, as
// `hangar serve` speaks on its standard input and output; "http":
// Streamable HTTP on 127.0.0.1) and connects a go-sdk client. close
// releases everything.
func serveFresh(t *testing.T, wasm []byte, transport string) (cs *mcp.ClientSession, release func()) {
	t.Helper()
	ctx := context.Background()
	p, err := sharedEngine(t).Load(ctx, wasm, plugin.Options{Name: "register", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(ctx, []server.Mount{{Plugin: p}}, &server.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var ct mcp.Transport
	var stop func()
	switch transport {
	case "stdio":
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		rctx, cancel := context.WithCancel(ctx)
		go func() {
			defer close(done)
			s.MCP().Run(rctx, &mcp.IOTransport{Reader: inR, Writer: outW})
		}()
		ct = &mcp.IOTransport{Reader: outR, Writer: inW}
		stop = func() {
			cancel()
			inW.Close()
			outR.Close()
			<-done
		}
	case "http":
		ts := httptest.NewServer(s.HTTPHandler(nil))
		ct = &mcp.StreamableClientTransport{Endpoint: ts.URL + server.Path}
		stop = ts.Close
	}
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "state-test", Version: "1"}, nil).Connect(context.Background(), ct, sessionOpts)
	if err != nil {
		t.Fatal(err)
	}
	return cs, func() {
		cs.Close()
		stop()
		p.Close(context.Background())
	}
}

// TestRuntimeToolsAreExact: a plugin that registers a tool at run time and
// announces it, with default limits, lists exactly its tools after each of
// three calls, in 15 runs of 15, over stdio and over HTTP. (With instances
// split by default, about half of the runs listed wrong tools: 15 runs
// miss that with a probability of 3 in 100,000 per transport.)
func TestRuntimeToolsAreExact(t *testing.T) {
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./internal/testplugins/register"))
	if err != nil {
		t.Fatal(err)
	}
	const runs = 15
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			bad := 0
			for run := range runs {
				if problem := runtimeToolsRun(t, wasm, transport); problem != "" {
					bad++
					t.Errorf("run %d: %s", run+1, problem)
				}
			}
			t.Logf("%d of %d runs listed exactly the right tools", runs-bad, runs)
		})
	}
}

// runtimeToolsRun is one run of TestRuntimeToolsAreExact; it returns what
// went wrong, if anything.
func runtimeToolsRun(t *testing.T, wasm []byte, transport string) string {
	cs, closeAll := serveFresh(t, wasm, transport)
	defer closeAll()
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "register", Arguments: map[string]any{}})
		if err != nil {
			return fmt.Sprintf("register #%d: %v", i, err)
		}
		if got, want := resultText(t, res), fmt.Sprintf("dyn_%d", i); got != want {
			return fmt.Sprintf("register #%d = %q, want %q", i, got, want)
		}
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return fmt.Sprintf("tools/list after register #%d: %v", i, err)
			}
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if want := registerTools(i); !slices.Equal(names, want) {
			return fmt.Sprintf("after register #%d: tools %v, want %v", i, names, want)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("dyn_%d", i), Arguments: map[string]any{}})
		if err != nil || res.IsError || resultText(t, res) != fmt.Sprint(i) {
			return fmt.Sprintf("dyn_%d = %+v, %v", i, res, err)
		}
	}
	return ""
}

// TestListChangedFlood: 100,000 notify_tool_list_changed in one call start
// no goroutine each and make one re-listing: the call's result comes with
// the new list in place, and the client hears of the change.
func TestListChangedFlood(t *testing.T) {
	p := loadPlugin(t, "register", testutil.BuildPlugin(t, "./internal/testplugins/register"), config.Limits{})
	changed := make(chan struct{}, 100)
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: p}), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	callTool(t, cs, "count", map[string]any{}) // warm up

	base := runtime.NumGoroutine()
	peak := 0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, runtime.NumGoroutine()-base)
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	res := callTool(t, cs, "flood", map[string]any{"count": 100_000})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	close(stop)
	<-sampled
	if got := resultText(t, res); got != "dyn_1" {
		t.Fatalf("flood = %q", got)
	}
	if got := toolNames(t, cs); !slices.Equal(got, registerTools(1)) {
		t.Errorf("tools after the flood: %v", got)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("no tools/list_changed after the flood")
	}
	t.Logf("100000 notifications: %v, %d bytes allocated, at most %d more goroutines", elapsed, after.TotalAlloc-before.TotalAlloc, peak)
	// Other tests' sessions may still be winding down; one goroutine per
	// notification would be 100,000.
	if peak > 1000 {
		t.Errorf("%d more goroutines during the flood", peak)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 8<<20 {
		t.Errorf("the flood allocated %d bytes", a)
	}
}

// TestCrashForgetsRuntimeTools: a plugin instance that registered tools and
// then crashed is replaced by a fresh one, and the server offers what the
// fresh one lists.
func TestCrashForgetsRuntimeTools(t *testing.T) {
	p := loadPlugin(t, "register", testutil.BuildPlugin(t, "./internal/testplugins/register"), config.Limits{})
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: p}), nil)
	callTool(t, cs, "register", map[string]any{})
	callTool(t, cs, "register", map[string]any{})
	if got := toolNames(t, cs); !slices.Equal(got, registerTools(2)) {
		t.Fatalf("tools = %v", got)
	}
	if res := callTool(t, cs, "register_crash", map[string]any{}); !res.IsError {
		t.Fatalf("register_crash = %+v, want a tool error", res)
	}
	if got := toolNames(t, cs); !slices.Equal(got, registerTools(0)) {
		t.Errorf("tools after the crash = %v, want %v", got, registerTools(0))
	}
	if got := resultText(t, callTool(t, cs, "register", map[string]any{})); got != "dyn_1" {
		t.Errorf("register after the crash = %q", got)
	}
}
