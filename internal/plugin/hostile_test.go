package plugin_test

// The hostile suite: plugins that loop, bomb memory, trap, overflow the
// stack, return too much or garbage, pass garbage pointers to host
// functions, and try to reach hosts, files and environment variables they
// were not granted. Each call must fail (or be refused) clearly, in bounded
// time, without harming the host, other calls or the plugin's next call.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func hostileGo(t testing.TB) string {
	return testutil.BuildPlugin(t, "./internal/testplugins/hostile")
}

// hostileLimits are tight enough to hit quickly, loose enough for a Go
// plugin to run under the race detector on a small machine.
// The call limit is generous: these calls end by crashing or by another
// limit long before, except on a loaded machine under the race detector
// (the Extism host functions a Go plugin calls for its memory and output
// are instrumented Go). spinLimits are for the time limit itself.
var hostileLimits = config.Limits{
	MemoryPages: 32 << 20 / config.PageSize, // 32 MiB
	CallTimeout: 40 * time.Second,
	MaxOutput:   1 << 20,
}

var spinLimits = config.Limits{
	MemoryPages: 32 << 20 / config.PageSize,
	CallTimeout: time.Second,
}

// bound is how long any hostile call may take, timeouts included.
const bound = 60 * time.Second

// callBounded calls tool and fails t if it takes longer than bound.
func callBounded(t *testing.T, p *plugin.Plugin, tool, args string) (string, bool, error) {
	t.Helper()
	start := time.Now()
	res, err := p.CallTool(context.Background(), nil, tool, json.RawMessage(args))
	if d := time.Since(start); d > bound {
		t.Errorf("%s took %v, more than %v", tool, d, bound)
	}
	if err != nil {
		return "", false, err
	}
	return text(t, res), res.IsError, nil
}

// settled checks that no instance is left in use and that the plugin still
// answers.
func settled(t *testing.T, p *plugin.Plugin, after string) {
	t.Helper()
	if inUse, _ := p.Stats(); inUse != 0 {
		t.Errorf("after %s: %d instances in use", after, inUse)
	}
	if _, err := p.ListTools(context.Background(), nil); err != nil {
		t.Errorf("after %s: ListTools: %v", after, err)
	}
}

