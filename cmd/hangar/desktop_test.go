package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// httpServer is a `hangar serve` process serving HTTP on 127.0.0.1.
type httpServer struct {
	cmd  *exec.Cmd
	url  string
	logs *testutil.SyncBuffer // its stderr, line by line
}

// startHTTP runs hangar with args, which must make it serve HTTP on
// 127.0.0.1 (port 0), and waits for the URL it logs.
func startHTTP(t *testing.T, args ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(hangar, args...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &httpServer{cmd: cmd, logs: new(testutil.SyncBuffer)}
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.logs.Write([]byte(sc.Text() + "\n"))
			if u := urlRE.FindString(sc.Text()); u != "" {
				select {
				case found <- u:
				default:
				}
			}
		}
	}()
	select {
	case s.url = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatalf("hangar did not log its URL:\n%s", s.logs.String())
	}
	return s
}

// stop sends SIGTERM and waits for the process to exit.
func (s *httpServer) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, s.logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("hangar did not stop on SIGTERM:\n%s", s.logs.String())
	}
}

// infoRecords returns the records of logs at info level.
func infoRecords(logs string) []string {
	var out []string
	for l := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(l, " level=INFO ") {
			out = append(out, l)
		}
	}
	return out
}

// TestInfoQuietPerSession: at the default level, sessions coming and going
// over HTTP (initialize, list, call, set the log level, delete), 2026-07-28
// clients doing the same without sessions, and a whole stdio session add
// no record at info; at debug level they do, so the test sees what it
// would miss.
func TestInfoQuietPerSession(t *testing.T) {
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	ctx := context.Background()
	sessions := func(url string) {
		for range 3 {
			modern, err := mcp.NewClient(&mcp.Implementation{Name: "quiet-test", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := modern.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}}); err != nil {
				t.Fatal(err)
			}
			modern.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "quiet-test", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}}); err != nil {
				t.Fatal(err)
			}
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
			cs.Close()
		}
	}
	for _, level := range []string{"info", "debug"} {
		s := startHTTP(t, "serve", "--log-level", level, "--http", "127.0.0.1:0", legacy)
		// Start-up goes on after serving begins (the plugin compiles in
		// the background): count from "ready".
		for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(s.logs.String(), "msg=ready"); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not ready after 3 minutes:\n%s", s.logs.String())
			}
		}
		before := len(infoRecords(s.logs.String()))
		sessions(s.url)
		time.Sleep(200 * time.Millisecond) // records of the last session's end
		after := s.logs.String()
		s.stop(t)
		perSession := infoRecords(after)[before:]
		debugSession := strings.Contains(after, "level=DEBUG") && strings.Contains(after, "session")
		switch level {
		case "info":
			if len(perSession) > 0 {
				t.Errorf("info records while sessions came and went:\n%s", strings.Join(perSession, "\n"))
			}
		case "debug":
			if !debugSession {
				t.Errorf("no debug record of the sessions at --log-level debug; the test would miss them:\n%s", after)
			}
		}
	}

	// stdio: one session, start to end.
	cmd := exec.Command(hangar, "serve", legacy)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	var logs testutil.SyncBuffer
	cmd.Stderr = &logs
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "quiet-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	// Only the start's records: the plugin listed, compiled, ready.
	// "compiled on its first call" is the start's record too, at info only
	// when the compile was slow (a busy machine: CI saw one of 1 s).
	startup := regexp.MustCompile(`msg=("plugins listed; serving"|"compiling plugins"|compiled|"compiled into the cache"|"compiled on its first call"|ready) `)
	for _, r := range infoRecords(logs.String()) {
		if !startup.MatchString(r) {
			t.Errorf("info record of a stdio session: %s", r)
		}
	}
}

// TestVersion: hangar version and --version print the module version and,
// when go build recorded them, the VCS revision and whether the checkout was
// modified, as go version -m reads them from the binary. (go build records
// none in a linked git worktree, go.dev/issue/58218; the formatting of each
// case is tested in internal/cli.)
func TestVersion(t *testing.T) {
	out, errOut, code := run(t, "version")
	if code != 0 {
		t.Fatalf("version: exit %d, %s", code, errOut)
	}
	if out2, _, _ := run(t, "--version"); out2 != out {
		t.Errorf("--version = %q, version = %q", out2, out)
	}
	m, err := exec.Command("go", "version", "-m", hangar).Output()
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	var mainVersion string
	for l := range strings.SplitSeq(string(m), "\n") {
		f := strings.Split(strings.TrimSpace(l), "\t")
		switch {
		case len(f) >= 2 && f[0] == "build":
			k, v, _ := strings.Cut(f[1], "=")
			settings[k] = v
		case len(f) >= 3 && f[0] == "mod":
			mainVersion = f[2]
		}
	}
	want := "hangar " + mainVersion
	if rev := settings["vcs.revision"]; rev != "" {
		want += " revision " + rev
		if settings["vcs.modified"] == "true" {
			want += " (modified)"
		}
	}
	if !strings.HasPrefix(out, want+" go1.") || strings.Count(out, "\n") != 1 {
		t.Errorf("version = %q, want %q followed by the Go version and platform (go version -m: %v)", out, want, settings)
	}
	t.Logf("%s", out)
}

