package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
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

// load compiles the module at path with opts into a plugin closed at the
// end of the test.
func load(t *testing.T, path string, opts plugin.Options) *plugin.Plugin {
	t.Helper()
	engineOnce.Do(func() {
		var err error
		if engine, err = plugin.NewEngine(testutil.CacheDir()); err != nil {
			t.Fatal(err)
		}
	})
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Name == "" {
		opts.Name = "test"
	}
	p, err := engine.Load(context.Background(), wasm, opts)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("content %T, want text", c)
		}
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "")
}

func TestDetectInterface(t *testing.T) {
	for _, tc := range []struct {
		path func(t *testing.T) string
		want plugin.Interface
	}{
		{func(t *testing.T) string { return testutil.BuildPlugin(t, "./internal/testplugins/legacy") }, plugin.Legacy},
		{func(t *testing.T) string { return testutil.BuildPlugin(t, "./internal/testplugins/servlet") }, plugin.Servlet},
		{func(t *testing.T) string { return testutil.BuildPlugin(t, "./examples/conformance") }, plugin.V1},
		{func(t *testing.T) string { return testutil.BuildWAT(t, "echo") }, plugin.Legacy},
	} {
		t.Run(tc.want.String(), func(t *testing.T) {
			p := load(t, tc.path(t), plugin.Options{})
			if got := p.Interface(); got != tc.want {
				t.Errorf("Interface() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLegacyCall(t *testing.T) {
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/legacy"), plugin.Options{})
	ctx := context.Background()
	tools, err := p.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "reverse,add,fail" {
		t.Errorf("tools = %s", got)
	}
	res, err := p.CallTool(ctx, nil, "reverse", json.RawMessage(`{"text":"hangar"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "ragnah" {
		t.Errorf("reverse = %q", got)
	}
	_, err = p.CallTool(ctx, nil, "fail", nil)
	var pe *plugin.PluginError
	if !errors.As(err, &pe) || pe.Message != "fail: requested failure" {
		t.Errorf("fail: err = %v, want PluginError \"fail: requested failure\"", err)
	}
}

func TestServletResources(t *testing.T) {
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/servlet"), plugin.Options{Config: map[string]string{"suffix": "!"}})
	ctx := context.Background()
	tools, err := p.ListTools(ctx, nil)
	if err != nil || len(tools) != 1 || tools[0].Name != "lookup" {
		t.Fatalf("ListTools = %v, %v; want the single tool lookup", tools, err)
	}
	res, err := p.ListResources(ctx, nil)
	if err != nil || len(res) != 2 {
		t.Fatalf("ListResources = %v, %v", res, err)
	}
	tmpls, err := p.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls) != 1 || tmpls[0].URITemplate != "servlet://item/{id}" {
		t.Fatalf("ListResourceTemplates = %v, %v", tmpls, err)
	}
	rr, err := p.ReadResource(ctx, nil, "servlet://item/7")
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "7") {
		t.Errorf("read item/7 = %+v", rr.Contents)
	}
	call, err := p.CallTool(ctx, nil, "lookup", json.RawMessage(`{"key":"alpha"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, call); !strings.HasSuffix(got, "!") {
		t.Errorf("lookup = %q, want the configured suffix", got)
	}
}

func TestTimeoutDiscardsInstance(t *testing.T) {
	p := load(t, testutil.BuildWAT(t, "loop"), plugin.Options{Limits: config.Limits{CallTimeout: 200 * time.Millisecond}})
	start := time.Now()
	_, err := p.CallTool(context.Background(), nil, "loop", nil)
	if !errors.Is(err, plugin.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %v", d)
	}
	if inUse, idle := p.Stats(); inUse != 0 || idle != 0 {
		t.Errorf("after timeout: %d in use, %d idle; want the instance discarded", inUse, idle)
	}
	// The plugin still serves.
	if _, err := p.ListTools(context.Background(), nil); err != nil {
		t.Errorf("ListTools after timeout: %v", err)
	}
}

func TestCancelInterrupts(t *testing.T) {
	p := load(t, testutil.BuildWAT(t, "loop"), plugin.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := p.CallTool(ctx, nil, "loop", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestTrap(t *testing.T) {
	p := load(t, testutil.BuildWAT(t, "trap"), plugin.Options{})
	_, err := p.CallTool(context.Background(), nil, "trap", nil)
	if !errors.Is(err, plugin.ErrTrap) {
		t.Fatalf("err = %v, want ErrTrap", err)
	}
	if _, err := p.ListTools(context.Background(), nil); err != nil {
		t.Errorf("ListTools after trap: %v", err)
	}
}

func TestGarbageOutput(t *testing.T) {
	p := load(t, testutil.BuildWAT(t, "garbage"), plugin.Options{})
	if _, err := p.ListTools(context.Background(), nil); !errors.Is(err, plugin.ErrBadOutput) {
		t.Errorf("ListTools err = %v, want ErrBadOutput", err)
	}
	if _, err := p.CallTool(context.Background(), nil, "x", nil); !errors.Is(err, plugin.ErrBadOutput) {
		t.Errorf("CallTool err = %v, want ErrBadOutput", err)
	}
}

func TestMemoryCap(t *testing.T) {
	const pages = 64 // 4 MiB
	p := load(t, testutil.BuildWAT(t, "membomb"), plugin.Options{Limits: config.Limits{MemoryPages: pages}})
	// The bomb grows memory until the cap stops it, and reports how far it got.
	res, err := p.CallTool(context.Background(), nil, "membomb", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "64" {
		t.Errorf("membomb reached %q pages, want the cap of %d", got, pages)
	}
}

func TestOutputLimit(t *testing.T) {
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/legacy"), plugin.Options{Limits: config.Limits{MaxOutput: 8}})
	_, err := p.CallTool(context.Background(), nil, "reverse", json.RawMessage(`{"text":"much longer than eight bytes"}`))
	if !errors.Is(err, plugin.ErrOutputTooLarge) {
		t.Fatalf("err = %v, want ErrOutputTooLarge", err)
	}
}

// TestConcurrentCalls runs calls on one plugin from many goroutines: each
// borrows its own instance, never more than the limit.
func TestConcurrentCalls(t *testing.T) {
	const max = 3
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/legacy"), plugin.Options{Limits: config.Limits{MaxInstances: max}})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			res, err := p.CallTool(context.Background(), nil, "add", json.RawMessage(`{"a":1,"b":`+string(rune('0'+i%10))+`}`))
			if err != nil {
				errs <- err
				return
			}
			if inUse, _ := p.Stats(); inUse > max {
				errs <- errors.New("more instances in use than allowed")
			}
			_ = res
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, idle := p.Stats(); idle > max {
		t.Errorf("%d idle instances, limit %d", idle, max)
	}
}

func TestUnknownInterface(t *testing.T) {
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	e, err := plugin.NewEngine("")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Load(context.Background(), wasm, plugin.Options{Name: "empty"})
	if !errors.Is(err, plugin.ErrUnknownInterface) {
		t.Errorf("err = %v, want ErrUnknownInterface", err)
	}
}