// TestHostileCalls runs each misbehaviour and checks that the call fails
// with the right error in bounded time, that the failed instance is thrown
// away, and that the plugin then serves a good call.
func TestHostileCalls(t *testing.T) {
	goPlugin := hostileGo(t)
	for _, tc := range []struct {
		name, module, tool, args string
		limits                   config.Limits
		wantErr                  error  // nil: the call succeeds
		wantMsg                  string // in the error, or the text of a successful call
		good                     string // a tool that then works
	}{
		{"wat infinite loop", "wat:loop", "loop", `{}`, config.Limits{CallTimeout: 300 * time.Millisecond}, plugin.ErrTimeout, "time limit", ""},
		{"go infinite loop", goPlugin, "spin", `{}`, spinLimits, plugin.ErrTimeout, "time limit", "ok"},
		{"wat memory bomb", "wat:membomb", "membomb", `{}`, config.Limits{MemoryPages: 64}, nil, "64", ""},
		{"go memory bomb", goPlugin, "alloc", `{"mb":4096}`, hostileLimits, plugin.ErrTrap, "plugin ran out of memory (limits.memory ", "ok"},
		{"wat trap", "wat:trap", "trap", `{}`, config.Limits{}, plugin.ErrTrap, "unreachable", ""},
		{"go panic", goPlugin, "panic", `{}`, hostileLimits, plugin.ErrTrap, "plugin crashed: panic: hostile: requested panic", "ok"}, // the panic's message, from stderr
		{"wat stack overflow", "hostile:stack", "stack", `{}`, config.Limits{}, plugin.ErrTrap, "stack overflow", ""},
		{"go stack overflow", goPlugin, "recurse", `{}`, hostileLimits, plugin.ErrTrap, "", "ok"},
		{"huge output", goPlugin, "huge", `{"bytes":1310720}`, hostileLimits, plugin.ErrOutputTooLarge, "exceeds the limit", "ok"},
		{"output beyond memory", goPlugin, "huge", `{"bytes":134217728}`, hostileLimits, plugin.ErrTrap, "", "ok"},
		{"invalid UTF-8", goPlugin, "bad_utf8", `{}`, hostileLimits, plugin.ErrBadOutput, "not valid UTF-8", "ok"},
		{"invalid JSON", goPlugin, "bad_json", `{}`, hostileLimits, plugin.ErrBadOutput, "malformed output", "ok"},
		{"wat garbage", "wat:badcall", "badcall", `{}`, config.Limits{}, plugin.ErrBadOutput, "not valid UTF-8", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.module
			if name, ok := strings.CutPrefix(path, "wat:"); ok {
				path = testutil.BuildWAT(t, name)
			} else if name, ok := strings.CutPrefix(path, "hostile:"); ok {
				path = testutil.BuildHostileWAT(t, name)
			}
			p := load(t, path, plugin.Options{Limits: tc.limits, Logger: quiet()})
			start := time.Now()
			got, _, err := callBounded(t, p, tc.tool, tc.args)
			t.Logf("%s: %v in %v", tc.tool, errOr(err, got), time.Since(start).Round(time.Millisecond))
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("err = %v, want success", err)
			case tc.wantErr == nil && got != tc.wantMsg:
				t.Errorf("result %q, want %q", got, tc.wantMsg)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			case tc.wantErr != nil && !strings.Contains(err.Error(), tc.wantMsg):
				t.Errorf("err = %v, want it to mention %q", err, tc.wantMsg)
			case tc.wantErr != nil && !strings.Contains(err.Error(), "plugin test"):
				t.Errorf("err = %v, want it to name the plugin", err)
			case tc.wantErr != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("err = %q, want one line (stack traces go to the log)", err)
			}
			settled(t, p, tc.tool)
			if tc.good != "" {
				if got, isErr, err := callBounded(t, p, tc.good, `{}`); err != nil || isErr || got != "ok" {
					t.Errorf("then %s = %q, %v, %v", tc.good, got, isErr, err)
				}
			}
		})
	}
}

func errOr(err error, s string) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("result %.60q", s)
}

// quiet drops the plugins' logs unless the test runs with -v.
func quiet() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestGarbagePointers passes garbage offsets and lengths to every host
// function a plugin can import. Hangar's imports answer {"error": ...};
// Extism's fail the call or not, but nothing crashes or hangs.
func TestGarbagePointers(t *testing.T) {
	p := load(t, testutil.BuildHostileWAT(t, "hostcalls"), plugin.Options{Limits: config.Limits{MemoryPages: 16, CallTimeout: 5 * time.Second}, Logger: quiet()})
	tools, err := p.ListTools(context.Background(), nil)
	if err != nil || len(tools) != 15 {
		t.Fatalf("ListTools = %d tools, %v", len(tools), err)
	}
	got, isErr, err := callBounded(t, p, "user", `{}`)
	if err != nil || isErr || got != "user imports answered errors" {
		t.Errorf("user imports: %q, %v, %v; want every request import to answer {\"error\": ...}", got, isErr, err)
	}
	for _, tool := range tools[1:] {
		got, _, err := callBounded(t, p, tool.Name, `{}`)
		var pe *plugin.PluginError
		switch {
		case err == nil && got == "survived":
		case errors.Is(err, plugin.ErrTrap), errors.Is(err, plugin.ErrBadOutput), errors.Is(err, plugin.ErrOutputTooLarge), errors.As(err, &pe):
		default:
			t.Errorf("%s: %q, %v; want survival or a clean failure", tool.Name, got, err)
		}
		t.Logf("%s: %s", tool.Name, errOr(err, got))
		settled(t, p, tool.Name)
	}
}