// exampleConfig copies examples/hangar.yaml, unchanged, into a temporary
// directory, and builds each example plugin it names at the path it names
// (./hello/hello.wasm is ./examples/hello). It returns the copy's path.
func exampleConfig(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.Root(), "examples", "hangar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Plugins []struct{ Path string }
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, p := range doc.Plugins {
		pkg := filepath.Dir(filepath.Clean(p.Path))
		wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./examples/"+pkg))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, pkg), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p.Path), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "hangar.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// useExamples lists the tools of the session and calls one of each example
// plugin, as configured in examples/hangar.yaml.
func useExamples(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if got := strings.Join(names, ","); got != "add_note,base64,delete_note,greet,hash,uuid" {
		t.Errorf("tools = %s", got)
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			var text []string
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text = append(text, tc.Text)
				}
			}
			t.Fatalf("%s: tool error %q", name, text)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := call("greet", map[string]any{"name": "Ada"}); got != "Welcome, Ada!" {
		t.Errorf("greet = %q, want the configured greeting", got)
	}
	call("add_note", map[string]any{"title": "t", "text": "remember"})
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://list"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "t") {
		t.Errorf("notes://list = %+v, %v", rr, err)
	}
}

// TestExampleConfigServes: examples/hangar.yaml, as written, serves the
// example plugins over stdio, and over HTTP with --http.
func TestExampleConfigServes(t *testing.T) {
	cfg := exampleConfig(t)
	ctx := context.Background()

	cmd := exec.Command(hangar, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	var logs testutil.SyncBuffer
	cmd.Stderr = &logs
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("stdio: %v\n%s", err, logs.String())
	}
	useExamples(t, cs)
	cs.Close()

	s := startHTTP(t, "serve", "--config", cfg, "--http", "127.0.0.1:0")
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "example-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	useExamples(t, cs)
	cs.Close()
	s.stop(t)
	if entries, _ := os.ReadDir(filepath.Dir(cfg)); len(entries) != 3 {
		t.Errorf("serving examples/hangar.yaml wrote beside it: %v", entries)
	}
}

