package plugintest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hangar-mcp/hangar/plugintest"
)

// TestPluginHelpers checks Call, Decode, Read and Prompt against the typed
// test plugin, in the plugin's own Go types.
func TestPluginHelpers(t *testing.T) {
	p := plugintest.New(t, typedDir, &plugintest.Options{Config: map[string]string{"greeting": "Hi"}})
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	var sum struct {
		Sum float64 `json:"sum"`
	}
	res := p.Call("add", addIn{A: 1.5, B: 2})
	res.Decode(&sum)
	if res.IsError || sum.Sum != 3.5 || res.Text != `{"sum":3.5}` || string(res.Structured) != `{"sum":3.5}` {
		t.Errorf("add: %+v, decoded %+v", res, sum)
	}
	var greeting struct{ Greeting string }
	p.Call("greet", map[string]any{"name": "Ada"}).Decode(&greeting)
	if greeting.Greeting != "Hi, Ada." {
		t.Errorf("greet: %q", greeting.Greeting)
	}
	if res := p.Call("add", map[string]any{"a": "one", "b": 2}); !res.IsError || !strings.Contains(res.Text, `invalid arguments for tool "add"`) || res.Structured != nil {
		t.Errorf("add with a bad argument: %+v", res)
	}
	if res := p.Call("fail", nil); !res.IsError || res.Text != "it failed" {
		t.Errorf("fail: %+v", res)
	}
	if got := p.Read("typed://items/7"); got != "item 7" {
		t.Errorf("typed://items/7: %q", got)
	}
	if got := p.Prompt("review", map[string]string{"topic": "style"}); got != "user: Review style." {
		t.Errorf("review: %q", got)
	}
}

// fatalTB is a testing.TB whose Fatal records the message and ends the
// goroutine, as testing's does, so that a test can check what stops it.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs fn with a fatalTB over t and returns what stopped it, or ""
// if nothing did.
func fatal(t *testing.T, fn func(tb testing.TB)) string {
	f := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { fn(f) })
	wg.Wait()
	return f.msg
}

// TestNewStops checks what stops a test: a plugin that does not build, a
// setting hangar serve refuses, a failed tool given to Decode, a result
// without structured content.
func TestNewStops(t *testing.T) {
	broken := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module broken\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { undefinedName() }\n",
	} {
		if err := os.WriteFile(filepath.Join(broken, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if msg := fatal(t, func(tb testing.TB) { plugintest.New(tb, broken, nil) }); !strings.Contains(msg, "undefinedName") {
		t.Errorf("a plugin that does not build: %q", msg)
	}
	if msg := fatal(t, func(tb testing.TB) {
		plugintest.New(tb, typedDir, &plugintest.Options{Grants: plugintest.Grants{AllowedHosts: []string{"http://x/"}}})
	}); !strings.Contains(msg, "grants.allowed_hosts[0]") {
		t.Errorf("a refused setting: %q", msg)
	}
	var v any
	if msg := fatal(t, func(tb testing.TB) { plugintest.New(tb, typedDir, nil).Call("fail", nil).Decode(&v) }); msg != "plugintest: the tool failed: it failed" {
		t.Errorf("Decode of a tool error: %q", msg)
	}
	if msg := fatal(t, func(tb testing.TB) { plugintest.New(tb, typedDir, nil).Call("plain", nil).Decode(&v) }); !strings.Contains(msg, "no structured content") {
		t.Errorf("Decode without structured content: %q", msg)
	}
}

// TestNewBuildsOnce checks that a directory is built once per process:
// without the go command, a plugin already built still starts, and
// another directory fails to build.
func TestNewBuildsOnce(t *testing.T) {
	plugintest.New(t, typedDir, nil)
	t.Setenv("PATH", t.TempDir())
	if res := plugintest.New(t, typedDir, nil).Call("add", map[string]any{"a": 1, "b": 2}); res.Text != `{"sum":3}` {
		t.Errorf("add: %+v", res)
	}
	if msg := fatal(t, func(tb testing.TB) { plugintest.New(tb, "../examples/hello", nil) }); !strings.Contains(msg, "install Go") {
		t.Errorf("a new directory without go: %q", msg)
	}
}