// sandboxDirs lays out a directory tree for the file tests:
//
//	outside/secret.txt                  must never be reached
//	ro/a.txt                            granted read-only
//	ro/inside-link   -> a.txt           a link that stays inside
//	ro/outside-link  -> ../outside/secret.txt   a link the operator left, pointing out
//	rw/                                 granted read-write
//	rw/out-dir       -> ../outside      a link to a directory outside
func sandboxDirs(t *testing.T) (root string) {
	root = t.TempDir()
	for _, d := range []string{"outside", "ro", "rw"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("outside/secret.txt", "SECRET")
	write("ro/a.txt", "A")
	for link, target := range map[string]string{
		"ro/inside-link":  "a.txt",
		"ro/outside-link": "../outside/secret.txt",
		"rw/out-dir":      "../outside",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestSandboxFiles: a read-only grant reads but never writes, a read-write
// grant writes, and nothing outside the grants can be reached: not with
// "..", not with absolute paths, not through symbolic links the operator
// left or the plugin tries to make.
func TestSandboxFiles(t *testing.T) {
	root := sandboxDirs(t)
	p := load(t, hostileGo(t), plugin.Options{Limits: hostileLimits, Logger: quiet(), Grants: config.Grants{
		AllowedPaths: []config.Mount{
			{Host: filepath.Join(root, "ro"), Guest: "/ro", ReadOnly: true}, // fd 3
			{Host: filepath.Join(root, "rw"), Guest: "/rw"},                 // fd 4
		},
	}})
	ok := func(tool, args, want string) {
		t.Helper()
		got, isErr, err := callBounded(t, p, tool, args)
		if err != nil || isErr || got != want {
			t.Errorf("%s %s = %q (isError %v, err %v), want %q", tool, args, got, isErr, err, want)
		}
	}
	refused := func(tool, args, wantMsg string) {
		t.Helper()
		got, isErr, err := callBounded(t, p, tool, args)
		if err != nil || !isErr || !strings.Contains(strings.ToLower(got), wantMsg) {
			t.Errorf("%s %s = %q (isError %v, err %v), want a refusal mentioning %q", tool, args, got, isErr, err, wantMsg)
		}
		if strings.Contains(got, "SECRET") {
			t.Errorf("%s %s leaked the secret", tool, args)
		}
	}
	secret := filepath.Join(root, "outside", "secret.txt")

	ok("read", `{"path":"/ro/a.txt"}`, "A")
	ok("read", `{"path":"/ro/inside-link"}`, "A")
	ok("list", `{"path":"/ro"}`, "a.txt\ninside-link\noutside-link")
	refused("write", `{"path":"/ro/new.txt","data":"x"}`, "read-only file system")
	refused("write", `{"path":"/ro/a.txt","data":"x"}`, "read-only file system")
	ok("write", `{"path":"/rw/new.txt","data":"written"}`, "wrote")
	if b, err := os.ReadFile(filepath.Join(root, "rw", "new.txt")); err != nil || string(b) != "written" {
		t.Errorf("rw/new.txt on the host = %q, %v", b, err)
	}

	// ".." and absolute paths: the Go runtime cleans paths itself, so the
	// raw WASI path_open is tried too.
	refused("read", `{"path":"/ro/../outside/secret.txt"}`, "")
	refused("read", `{"path":"`+secret+`"}`, "")
	refused("read", `{"path":"/etc/passwd"}`, "")
	refused("list", `{"path":"/"}`, "")
	refused("rawread", `{"fd":3,"path":"../outside/secret.txt"}`, "not permitted")
	refused("rawread", `{"fd":3,"path":"a/../../outside/secret.txt"}`, "not permitted")
	refused("rawread", `{"fd":4,"path":"../outside/secret.txt"}`, "not permitted")
	refused("rawread", `{"fd":3,"path":"`+secret+`"}`, "not permitted")
	refused("rawread", `{"fd":0,"path":"secret.txt"}`, "")
	refused("rawread", `{"fd":5,"path":"secret.txt"}`, "")

	// Links out of a granted directory are not followed, for reading or
	// writing, whoever made them.
	refused("read", `{"path":"/ro/outside-link"}`, "")
	refused("rawread", `{"fd":3,"path":"outside-link"}`, "")
	refused("read", `{"path":"/rw/out-dir/secret.txt"}`, "")
	refused("write", `{"path":"/rw/out-dir/planted.txt","data":"x"}`, "")
	refused("symlink", `{"target":"../outside/secret.txt","link":"/rw/esc"}`, "not permitted")
	refused("symlink", `{"target":"a.txt","link":"/rw/inside"}`, "not permitted")
	refused("symlink", `{"target":"`+secret+`","link":"/rw/abs"}`, "not permitted")
	refused("read", `{"path":"/rw/esc"}`, "no such file")

	// A read-only grant refuses every change; a hard link to a symbolic
	// link (a new symbolic link) is refused in a writable one.
	for _, op := range []string{
		`{"op":"remove","path":"/ro/a.txt"}`,
		`{"op":"rename","path":"/ro/a.txt","to":"/ro/b.txt"}`,
		`{"op":"mkdir","path":"/ro/d"}`,
		`{"op":"link","path":"/ro/a.txt","to":"/ro/b.txt"}`,
		`{"op":"truncate","path":"/ro/a.txt"}`,
	} {
		refused("fsop", op, "read-only file system")
	}
	ok("read", `{"path":"/ro/a.txt"}`, "A")
	refused("fsop", `{"op":"link","path":"/rw/out-dir","to":"/rw/out-copy"}`, "not permitted")
	ok("fsop", `{"op":"mkdir","path":"/rw/d"}`, "done")
	ok("fsop", `{"op":"link","path":"/rw/new.txt","to":"/rw/d/hard.txt"}`, "done")
	ok("read", `{"path":"/rw/d/hard.txt"}`, "written")
	ok("fsop", `{"op":"rename","path":"/rw/d/hard.txt","to":"/rw/moved.txt"}`, "done")
	ok("fsop", `{"op":"remove","path":"/rw/moved.txt"}`, "done")
	refused("fsop", `{"op":"rename","path":"/rw/new.txt","to":"/rw/../outside/moved.txt"}`, "")

	// Nothing changed outside.
	entries, err := os.ReadDir(filepath.Join(root, "outside"))
	if err != nil || len(entries) != 1 {
		t.Errorf("outside/ now holds %v (%v), want only secret.txt", entries, err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "SECRET" {
		t.Errorf("secret.txt = %q, %v", b, err)
	}
	for _, name := range []string{"esc", "inside", "abs", "out-copy"} {
		if _, err := os.Lstat(filepath.Join(root, "rw", name)); err == nil {
			t.Errorf("rw/%s was created", name)
		}
	}
	settled(t, p, "file calls")
}

// TestNothingGranted: a plugin granted nothing sees no file, no host and no
// environment variable, and no configuration.
func TestNothingGranted(t *testing.T) {
	t.Setenv("HANGAR_CANARY", "leaked")
	hits := atomic.Int32{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "reached")
	}))
	defer ts.Close()

	p := load(t, hostileGo(t), plugin.Options{Limits: hostileLimits, Logger: quiet()})
	for _, path := range []string{"/", ".", "/tmp", os.TempDir(), testutil.Root()} {
		if got, isErr, err := callBounded(t, p, "list", `{"path":"`+path+`"}`); err != nil || !isErr {
			t.Errorf("list %s = %q, %v, %v; want an error", path, got, isErr, err)
		}
	}
	for fd := range 8 {
		if got, isErr, err := callBounded(t, p, "rawread", `{"fd":`+strconv.Itoa(fd)+`,"path":"etc/passwd"}`); err != nil || !isErr {
			t.Errorf("rawread fd %d = %q, %v, %v; want an error", fd, got, isErr, err)
		}
	}
	if got, _, err := callBounded(t, p, "env", `{}`); err != nil || got != "" {
		t.Errorf("env = %q, %v; want nothing", got, err)
	}
	if got, _, err := callBounded(t, p, "config", `{"key":"HANGAR_CANARY"}`); err != nil || got != "<unset>" {
		t.Errorf("config = %q, %v; want <unset>", got, err)
	}
	_, _, err := callBounded(t, p, "http", `{"url":"`+ts.URL+`/"}`)
	if !errors.Is(err, plugin.ErrHostDenied) || !strings.Contains(err.Error(), `add "127.0.0.1" to grants.allowed_hosts of plugin test`) {
		t.Errorf("http with no grant: err = %v, want a refusal", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server was reached %d times", n)
	}
	settled(t, p, "ungranted calls")
}

// TestGrantedEnvAndConfig: exactly the granted variables and values.
func TestGrantedEnvAndConfig(t *testing.T) {
	t.Setenv("HANGAR_CANARY", "leaked")
	p := load(t, hostileGo(t), plugin.Options{Limits: hostileLimits, Logger: quiet(),
		Config: map[string]string{"greeting": "hi"},
		Grants: config.Grants{Env: map[string]string{"API_KEY": "k1", "EMPTY": ""}},
	})
	got, _, err := callBounded(t, p, "env", `{}`)
	lines := strings.Split(got, "\n")
	if err != nil || len(lines) != 2 || !strings.Contains(got, "API_KEY=k1") || !strings.Contains(got, "EMPTY=") {
		t.Errorf("env = %q, %v; want exactly API_KEY and EMPTY", got, err)
	}
	if got, _, _ := callBounded(t, p, "config", `{"key":"greeting"}`); got != "hi" {
		t.Errorf("config greeting = %q", got)
	}
	if got, _, _ := callBounded(t, p, "config", `{"key":"API_KEY"}`); got != "<unset>" {
		t.Errorf("config API_KEY = %q, want <unset>", got)
	}
	// var_set works (Extism reads a zero MaxVarBytes as "vars disabled").
	if got, _, err := callBounded(t, p, "var", `{"value":"kept"}`); err != nil || got != "kept" {
		t.Errorf("var = %q, %v", got, err)
	}
}

// TestSandboxHTTP: only granted hosts, and redirects are checked like the
// first URL. The servers listen on 127.0.0.1; "localhost" names the same
// address but is not granted.
func TestSandboxHTTP(t *testing.T) {
	var deniedHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Host, "127.0.0.1:") {
			deniedHits.Add(1)
		}
		fmt.Fprint(w, "target")
	}))
	defer target.Close()
	port := target.Listener.Addr().(*net.TCPAddr).Port
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-allowed":
			http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/", port), http.StatusFound)
		case "/to-denied":
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/", port), http.StatusFound)
		case "/to-denied-307":
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/", port), http.StatusTemporaryRedirect)
		case "/chain":
			// allowed, then denied
			http.Redirect(w, r, "/to-denied", http.StatusMovedPermanently)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			fmt.Fprint(w, "front")
		}
	}))
	defer front.Close()

	p := load(t, hostileGo(t), plugin.Options{Limits: hostileLimits, Logger: quiet(), Grants: config.Grants{AllowedHosts: []string{"127.0.0.1"}}})
	get := func(url string) (string, error) {
		got, _, err := callBounded(t, p, "http", `{"url":"`+url+`"}`)
		return got, err
	}
	if got, err := get(front.URL + "/"); err != nil || got != "200 front" {
		t.Errorf("allowed host: %q, %v", got, err)
	}
	if got, err := get(front.URL + "/to-allowed"); err != nil || got != "200 target" {
		t.Errorf("redirect to an allowed host: %q, %v", got, err)
	}
	for _, path := range []string{"/to-denied", "/to-denied-307", "/chain"} {
		_, err := get(front.URL + path)
		if !errors.Is(err, plugin.ErrRedirectDenied) || !strings.Contains(err.Error(), `redirect to host "localhost" is not in grants.allowed_hosts`) {
			t.Errorf("%s: err = %v, want the redirect refused", path, err)
		}
	}
	if _, err := get(front.URL + "/loop"); !errors.Is(err, plugin.ErrTrap) || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("redirect loop: err = %v, want it stopped", err)
	}
	if _, err := get(fmt.Sprintf("http://localhost:%d/", port)); !errors.Is(err, plugin.ErrHostDenied) || !strings.Contains(err.Error(), `host "localhost" is not in grants.allowed_hosts`) {
		t.Errorf("denied host: err = %v, want a refusal", err)
	}
	// A Host header naming a denied host does not reach it either: the
	// request goes out with the URL's host.
	if got, err := callHTTP(t, p, front.URL+"/", fmt.Sprintf("localhost:%d", port)); err != nil || got != "200 front" {
		t.Errorf("Host header: %q, %v", got, err)
	}
	if n := deniedHits.Load(); n != 0 {
		t.Errorf("the denied host name was reached %d times", n)
	}
	settled(t, p, "HTTP calls")

	// A host that never answers, or never stops answering, is cut off by
	// the call's time limit or the response size limit.
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/endless" {
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		<-r.Context().Done()
	}))
	defer stall.Close()
	limited := load(t, hostileGo(t), plugin.Options{Logger: quiet(), Grants: config.Grants{AllowedHosts: []string{"127.0.0.1"}},
		Limits: config.Limits{MemoryPages: 512, CallTimeout: 2 * time.Second}})
	start := time.Now()
	if _, err := callHTTP(t, limited, stall.URL+"/", ""); !errors.Is(err, plugin.ErrTimeout) {
		t.Errorf("silent host: err = %v, want ErrTimeout", err)
	}
	t.Logf("silent host cut off after %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if _, err := callHTTP(t, limited, stall.URL+"/endless", ""); !errors.Is(err, plugin.ErrTrap) && !errors.Is(err, plugin.ErrTimeout) {
		t.Errorf("endless body: err = %v, want the call stopped", err)
	}
	t.Logf("endless body cut off after %v", time.Since(start).Round(time.Millisecond))
	settled(t, limited, "stalled HTTP calls")

	// Outside plugin calls, http.DefaultClient keeps following redirects.
	resp, err := http.Get(front.URL + "/to-denied")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || deniedHits.Load() != 1 {
		t.Errorf("a request outside plugins: status %d, %d hits; want the redirect followed", resp.StatusCode, deniedHits.Load())
	}
}

