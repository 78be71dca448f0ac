package main_test

// Errors as a user meets them: what hangar says when a plugin crashes,
// runs out of memory or reads a file it was not granted, when a stdio
// client leaves early, and what make run does.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// trappyPanic is what the trappy plugin's init panics with, and where: the
// line of its init that called typed.AddTool (the frames of the PDK and
// the runtime above it are not the plugin's).
const trappyPanic = `panic: typed: AddTool "bad": input type: ForType(main.badIn): type chan int is unsupported by jsonschema` +
	` at github.com/hangar-mcp/hangar/internal/testplugins/trappy/main.go:21`

// TestStartupPanic: a plugin that panics while it starts (a typed tool
// whose input has a chan int) ends inspect and serve with the panic's
// message, once, naming the plugin once; the panic and its goroutine dump
// are not logged as warnings, once per export.
func TestStartupPanic(t *testing.T) {
	trappy := copyPlugin(t, "./internal/testplugins/trappy", "trappy.wasm")
	want := "plugin trappy crashed while starting: " + trappyPanic
	check := func(what, stderr string, code int) {
		t.Helper()
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", what, code, stderr)
		}
		if n := strings.Count(stderr, want); n != 1 {
			t.Errorf("%s: the panic's message %d times, want once:\n%s", what, n, stderr)
		}
		last := lastLine(stderr)
		if !strings.HasSuffix(last, want) || strings.Count(last, "plugin trappy") != 1 || strings.Contains(last, "unreachable") {
			t.Errorf("%s ends with\n  %s\nwant\n  hangar %s: %s", what, last, strings.Fields(what)[0], want)
		}
		if strings.Contains(stderr, "level=WARN") {
			t.Errorf("%s: warnings logged:\n%s", what, stderr)
		}
	}
	_, stderr, code := run(t, "inspect", trappy)
	check("inspect trappy.wasm", stderr, code)

	cfg := writeConfig(t, "plugins:\n  - name: trappy\n    path: "+trappy+"\n")
	_, stderr, code = run(t, "serve", "--stdio", "--config", cfg)
	check("serve --config", stderr, code)

	// The dump is still there, at debug.
	_, stderr, _ = run(t, "inspect", "--log-level", "debug", trappy)
	if !strings.Contains(stderr, "level=DEBUG msg=\"goroutine 1 [running]:\"") {
		t.Errorf("inspect --log-level debug: no goroutine dump:\n%s", stderr)
	}
}

// TestOutOfMemory: a plugin that runs out of memory fails its call with
// what happened and which limit, and the Go runtime's goroutine dump stays
// at debug.
func TestOutOfMemory(t *testing.T) {
	hog := testutil.BuildPlugin(t, "./internal/testplugins/hog")
	cfg := writeConfig(t, "plugins:\n  - name: hog\n    path: "+hog+"\n    limits:\n      memory: 64MiB\n")
	_, stderr, code := run(t, "call", "--config", cfg, "hog")
	want := "plugin hog: tool hog: plugin crashed: plugin ran out of memory (limits.memory 64MiB); raise limits.memory of plugin hog if it needs more"
	if code != 1 || lastLine(stderr) != want {
		t.Errorf("call hog: exit %d, last line\n  %s\nwant\n  %s", code, lastLine(stderr), want)
	}
	if n := strings.Count(stderr, "level=WARN"); n > 1 || strings.Contains(stderr, "goroutine") {
		t.Errorf("call hog: %d warnings, goroutine dump in the log: %v\n%s", n, strings.Contains(stderr, "goroutine"), stderr)
	}
	out, _, code := run(t, "call", "--config", cfg, "small")
	if code != 0 || out != "ok\n" {
		t.Errorf("call small: exit %d, %q", code, out)
	}
}

// TestPanicAtTheLine: a typed tool that writes to a nil map fails its
// call with the tool's name and the plugin's line; the log has the
// goroutine's stack, once, as a warning.
func TestPanicAtTheLine(t *testing.T) {
	panicky := copyPlugin(t, "./internal/testplugins/panicky", "panicky.wasm")
	_, stderr, code := run(t, "call", panicky, "nilmap", `{}`)
	want := "nilmap: panic: assignment to entry in nil map at github.com/hangar-mcp/hangar/internal/testplugins/panicky/main.go:"
	if code != 1 || !strings.HasPrefix(lastLine(stderr), want) {
		t.Errorf("call nilmap: exit %d, last line\n  %s\nwant\n  %s<line>", code, lastLine(stderr), want)
	}
	if n := strings.Count(stderr, "level=WARN"); n != 1 || !strings.Contains(stderr, `level=WARN msg="plugin handler panicked"`) ||
		!strings.Contains(stderr, `stack="goroutine 1 [running]:\npanic(`) {
		t.Errorf("call nilmap: %d warnings, want one with the stack:\n%s", n, stderr)
	}
}

