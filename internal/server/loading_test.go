package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// expectedLists reads p's lists and edits them into what a stale or
// doctored catalog would say: edit changes the tools.
func expectedLists(t *testing.T, p *plugin.Plugin, edit func([]*mcp.Tool) []*mcp.Tool) *plugin.Lists {
	t.Helper()
	l, err := p.ReadLists(context.Background(), plugin.AllLists)
	if err != nil {
		t.Fatal(err)
	}
	// A deep copy, as the catalog cache would give.
	b, err := json.Marshal(l.Tools)
	if err != nil {
		t.Fatal(err)
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	return &plugin.Lists{Read: plugin.AllLists, Tools: edit(tools), Resources: l.Resources, Templates: l.Templates, Prompts: l.Prompts}
}

// loadingLegacy serves the legacy plugin as still loading, expected to
// offer its own lists, with calls waiting for at most timeout.
func loadingLegacy(t *testing.T, timeout time.Duration) (*plugin.Plugin, *server.Loading, *server.Server, *mcp.ClientSession) {
	p := legacy(t)
	l := server.NewLoading("legacy", expectedLists(t, p, func(tools []*mcp.Tool) []*mcp.Tool { return tools }), timeout)
	s := newServer(t, nil, server.Mount{Loading: l})
	return p, l, s, connect(t, s, nil)
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

func callAsync(cs *mcp.ClientSession, name string, args any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		ch <- callResult{res, err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("call did not return")
	}
	return callResult{}
}

// stillWaiting checks that a call has not returned yet.
func stillWaiting(t *testing.T, ch <-chan callResult, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned before the plugin was loaded: %+v, %v", what, r.res, r.err)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestLoadingOffersExpectedLists: a plugin still loading is listed from the
// lists it is expected to offer; its calls wait for it; once loaded, the
// lists that differ are replaced and clients told; a call checked against
// the expected schema is checked again against the live one.
func TestLoadingOffersExpectedLists(t *testing.T) {
	p := legacy(t)
	expected := expectedLists(t, p, func(tools []*mcp.Tool) []*mcp.Tool {
		var out []*mcp.Tool
		for _, tool := range tools {
			switch tool.Name {
			case "fail": // the live plugin has it; the catalog does not
				continue
			case "reverse": // the catalog's schema lets anything through
				tool.InputSchema = map[string]any{"type": "object"}
			}
			out = append(out, tool)
		}
		return append(out, &mcp.Tool{Name: "ghost", InputSchema: map[string]any{"type": "object"}})
	})
	l := server.NewLoading("legacy", expected, time.Minute)
	s := newServer(t, nil, server.Mount{Loading: l})
	changed := make(chan struct{}, 16)
	cs := connect(t, s, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})

	if got := strings.Join(toolNames(t, cs), ","); got != "add,ghost,reverse" {
		t.Errorf("tools while loading = %s, want the expected ones", got)
	}
	if ready, notReady := s.Readiness(); ready || notReady["legacy"] != "loading" {
		t.Errorf("Readiness while loading = %v, %v", ready, notReady)
	}
	reverse := callAsync(cs, "reverse", map[string]any{"text": "abc"})
	bad := callAsync(cs, "reverse", map[string]any{}) // valid for the catalog only
	ghost := callAsync(cs, "ghost", map[string]any{})
	stillWaiting(t, reverse, "reverse")

	live, err := p.ReadLists(context.Background(), plugin.AllLists)
	if err != nil {
		t.Fatal(err)
	}
	l.Loaded(p, live)

	if r := await(t, reverse); r.err != nil || r.res.IsError || resultText(t, r.res) != "cba" {
		t.Errorf("reverse after loading = %+v, %v", r.res, r.err)
	}
	if r := await(t, bad); r.err != nil || !r.res.IsError || !strings.Contains(resultText(t, r.res), "invalid arguments") {
		t.Errorf("reverse without text, checked against the live schema = %+v, %v", r.res, r.err)
	}
	if r := await(t, ghost); r.err != nil || !r.res.IsError || !strings.Contains(resultText(t, r.res), `no longer offers tool "ghost"`) {
		t.Errorf("ghost = %+v, %v", r.res, r.err)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no tools/list_changed after the live list differed")
	}
	if got := strings.Join(toolNames(t, cs), ","); got != "add,fail,reverse" {
		t.Errorf("tools once loaded = %s, want the plugin's own", got)
	}
	if ready, notReady := s.Readiness(); !ready || len(notReady) != 0 {
		t.Errorf("Readiness once loaded = %v, %v", ready, notReady)
	}
	if d := l.Differ(); d != plugin.ToolList.Set() {
		t.Errorf("Differ = %s, want tools", d)
	}
}

// TestLoadingSameListsNoNotice: lists that match what was expected (with
// the keys of schemas in another order) change nothing and tell no one.
func TestLoadingSameListsNoNotice(t *testing.T) {
	p := legacy(t)
	expected := expectedLists(t, p, func(tools []*mcp.Tool) []*mcp.Tool { return tools })
	l := server.NewLoading("legacy", expected, time.Minute)
	s := newServer(t, nil, server.Mount{Loading: l})
	changed := make(chan struct{}, 16)
	cs := connect(t, s, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	before := toolNames(t, cs)
	live, err := p.ReadLists(context.Background(), plugin.AllLists)
	if err != nil {
		t.Fatal(err)
	}
	l.Loaded(p, live)
	if got := resultText(t, callTool(t, cs, "add", map[string]any{"a": 2, "b": 3})); got != "5" {
		t.Errorf("add = %q", got)
	}
	// The SDK sends list_changed 10ms after a change; give it ample time.
	select {
	case <-changed:
		t.Error("tools/list_changed sent, but the lists were the same")
	case <-time.After(300 * time.Millisecond):
	}
	if after := toolNames(t, cs); !slices.Equal(before, after) {
		t.Errorf("tools %v, then %v", before, after)
	}
	if d := l.Differ(); d != 0 {
		t.Errorf("Differ = %s, want none", d)
	}
}

// TestLoadingFailed: a plugin that fails to load fails its calls with the
// reason, naming it, and Readiness says so.
func TestLoadingFailed(t *testing.T) {
	_, l, s, cs := loadingLegacy(t, time.Minute)
	waiting := callAsync(cs, "reverse", map[string]any{"text": "abc"})
	stillWaiting(t, waiting, "reverse")
	l.Failed(errors.New("compiling plugin legacy: out of luck"))
	r := await(t, waiting)
	if r.err != nil || !r.res.IsError {
		t.Fatalf("call to a failed plugin = %+v, %v; want a tool error", r.res, r.err)
	}
	if msg := resultText(t, r.res); !strings.Contains(msg, "plugin legacy") || !strings.Contains(msg, "out of luck") || !strings.Contains(msg, "not loaded") {
		t.Errorf("error = %q, want the plugin and the reason", msg)
	}
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "nope"}); err == nil {
		t.Error("unknown prompt accepted")
	}
	ready, notReady := s.Readiness()
	if ready || !strings.HasPrefix(notReady["legacy"], "failed to load: ") || !strings.Contains(notReady["legacy"], "out of luck") {
		t.Errorf("Readiness = %v, %v", ready, notReady)
	}
}

// TestLoadingWaitBounded: a call waits for a plugin that is still loading
// for at most its call timeout.
func TestLoadingWaitBounded(t *testing.T) {
	_, _, _, cs := loadingLegacy(t, 200*time.Millisecond)
	start := time.Now()
	res := callTool(t, cs, "reverse", map[string]any{"text": "abc"})
	if !res.IsError || !strings.Contains(resultText(t, res), "still loading after 200ms") {
		t.Errorf("call = %+v", res)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 30*time.Second {
		t.Errorf("the call returned after %s", d)
	}
}

// TestLoadingReplacedByReload: calls waiting for a plugin that a reload
// replaces before it loaded run on its replacement.
func TestLoadingReplacedByReload(t *testing.T) {
	_, l, s, cs := loadingLegacy(t, time.Minute)
	var waiting []<-chan callResult
	for i := range 8 {
		waiting = append(waiting, callAsync(cs, "add", map[string]any{"a": i, "b": 1}))
	}
	stillWaiting(t, waiting[0], "add")
	if err := s.Reload(context.Background(), []server.Mount{{Plugin: loadPlugin(t, "legacy", testutil.BuildPlugin(t, "./internal/testplugins/legacy"), config.Limits{})}}); err != nil {
		t.Fatal(err)
	}
	l.Failed(fmt.Errorf("%w: replaced while loading", plugin.ErrClosed))
	for i, ch := range waiting {
		r := await(t, ch)
		if r.err != nil || r.res.IsError || resultText(t, r.res) != fmt.Sprint(i+1) {
			t.Errorf("call %d = %+v, %v", i, r.res, r.err)
		}
	}
	if ready, notReady := s.Readiness(); !ready {
		t.Errorf("Readiness after the reload = %v, %v", ready, notReady)
	}
}

// TestReloadWhileLoadingLosesNoCall is TestReloadLosesNoCall with plugins
// still loading: 5,000 calls from 16 clients across 41 reloads, which
// install plugins loading in the background, plugins replaced before they
// ever load, and loaded plugins, in turn. Every call succeeds.
func TestReloadWhileLoadingLosesNoCall(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./internal/testplugins/flood"))
	if err != nil {
		t.Fatal(err)
	}
	load := func() *plugin.Plugin {
		p, err := sharedEngine(t).Load(context.Background(), wasm, plugin.Options{Name: "flood", Limits: config.Limits{MaxInstances: 2}, Logger: quietLogger()})
		if err != nil {
			t.Error(err)
		}
		return p
	}
	first := load()
	expected := expectedLists(t, first, func(tools []*mcp.Tool) []*mcp.Tool { return tools })

	// installed is what a reload put in place, and how to retire it.
	type installed struct {
		mount  server.Mount
		retire func()
	}
	plain := func(p *plugin.Plugin) installed {
		return installed{server.Mount{Plugin: p}, func() { p.Close(context.Background()) }}
	}
	// loadingAfter loads the plugin in the background after pause.
	loadingAfter := func(pause time.Duration) installed {
		l := server.NewLoading("flood", expected, time.Minute)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(pause)
			p := load()
			live, err := p.ReadLists(context.Background(), plugin.AllLists)
			if err != nil {
				t.Error(err)
			}
			l.Loaded(p, live)
		}()
		return installed{server.Mount{Loading: l}, func() {
			<-done
			l.Plugin().Close(context.Background())
		}}
	}
	// neverLoading is replaced before it loads.
	neverLoading := func() installed {
		l := server.NewLoading("flood", expected, time.Minute)
		return installed{server.Mount{Loading: l}, func() {
			l.Failed(fmt.Errorf("%w: replaced while loading", plugin.ErrClosed))
		}}
	}

	cur := loadingAfter(50 * time.Millisecond)
	first.Close(context.Background())
	s := newServer(t, nil, cur.mount)
	url := serveHTTP(t, s, nil)
	defer func() { cur.retire() }()

	const calls, clients, reloads = 5000, 16, 30
	var next, failed, done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range clients {
		cs := httpClient(t, url)
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > calls {
					return
				}
				text := "c" + strconv.FormatInt(i, 10)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				cancel()
				switch {
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				case res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text:
					failed.Add(1)
					b, _ := json.Marshal(res)
					firstErr.CompareAndSwap(nil, string(b))
				}
				done.Add(1)
			}
		})
	}
	kinds := map[string]int{}
	installs := 0
	install := func(n installed) {
		installs++
		if err := s.Reload(context.Background(), []server.Mount{n.mount}); err != nil {
			t.Fatal(err)
		}
		cur.retire() // calls waiting on it, or queued on its plugin, move to n
		cur = n
	}
	for r := range reloads {
		for done.Load() < int64((r+1)*calls/(reloads+2)) {
			time.Sleep(2 * time.Millisecond)
		}
		switch r % 3 {
		case 0:
			install(loadingAfter(time.Duration(r) * time.Millisecond))
			kinds["loading"]++
		case 1:
			// Calls gather on a plugin that never loads, until a reload
			// replaces it with one that is loading.
			install(neverLoading())
			kinds["never loaded"]++
			time.Sleep(20 * time.Millisecond)
			install(loadingAfter(10 * time.Millisecond))
			kinds["loading"]++
		default:
			install(plain(load()))
			kinds["loaded"]++
		}
	}
	// The last set holds a plugin that loads: the calls waiting on it finish.
	install(plain(load()))
	wg.Wait()
	t.Logf("%d calls by %d clients across %d reloads %v: %d failed", calls, clients, installs, kinds, failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d calls failed; first: %v", failed.Load(), firstErr.Load())
	}
}