func callHTTP(t *testing.T, p *plugin.Plugin, url, host string) (string, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"url": url, "host": host})
	got, _, err := callBounded(t, p, "http", string(args))
	return got, err
}

// heapInUse returns the Go heap in use and the resident set size after
// collecting garbage and returning free memory to the system.
func heapInUse() (heap, rss uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			rss = pages * uint64(os.Getpagesize())
		}
	}
	return ms.HeapInuse, rss
}

// TestHostileMemoryReturns runs rounds of hostile calls and checks that the
// memory of the instances they wreck is given back.
//
// RSS is the process's, so the test runs in a process of its own: in the
// package's run, what earlier tests left behind (their plugins, caches and
// goroutines) moves it by hundreds of MiB.
func TestHostileMemoryReturns(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	if !plugin.InOwnProcess(t, "TestHostileMemoryReturns") {
		return
	}
	limits := hostileLimits
	limits.CallTimeout = 300 * time.Millisecond
	goP := load(t, hostileGo(t), plugin.Options{Limits: limits, Logger: quiet()})
	stack := load(t, testutil.BuildHostileWAT(t, "stack"), plugin.Options{Logger: quiet()})
	calls := load(t, testutil.BuildHostileWAT(t, "hostcalls"), plugin.Options{Logger: quiet()})
	bomb := load(t, testutil.BuildWAT(t, "membomb"), plugin.Options{Limits: config.Limits{MemoryPages: 1024}, Logger: quiet()})
	round := func() {
		for _, c := range []struct {
			p          *plugin.Plugin
			tool, args string
		}{
			{goP, "alloc", `{"mb":4096}`},
			{goP, "panic", `{}`},
			{goP, "recurse", `{}`},
			{goP, "huge", `{"bytes":1310720}`},
			{goP, "huge", `{"bytes":134217728}`},
			{goP, "bad_utf8", `{}`},
			{goP, "spin", `{}`},
			{stack, "stack", `{}`},
			{calls, "user", `{}`},
			{calls, "t_output_len", `{}`},
			{bomb, "membomb", `{}`},
		} {
			c.p.CallTool(context.Background(), nil, c.tool, json.RawMessage(c.args))
		}
	}
	round() // warm up: runtimes, caches, first instances
	heap0, rss0 := heapInUse()
	const rounds = 3
	start := time.Now()
	for range rounds {
		round()
	}
	heap1, rss1 := heapInUse()
	t.Logf("%d rounds in %v; heap %d -> %d MiB, RSS %d -> %d MiB", rounds, time.Since(start).Round(time.Millisecond), heap0>>20, heap1>>20, rss0>>20, rss1>>20)
	for _, p := range []*plugin.Plugin{goP, stack, calls, bomb} {
		if inUse, idle := p.Stats(); inUse != 0 || idle > 1 {
			t.Errorf("%s: %d in use, %d idle", p.Name(), inUse, idle)
		}
	}
	// Each round wrecks instances whose memory reaches the 32 MiB cap; had
	// they not been freed, the heap would have grown by hundreds of MiB.
	const slack = 64 << 20
	if heap1 > heap0+slack {
		t.Errorf("Go heap grew by %d MiB over %d rounds of hostile calls", (heap1-heap0)>>20, rounds)
	}
	// Under the race detector RSS says nothing of this: it keeps the shadow
	// of the instances' memories (mapped outside the Go heap) after they
	// are unmapped, 440 -> 725 MiB over the rounds in make test's run. The
	// attack suite's 15.3 measures the binary built without it.
	rssSlack := uint64(2 * slack)
	if rss0 > 0 && rss1 > rss0+rssSlack && !raceEnabled() {
		t.Errorf("RSS grew by %d MiB over %d rounds of hostile calls", (rss1-rss0)>>20, rounds)
	}
}

