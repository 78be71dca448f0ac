package plugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// panickySource is the test plugin whose handlers panic.
const panickySource = "internal/testplugins/panicky/main.go"

// panicLine returns the file:line, as a -trimpath build names it, of the
// line of the panicky plugin marked "// panics: <what>".
func panicLine(t *testing.T, what string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(testutil.Root(), panickySource))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), "// panics: "+what) {
			return fmt.Sprintf("github.com/hangar-mcp/hangar/%s:%d", panickySource, n)
		}
	}
	t.Fatalf("no line marked %q in %s", "// panics: "+what, panickySource)
	return ""
}

// loadLogged loads the module at path with opts, logging into the
// returned buffer.
func loadLogged(t *testing.T, path string, opts plugin.Options) (*plugin.Plugin, *testutil.SyncBuffer) {
	t.Helper()
	logs := new(testutil.SyncBuffer)
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	return load(t, path, opts), logs
}

// TestPanicNamesTheLine: a handler of the Go PDK that panics fails its
// request with what it served and the plugin's own line; the log has the
// goroutine's stack, once, as a warning; the plugin goes on serving. A
// goroutine's panic, which no handler recovers, crashes the call with the
// same message and stack.
func TestPanicNamesTheLine(t *testing.T) {
	path := testutil.BuildPlugin(t, "./internal/testplugins/panicky")
	p, logs := loadLogged(t, path, plugin.Options{Name: "panicky"})
	ctx := context.Background()
	const nilMap = "panic: assignment to entry in nil map at "

	for _, tc := range []struct {
		what string
		call func() error
		want string
	}{
		{"tool", func() error {
			_, err := p.CallTool(ctx, nil, "nilmap", json.RawMessage(`{}`))
			return err
		}, "nilmap: " + nilMap},
		{"resource", func() error {
			_, err := p.ReadResource(ctx, nil, "panicky://boom")
			return err
		}, "panicky://boom: " + nilMap},
		{"prompt", func() error {
			_, err := p.GetPrompt(ctx, nil, "boom", nil)
			return err
		}, "boom: " + nilMap},
		{"completion", func() error {
			_, err := p.Complete(ctx, nil, &mcp.CompleteParams{
				Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "boom"},
				Argument: mcp.CompleteParamsArgument{Name: "a"},
			})
			return err
		}, "completion of boom: " + nilMap},
	} {
		before := logs.String()
		err := tc.call()
		var pe *plugin.PluginError
		if want := tc.want + panicLine(t, tc.what); !errors.As(err, &pe) || pe.Message != want {
			t.Errorf("%s: error %v\nwant the plugin's error %s", tc.what, err, want)
		}
		logged := strings.TrimPrefix(logs.String(), before)
		if n := strings.Count(logged, "level=WARN"); n != 1 || !strings.Contains(logged, `msg="plugin handler panicked"`) ||
			!strings.Contains(logged, `stack="goroutine `) || !strings.Contains(logged, panicLine(t, tc.what)+" +0x") {
			t.Errorf("%s: logged %d warnings, want one with the stack:\n%s", tc.what, n, logged)
		}
	}
	res, err := p.CallTool(ctx, nil, "fine", json.RawMessage(`{}`))
	if err != nil || res.IsError {
		t.Fatalf("after the panics: %v, %+v", err, res)
	}

	before := logs.String()
	_, err = p.CallTool(ctx, nil, "goroutine", json.RawMessage(`{}`))
	var ce *plugin.CrashError
	if want := "panic: assignment to entry in nil map at " + panicLine(t, "goroutine"); !errors.As(err, &ce) || ce.Reason != want ||
		err.Error() != "plugin panicky: tool goroutine: plugin crashed: "+want {
		t.Errorf("a goroutine's panic: %v\nwant a crash of tool goroutine whose reason is %s", err, want)
	}
	logged := strings.TrimPrefix(logs.String(), before)
	if n := strings.Count(logged, "level=WARN"); n != 1 || !strings.Contains(logged, `msg="plugin crashed"`) ||
		!strings.Contains(logged, `stack="goroutine `) || !strings.Contains(logged, panicLine(t, "goroutine")+" +0x") {
		t.Errorf("a goroutine's panic: logged %d warnings, want one with the stack:\n%s", n, logged)
	}
}

// blocks returns the text blocks of res, a line each.
func blocks(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var lines []string
	for _, c := range res.Content {
		lines = append(lines, text(t, &mcp.CallToolResult{Content: []mcp.Content{c}}))
	}
	return strings.Join(lines, "\n")
}

// TestDenialReachesTheCall: a call that fails after Hangar refused its
// plugin a file says which grant to add, as the log does, naming guest
// paths only; the plugin got EBADF. A call that was refused nothing, at
// the same time on another instance, or after, says nothing of it.
func TestDenialReachesTheCall(t *testing.T) {
	path := testutil.BuildPlugin(t, "./internal/testplugins/panicky")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, logs := loadLogged(t, path, plugin.Options{Name: "files", Limits: config.Limits{MaxInstances: 4},
		Grants: config.Grants{AllowedPaths: []config.Mount{{Host: dir, Guest: "/work", ReadOnly: true}}}})
	ctx := context.Background()
	const denial = `file access denied: "/etc/passwd" is in no directory of grants.allowed_paths (the granted directories are /work); ` +
		`to allow it, add {host: <a directory>, guest: /etc} to grants.allowed_paths of plugin files`

	res, err := p.CallTool(ctx, nil, "open", json.RawMessage(`{"path":"/etc/passwd"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := blocks(t, res), "open /etc/passwd: Bad file number (EBADF: true)\n"+denial; !res.IsError || got != want {
		t.Errorf("open /etc/passwd: isError %v,\n%s\nwant\n%s", res.IsError, got, want)
	}
	if !strings.Contains(logs.String(), strings.ReplaceAll(denial, `"`, `\"`)) {
		t.Errorf("the log has not the same text:\n%s", logs)
	}
	if strings.Contains(blocks(t, res), dir) || strings.Contains(logs.String(), dir) {
		t.Errorf("the host directory %s is named", dir)
	}

	// A resource's error too.
	_, err = p.ReadResource(ctx, nil, "panicky://etc/hosts")
	var pe *plugin.PluginError
	wantHosts := strings.ReplaceAll(denial, "/etc/passwd", "/etc/hosts")
	if !errors.As(err, &pe) || pe.Message != "open /etc/hosts: Bad file number ("+wantHosts+")" {
		t.Errorf("read panicky://etc/hosts: %v\nwant the plugin's error with (%s)", err, wantHosts)
	}

	// Calls at once, on instances of their own: only the refused ones
	// are told.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			file, want := "/work/a.txt", `{"text":"A"}`
			if i%2 == 0 {
				file, want = "/etc/passwd", "open /etc/passwd: Bad file number (EBADF: true)\n"+denial
			}
			res, err := p.CallTool(ctx, nil, "open", json.RawMessage(`{"path":"`+file+`"}`))
			if err != nil {
				t.Error(err)
				return
			}
			if got := blocks(t, res); got != want {
				t.Errorf("open %s at once with others: %q, want %q", file, got, want)
			}
		}()
	}
	wg.Wait()
}