// TestFileWithoutGrant: a plugin reading a file outside every granted
// directory gets the error it always got (EBADF), and the call's result
// and the log say which grant would allow it.
func TestFileWithoutGrant(t *testing.T) {
	typed := copyPlugin(t, "./internal/testplugins/typed", "typed.wasm")
	_, stderr, code := run(t, "call", typed, "read_file", `{"path":"/data/hello.txt"}`)
	denial := `file access denied: "/data/hello.txt" is in no directory of grants.allowed_paths (no directory is granted); ` +
		`to allow it, add {host: <a directory>, guest: /data} to grants.allowed_paths of plugin typed`
	// The plugin's error, and what Hangar refused it, which a client
	// that shows no log reads too.
	if code != 1 || !strings.HasSuffix(strings.TrimSpace(stderr), "\nopen /data/hello.txt: Bad file number\n"+denial) {
		t.Errorf("read_file without grants: exit %d, stderr\n%s\nwant it to end with the plugin's error and\n%s", code, stderr, denial)
	}
	want := `level=WARN msg="` + strings.ReplaceAll(denial, `"`, `\"`) + `" plugin=typed op=open path=/data/hello.txt`
	if !strings.Contains(stderr, want) {
		t.Errorf("read_file without grants logged\n%s\nwant a line with\n%s", stderr, want)
	}

	// With a grant elsewhere, the granted directory works and the log
	// names it.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf("plugins:\n  - name: files\n    path: %s\n    grants:\n      allowed_paths:\n        - {host: %s, guest: /work, read_only: true}\n", typed, dir))
	out, _, code := run(t, "call", "--config", cfg, "read_file", `{"path":"/work/a.txt"}`)
	if code != 0 || out != `{"text":"A"}`+"\n" {
		t.Errorf("read_file in the grant: exit %d, %q", code, out)
	}
	_, stderr, _ = run(t, "call", "--config", cfg, "read_file", `{"path":"/etc/passwd"}`)
	if want := `(the granted directories are /work); to allow it, add {host: <a directory>, guest: /etc} to grants.allowed_paths of plugin files`; !strings.Contains(stderr, want) {
		t.Errorf("read_file outside the grant logged\n%s\nwant a line with\n%s", stderr, want)
	}
}

// TestStdioClientLeavesEarly: a stdio client that closes stdin while the
// plugins still compile stops hangar; that is no failure to load, and
// nothing is logged as one.
func TestStdioClientLeavesEarly(t *testing.T) {
	hello := testutil.BuildPlugin(t, "./examples/hello")
	cfg := writeConfig(t, "plugins:\n  - name: hello\n    path: "+hello+"\n")
	for i := range 3 {
		// A cache of its own each time: the plugin is listed in the
		// interpreter, then compiled after serving began.
		cmd := exec.Command(hangar, "serve", "--stdio", "--cache-dir", filepath.Join(t.TempDir(), "cache"), "--config", cfg)
		cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, stderr.String())
		}
		if strings.Contains(stderr.String(), "failed to load") || strings.Contains(stderr.String(), "level=WARN") {
			t.Fatalf("run %d: hangar stopped by its client logged a failure:\n%s", i, stderr.String())
		}
	}
}

// TestMakeRun: make run says what it builds, serves, and, stopped with
// Ctrl-C (SIGINT to its process group, as a terminal sends it), stops
// cleanly: hangar exits 0, and make reports no error (make itself, sent
// SIGINT too, ends by it once hangar has, as make does).
func TestMakeRun(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	if testing.Short() {
		t.Skip("builds hangar and the examples")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "hangar")
	cmd := exec.CommandContext(ctx, "make", "-C", testutil.Root(), "run", "RUN_ADDR=127.0.0.1:0", "HANGAR_BIN="+bin)
	// The Go build cache stays the one in use (a fresh XDG_CACHE_HOME would
	// move it too, and make would build hangar from nothing); Hangar's own
	// caches go to the scratch directory.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "GOCACHE="+strings.TrimSpace(string(gocache)), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	for deadline := time.Now().Add(14 * time.Minute); !strings.Contains(out.String(), "msg=ready"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("make run: not ready:\n%s", out.String())
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT) {
		t.Errorf("make run after Ctrl-C: %v\n%s", err, out.String())
	}
	for _, want := range []string{"make run: building", "takes a few minutes", "make run: serving examples/hangar.yaml", "stopping: letting calls in progress finish"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("make run did not say %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "*** [") {
		t.Errorf("make run reported an error:\n%s", out.String())
	}

	// What make ran: hangar ends with 0 after SIGINT.
	srv := exec.Command(bin, "serve", "--config", filepath.Join(testutil.Root(), "examples", "hangar.yaml"), "--http", "127.0.0.1:0")
	srv.Env = cmd.Env
	var logs testutil.SyncBuffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill() })
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(logs.String(), "msg=ready"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hangar not ready:\n%s", logs.String())
		}
	}
	srv.Process.Signal(syscall.SIGINT)
	if err := srv.Wait(); err != nil {
		t.Errorf("hangar serve after SIGINT: %v, want exit status 0\n%s", err, logs.String())
	}
}

// copyPlugin builds the plugin pkg and returns a copy of it named name, so
// that hangar names the plugin after it (the builds' names carry a hash).
func copyPlugin(t *testing.T, pkg, name string) string {
	t.Helper()
	b, err := os.ReadFile(testutil.BuildPlugin(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