func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// TestEndlessListing: a v1 plugin that pages forever, or sends a cursor
// back, does not hold Hangar: a listing's pages share one call timeout and
// one output limit, and a cursor may not come back.
func TestEndlessListing(t *testing.T) {
	pages := testutil.BuildHostileWAT(t, "pages")

	// Time: a page takes a few milliseconds; the listing stops at the call
	// timeout, not at a thousand of them.
	p := load(t, pages, plugin.Options{Limits: config.Limits{CallTimeout: 300 * time.Millisecond, MaxInstances: 1}, Logger: quiet()})
	start := time.Now()
	_, err := p.ListTools(context.Background(), nil)
	d := time.Since(start)
	t.Logf("endless pages: %v after %v", err, d.Round(time.Millisecond))
	if !errors.Is(err, plugin.ErrTimeout) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
	if d > 5*time.Second {
		t.Errorf("listing took %v for a call timeout of 300ms", d)
	}
	settled0(t, p)

	// Size: pages of about 80 bytes, an output limit of 1 KiB.
	p = load(t, pages, plugin.Options{Limits: config.Limits{MaxOutput: 1024, MaxInstances: 1}, Logger: quiet()})
	if _, err := p.ListTools(context.Background(), nil); !errors.Is(err, plugin.ErrOutputTooLarge) {
		t.Errorf("err = %v, want ErrOutputTooLarge", err)
	}
	settled0(t, p)

	// A cursor that comes back.
	mirror := testutil.BuildHostileWAT(t, "mirror_v1")
	p = load(t, mirror, plugin.Options{Logger: quiet(), Config: map[string]string{
		"out": `{"tools":[{"name":"t","inputSchema":{"type":"object"}}],"nextCursor":"again"}`,
	}})
	start = time.Now()
	if _, err := p.ListTools(context.Background(), nil); !errors.Is(err, plugin.ErrBadOutput) || !strings.Contains(err.Error(), "came back") {
		t.Errorf("err = %v, want a cursor that came back", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("listing took %v", d)
	}
}

// settled0 checks that no instance is left in use.
func settled0(t *testing.T, p *plugin.Plugin) {
	t.Helper()
	if inUse, _ := p.Stats(); inUse != 0 {
		t.Errorf("%d instances in use", inUse)
	}
}
