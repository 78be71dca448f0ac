package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestLazyCompileOnFirstCall: serve compiles a plugin with compile: lazy
// (the default) on its first call, not at start: it is listed, served and
// ready, and holds no instance, until a call wants it; the first call then
// loads it and is answered. A plugin with compile: eager is loaded before
// "ready". A second start, with the lists in the catalog, is lazy too.
func TestLazyCompileOnFirstCall(t *testing.T) {
	isolate(t)

	wasm := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`plugins:
  - name: lazy
    path: %s
    prefix: lazy
  - name: eager
    path: %s
    prefix: eager
    compile: eager
`, wasm, wasm)), 0o600); err != nil {
		t.Fatal(err)
	}
	// loaded is logged by plugin.Engine.Load, and only there.
	loaded := func(log, name string) bool { return strings.Contains(log, "msg=instances plugin="+name+" ") }
	for _, run := range []string{"cold", "from the catalog"} {
		ctx, cancel := context.WithCancel(context.Background())
		var stderr lockedBuffer
		done := make(chan int, 1)
		go func() {
			done <- Main(ctx, []string{"serve", "--log-level", "debug", "--http", "127.0.0.1:0", "--cache-dir", filepath.Join(dir, "cache"), "--config", cfg},
				&Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr})
		}()
		stop := func() {
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("%s: serve exited %d", run, code)
			}
		}
		// A cold compilation under the race detector on a busy machine
		// takes minutes.
		addrRE := regexp.MustCompile(`msg="listening: answering health probes[^\n]*addr=(\S+)`)
		var addr string
		for deadline := time.Now().Add(10 * time.Minute); ; {
			log := stderr.String()
			if m := addrRE.FindStringSubmatch(log); m != nil && strings.Contains(log, "msg=ready ") {
				addr = m[1]
				break
			}
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("%s: never ready:\n%s", run, log)
			}
			time.Sleep(20 * time.Millisecond)
		}
		log := stderr.String()
		if !strings.Contains(log, "msg=ready plugins=2 started=1 on_first_call=1 ") {
			t.Errorf("%s: the ready line does not count one plugin compiled on its first call:\n%s", run, log)
		}
		if loaded(log, "lazy") {
			t.Errorf("%s: the lazy plugin was loaded before any call:\n%s", run, log)
		}
		if !loaded(log, "eager") {
			t.Errorf("%s: the eager plugin was not loaded before ready:\n%s", run, log)
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: /readyz before the first call: %d, want 200", run, resp.StatusCode)
		}

		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
		if err != nil {
			stop()
			t.Fatalf("connect: %v", err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		offered := map[string]bool{}
		for _, tool := range tools.Tools {
			offered[tool.Name] = true
		}
		if !offered["lazy_reverse"] || !offered["eager_reverse"] {
			t.Errorf("%s: tools offered: %v", run, offered)
		}
		if loaded(stderr.String(), "lazy") {
			t.Errorf("%s: tools/list loaded the lazy plugin", run)
		}
		begin := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lazy_reverse", Arguments: map[string]any{"text": "abc"}})
		first := time.Since(begin)
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "cba" {
			t.Errorf("%s: the first call = %v, %v", run, res, err)
		}
		log = stderr.String()
		if !loaded(log, "lazy") || !strings.Contains(log, `msg="compiled on its first call" plugin=lazy`) {
			t.Errorf("%s: the first call did not load the lazy plugin:\n%s", run, log)
		}
		begin = time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lazy_reverse", Arguments: map[string]any{"text": "abc"}}); err != nil {
			t.Error(err)
		}
		t.Logf("%s: the lazy plugin's first call took %v, its second %v", run, first.Round(time.Microsecond), time.Since(begin).Round(time.Microsecond))
		cs.Close()
		stop()
		if run == "from the catalog" && strings.Contains(log, "listed in the interpreter") {
			t.Errorf("%s: listed in the interpreter again, not from the catalog:\n%s", run, log)
		}
	}
}