// TestClientConfig: client-config prints each client's entry, in its
// format, with absolute paths, --stdio, and an env block holding each
// ${VAR} of the configuration (this environment's value, or a placeholder);
// hangar started without a variable, or with its placeholder, says which
// and how to set it.
func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "legacy.wasm"), mustReadFile(t, testutil.BuildPlugin(t, "./internal/testplugins/legacy")), 0o644)
	body := `http:
  addr: 127.0.0.1:0
plugins:
  - name: legacy
    path: legacy.wasm
    grants:
      env:
        TOKEN: ${HANGAR_CC_SET}
        BOTH: "${HANGAR_CC_SET}-${HANGAR_CC_UNSET}"
`
	os.WriteFile(filepath.Join(dir, "desk.yaml"), []byte(body), 0o644)
	clientConfig := func(env []string, args ...string) (map[string]map[string]map[string]any, string, int) {
		t.Helper()
		cmd := exec.Command(hangar, append([]string{"client-config"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var o, e testutil.SyncBuffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var doc map[string]map[string]map[string]any
		if code == 0 {
			if err := json.Unmarshal([]byte(o.String()), &doc); err != nil {
				t.Fatalf("client-config %v: %v\n%s", args, err, o.String())
			}
		}
		return doc, e.String(), code
	}
	cfgPath := filepath.Join(dir, "desk.yaml")
	placeholder := "<value of HANGAR_CC_UNSET>"
	for _, tc := range []struct{ client, key, typ string }{
		{"claude", "mcpServers", ""},
		{"cursor", "mcpServers", ""},
		{"vscode", "servers", "stdio"},
		{"windsurf", "mcpServers", ""},
	} {
		doc, errOut, code := clientConfig([]string{"HANGAR_CC_SET=s3cret"}, tc.client, "--config", "desk.yaml")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.client, code, errOut)
		}
		entry := doc[tc.key]["hangar"]
		if len(doc) != 1 || entry == nil {
			t.Fatalf("%s: %v, want one entry under %s", tc.client, doc, tc.key)
		}
		want := map[string]any{
			"command": hangar,
			"args":    []any{"serve", "--stdio", "--config", cfgPath},
			"env":     map[string]any{"HANGAR_CC_SET": "s3cret", "HANGAR_CC_UNSET": placeholder},
		}
		if tc.typ != "" {
			want["type"] = tc.typ
		}
		if !reflect.DeepEqual(entry, want) {
			t.Errorf("%s entry:\n got %v\nwant %v", tc.client, entry, want)
		}
		for _, note := range []string{"env HANGAR_CC_SET: the value set in this environment", `env HANGAR_CC_UNSET: not set here: replace "` + placeholder + `"`, `under "` + tc.key + `"`} {
			if !strings.Contains(errOut, note) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.client, note, errOut)
			}
		}
	}
	doc, errOut, _ := clientConfig([]string{"HANGAR_CC_SET=s3cret"}, "claude", "--config", "desk.yaml", "--placeholders", "--name", "tools", "--command", "bin/hangar")
	if e := doc["mcpServers"]["tools"]; e["command"] != filepath.Join(dir, "bin/hangar") || !reflect.DeepEqual(e["env"], map[string]any{"HANGAR_CC_SET": "<value of HANGAR_CC_SET>", "HANGAR_CC_UNSET": placeholder}) {
		t.Errorf("--placeholders --name --command: %v", doc)
	}
	// A variable that is set is not said to be unset because
	// --placeholders left its value out.
	for _, note := range []string{
		`env HANGAR_CC_SET: set here, but --placeholders writes a placeholder: replace "<value of HANGAR_CC_SET>" with its value`,
		`env HANGAR_CC_UNSET: not set here: replace "` + placeholder + `" with its value`,
	} {
		if !strings.Contains(errOut, note) {
			t.Errorf("--placeholders: stderr lacks %q:\n%s", note, errOut)
		}
	}
	for _, args := range [][]string{{"emacs", "--config", "desk.yaml"}, {"claude"}, {"claude", "cursor", "--config", "desk.yaml"}} {
		if _, errOut, code := clientConfig(nil, args...); code != 2 {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if _, errOut, code := clientConfig(nil, "claude", "--config", "missing.yaml"); code != 1 || !strings.Contains(errOut, "missing.yaml") {
		t.Errorf("missing configuration: exit %d, %s", code, errOut)
	}

	// Started the way a desktop client starts it, with a minimal
	// environment and the entry's env block: a variable left out, or its
	// placeholder left in, stops hangar with a message naming it.
	minimal := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for _, tc := range []struct {
		env  []string
		want []string
	}{
		{[]string{"HANGAR_CC_SET=s3cret"}, []string{
			"environment variable HANGAR_CC_UNSET is not set",
			"hint: hangar needs the environment variable HANGAR_CC_UNSET.",
			`set
it in the "env" block of hangar's entry in the client's configuration`,
		}},
		{[]string{"HANGAR_CC_SET=s3cret", "HANGAR_CC_UNSET=" + placeholder}, []string{
			`environment variable HANGAR_CC_UNSET holds the placeholder "<value of HANGAR_CC_UNSET>": replace it with the value`,
			"hint: hangar needs the environment variable HANGAR_CC_UNSET.",
		}},
		{nil, []string{"hint: hangar needs the environment variables HANGAR_CC_SET, HANGAR_CC_UNSET."}},
	} {
		cmd := exec.Command(hangar, "serve", "--stdio", "--config", cfgPath)
		cmd.Env = append(minimal, tc.env...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("env %v: %v\n%s", tc.env, err, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("env %v: output lacks %q:\n%s", tc.env, w, out)
			}
		}
	}
}

// TestStdinWhileServingHTTP: a client that starts hangar over stdio with a
// configuration that sets http.addr, and forgets --stdio, gets an error
// answer to its initialize request that says what to do, instead of
// waiting for an answer that never comes; hangar goes on serving HTTP.
func TestStdinWhileServingHTTP(t *testing.T) {
	cfg := writeConfig(t, "http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: p, path: "+testutil.BuildPlugin(t, "./internal/testplugins/legacy")+"}\n")
	cmd := exec.Command(hangar, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	var logs testutil.SyncBuffer
	cmd.Stderr = &logs
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err == nil || !regexp.MustCompile(`serving MCP over HTTP at 127\.0\.0\.1:\d+ \(http\.addr in `+regexp.QuoteMeta(cfg)+`\), not over stdio: add "--stdio"`).MatchString(err.Error()) {
		t.Fatalf("connect over stdio to a server of HTTP: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="an MCP request arrived on stdin while serving HTTP: answered with an error" method=`) {
		t.Errorf("not logged:\n%s", logs.String())
	}
	if !regexp.MustCompile(`url=http://127\.0\.0\.1:\d+/mcp`).MatchString(logs.String()) {
		t.Errorf("not serving HTTP:\n%s", logs.String())
	}

	// With --stdio, the same configuration serves the client.
	cmd = exec.Command(hangar, "serve", "--stdio", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "ab"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "ba" {
		t.Errorf("reverse = %+v, %v", res, err)
	}
	cs.Close()
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
