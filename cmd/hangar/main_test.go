package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// hangar is the binary under test, built once by TestMain.
var hangar string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hangar-bin-")
	if err != nil {
		panic(err)
	}
	hangar = filepath.Join(dir, "hangar")
	if out, err := exec.Command("go", "build", "-o", hangar, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building hangar: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	testutil.Cleanup()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs hangar with args and returns its stdout, stderr and exit code.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(hangar, args...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestHelp(t *testing.T) {
	out, _, code := run(t, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range []string{"serve", "inspect", "call", "version"} {
		if !strings.Contains(out, "  "+c+" ") {
			t.Errorf("help does not list %s:\n%s", c, out)
		}
	}
	for cmd, flags := range map[string][]string{
		"serve":   {"-config", "-http", "-stdio", "-cache-dir", "-log-level"},
		"inspect": {"-json", "-set"},
		"call":    {"-json", "-set"},
	} {
		out, _, code := run(t, cmd, "--help")
		if code != 0 {
			t.Errorf("%s --help: exit %d", cmd, code)
		}
		for _, f := range flags {
			if !strings.Contains(out, f) {
				t.Errorf("%s --help does not describe %s", cmd, f)
			}
		}
	}
	if _, errOut, code := run(t, "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
}

func TestInspectAndCall(t *testing.T) {
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	out, errOut, code := run(t, "inspect", legacy)
	if code != 0 || !strings.Contains(out, "interface: legacy") || !strings.Contains(out, "reverse - Reverses a string") {
		t.Errorf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = run(t, "call", legacy, "reverse", `{"text":"abc"}`)
	if code != 0 || out != "cba\n" {
		t.Errorf("call reverse: exit %d, %q", code, out)
	}
	_, errOut, code = run(t, "call", legacy, "fail")
	if code != 1 || !strings.Contains(errOut, "requested failure") {
		t.Errorf("call fail: exit %d, %q", code, errOut)
	}
	_, errOut, code = run(t, "call", legacy, "reverse", `[1]`)
	if code != 1 || !strings.Contains(errOut, "must be a JSON object") {
		t.Errorf("call with bad arguments: exit %d, %q", code, errOut)
	}
}

// TestCallAppOnlyTool: hangar call reaches a tool that only a plugin's
// views may call (MCP Apps), which Hangar hides from clients that show no
// views, and inspect lists it.
func TestCallAppOnlyTool(t *testing.T) {
	dash := testutil.BuildPlugin(t, "./examples/dashboard")
	out, errOut, code := run(t, "call", dash, "dashboard_data")
	if code != 0 || !strings.Contains(out, "services") {
		t.Errorf("call dashboard_data: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "inspect", dash)
	if code != 0 || !strings.Contains(out, "dashboard_data") {
		t.Errorf("inspect: exit %d\n%s%s", code, out, errOut)
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hangar.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServeRejectsBadConfig(t *testing.T) {
	cfg := writeConfig(t, "plugins:\n  - name: a\n    pathh: x.wasm\n")
	_, errOut, code := run(t, "serve", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, "hangar.yaml:3:5") || !strings.Contains(errOut, `did you mean "path"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}

	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	cfg = writeConfig(t, fmt.Sprintf("plugins:\n  - {name: one, path: %s}\n  - {name: two, path: %s}\n", legacy, legacy))
	_, errOut, code = run(t, "serve", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, `tool "reverse" is offered by two plugins "one" and "two"`) {
		t.Errorf("conflict: exit %d, stderr %q", code, errOut)
	}
}

// TestServeStdio runs `hangar serve` as a child process speaking MCP on its
// stdin and stdout, with plugins of all three interfaces, and bridges a
// sampling request back to this client.
func TestServeStdio(t *testing.T) {
	cfg := writeConfig(t, fmt.Sprintf(`plugins:
  - name: legacy
    path: %s
  - name: servlet
    path: %s
    prefix: s
    config: {suffix: "?"}
  - name: conformance
    path: %s
    limits: {call_timeout: 5m} # a first call waits for its plugin's compile this long (CI, at load 22: more than 30s)
`, testutil.BuildPlugin(t, "./internal/testplugins/legacy"),
		testutil.BuildPlugin(t, "./internal/testplugins/servlet"),
		testutil.BuildPlugin(t, "./examples/conformance")))

	cmd := exec.Command(hangar, "serve", "--config", cfg, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "over stdio"}}, nil
		},
	})
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for name, want := range map[string]struct {
		args any
		text string
	}{
		"reverse":       {map[string]any{"text": "stdio"}, "oidts"},
		"s_lookup":      {map[string]any{"key": "alpha"}, "one?"},
		"test_sampling": {map[string]any{"prompt": "hi"}, "LLM response: over stdio"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: want.args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != want.text || res.IsError {
			t.Errorf("%s = %q (isError %v), want %q", name, got, res.IsError, want.text)
		}
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "s+servlet://greeting"})
	if err != nil || rr.Contents[0].Text != "hello from servlet" {
		t.Errorf("read s+servlet://greeting = %+v, %v", rr, err)
	}
}

// TestServeHTTP starts `hangar serve --http 127.0.0.1:0`, reads the URL it
// logs, serves a client, and stops gracefully on SIGTERM.
func TestServeHTTP(t *testing.T) {
	cmd := exec.Command(hangar, "serve", "--http", "127.0.0.1:0", testutil.BuildPlugin(t, "./internal/testplugins/legacy"))
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u := urlRE.FindString(sc.Text()); u != "" {
				found <- u
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var url string
	select {
	case url = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("hangar did not log its URL")
	}

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 40}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "42" {
		t.Errorf("add = %+v, %v", res, err)
	}
	cs.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("hangar did not stop on SIGTERM")
	}
}

// TestServeReload edits the configuration under a connected stdio client:
// the change is picked up without dropping the session, a broken file
// leaves the old plugins serving, and SIGHUP reloads too.
func TestServeReload(t *testing.T) {
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	servlet := testutil.BuildPlugin(t, "./internal/testplugins/servlet")
	cfg := writeConfig(t, "plugins:\n  - {name: p, path: "+legacy+"}\n")

	cmd := exec.Command(hangar, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	var logs testutil.SyncBuffer
	cmd.Stderr = &logs
	changed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx := context.Background()
	// A session of 2025-11-25, which is told of list changes; at
	// 2026-07-28 a client listens for them (TestClients2026).
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools := func() string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return strings.Join(names, ",")
	}
	waitChanged := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(2 * time.Minute): // a compilation, on a busy machine
			t.Fatalf("no tools/list_changed after %s; log:\n%s", what, logs.String())
		}
	}
	if got := tools(); got != "add,fail,reverse" {
		t.Fatalf("tools = %s", got)
	}

	if err := os.WriteFile(cfg, []byte("plugins:\n  - {name: p, path: "+servlet+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitChanged("editing the file")
	if got := tools(); got != "lookup" {
		t.Errorf("tools after edit = %s", got)
	}

	if err := os.WriteFile(cfg, []byte("plugins:\n  - {name: p, pth: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), "reload failed") {
		if time.Now().After(deadline) {
			t.Fatalf("a broken file was not reported; log:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := tools(); got != "lookup" {
		t.Errorf("tools after a broken edit = %s", got)
	}

	// Back to the first file, announced with SIGHUP. A reload that swaps
	// tools may notify more than once (the SDK coalesces notifications
	// only within 10ms): forget those of the first edit.
	for len(changed) > 0 {
		<-changed
	}
	if err := os.WriteFile(cfg, []byte("plugins:\n  - {name: p, path: "+legacy+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitChanged("SIGHUP")
	for deadline := time.Now().Add(time.Minute); tools() != "add,fail,reverse"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tools after SIGHUP = %s; log:\n%s", tools(), logs.String())
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "hup"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "puh" {
		t.Errorf("reverse after SIGHUP = %+v, %v", res, err)
	}
}

// TestServeDrainsOnSIGTERM stops an HTTP server with SIGTERM during eight
// calls of 3 s and one of two minutes: the eight finish, the long one is
// answered with an error at the drain timeout, a call made during the
// drain gets an error, and hangar exits.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	flood := testutil.BuildPlugin(t, "./internal/testplugins/flood")
	cfg := writeConfig(t, "http:\n  addr: 127.0.0.1:0\n  drain_timeout: 10s\nplugins:\n  - name: flood\n    path: "+flood+"\n    limits: {max_instances: 9, call_timeout: 5m}\n")
	cmd := exec.Command(hangar, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var logs testutil.SyncBuffer
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if u := urlRE.FindString(sc.Text()); u != "" {
				select {
				case found <- u:
				default:
				}
			}
		}
	}()
	var url string
	select {
	case url = <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("hangar did not log its URL")
	}

	ctx := context.Background()
	started := make(chan any, 16)
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "drain-test", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				started <- req.Params.ProgressToken
			},
		}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	type result struct {
		text string
		err  error
	}
	results := make(chan result, 9)
	for i := range 9 {
		cs := connect()
		ms := 3000
		if i == 8 {
			ms = 120000
		}
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{
				Name: "sleep_ms", Arguments: map[string]any{"ms": ms},
				Meta: mcp.Meta{"progressToken": fmt.Sprint("call", i)},
			})
			if err != nil {
				results <- result{err: err}
				return
			}
			results <- result{text: res.Content[0].(*mcp.TextContent).Text}
		}()
	}
	late := connect()
	for range 9 {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatalf("the calls did not start; log:\n%s", logs.String())
		}
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "letting calls in progress finish") {
		if time.Now().After(deadline) {
			t.Fatalf("no drain in the log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := late.CallTool(ctx, &mcp.CallToolParams{Name: "sleep_ms", Arguments: map[string]any{"ms": 1}}); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("call during the drain: err = %v, want a shutting-down error", err)
	}

	finished, cancelled := 0, 0
	for range 9 {
		select {
		case r := <-results:
			switch {
			case r.err == nil && r.text == "slept 3000ms":
				finished++
			case r.err != nil && strings.Contains(r.err.Error(), "drain timeout"):
				cancelled++
			default:
				t.Errorf("call: %q, %v", r.text, r.err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("a call got no answer; log:\n%s", logs.String())
		}
	}
	t.Logf("SIGTERM during 9 calls: %d finished, %d answered with an error at the drain timeout (%v after SIGTERM)", finished, cancelled, time.Since(start).Round(time.Millisecond))
	if finished != 8 || cancelled != 1 {
		t.Errorf("finished %d, cancelled %d; want 8, 1", finished, cancelled)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hangar did not stop after the drain")
	}
}

// TestServeConnectionCap: with http.max_connections, connections beyond the
// cap wait to be served; once others close, they are.
func TestServeConnectionCap(t *testing.T) {
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	cfg := writeConfig(t, "http:\n  addr: 127.0.0.1:0\n  max_connections: 3\n  read_header_timeout: 1m\nplugins:\n  - {name: p, path: "+legacy+"}\n")
	cmd := exec.Command(hangar, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	urlRE := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var addr string
	select {
	case addr = <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("hangar did not log its URL")
	}
	get := func(timeout time.Duration) error {
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + "/nothing")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(30 * time.Second); err != nil {
		t.Fatalf("before the cap: %v", err)
	}
	// Three connections that send nothing take every place.
	var idle []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	time.Sleep(500 * time.Millisecond) // let the server accept them
	if err := get(2 * time.Second); err == nil {
		t.Fatal("a fourth connection was served beyond max_connections: 3")
	}
	for _, c := range idle {
		c.Close()
	}
	if err := get(30 * time.Second); err != nil {
		t.Fatalf("after the idle connections closed: %v", err)
	}
}
