package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// authorEnv is the environment of the commands a plugin author runs: Go's
// build cache kept (a fresh one would rebuild everything), Hangar's
// compilation cache fresh, and extra entries (PATH=..., GOBIN=...) last.
func authorEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOCACHE="+strings.TrimSpace(string(gocache)), "XDG_CACHE_HOME="+t.TempDir())
	return append(env, extra...)
}

// shell runs a command line with bash in dir and returns its output; it
// fails t unless the command succeeds.
func shell(t *testing.T, dir string, env []string, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("in %s: %s: %v\n%s", dir, line, err, out.String())
	}
	return out.String()
}

// checkServed runs `hangar serve` with args in dir as a desktop client
// would, over stdio, and calls the scaffold's tool, prompt and resource.
func checkServed(t *testing.T, hangarBin, dir string, env []string, name, greeting string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(hangarBin, append([]string{"serve"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "authors-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("hangar serve %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "greet" {
		t.Fatalf("tools: %v, %v", tools, err)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	if !strings.Contains(string(schema), `"required":["name"]`) || !strings.Contains(string(schema), `"additionalProperties":false`) {
		t.Errorf("greet's input schema: %s", schema)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(res.StructuredContent); res.IsError || string(got) != `{"greeting":"`+greeting+`, Ada."}` {
		t.Errorf("greet: isError %v, structured content %s, content %v", res.IsError, got, res.Content)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
	if err != nil || !res.IsError {
		t.Errorf("greet without a name: %v, %v", res, err)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "welcome", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || !strings.Contains(p.Messages[0].Content.(*mcp.TextContent).Text, "Ada") {
		t.Errorf("prompt welcome: %v, %v", p, err)
	}
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://" + name + "/about"})
	if err != nil || len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, name) {
		t.Errorf("resource docs://%s/about: %v, %v", name, r, err)
	}
}

// TestNew scaffolds a plugin with hangar new, builds it with its Makefile,
// runs its test, and serves it with hangar serve to an MCP client, with the
// configuration its README shows.
func TestNew(t *testing.T) {
	root := testutil.Root()
	dir := filepath.Join(t.TempDir(), "scaffolded")
	env := authorEnv(t)
	out, errOut, code := run(t, "new", "--hangar-dir", root, "greeter", dir)
	if code != 0 {
		t.Fatalf("hangar new: exit %d\n%s%s", code, out, errOut)
	}
	mod := string(mustRead(t, filepath.Join(dir, "go.mod")))
	for _, want := range []string{"module greeter\n", "replace github.com/hangar-mcp/hangar => " + root, "github.com/extism/go-pdk v1.1.3"} {
		if !strings.Contains(mod, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, mod)
		}
	}
	if _, _, code := run(t, "new", "greeter", dir); code != 1 {
		t.Errorf("hangar new into the scaffold again: exit %d", code)
	}

	shell(t, dir, env, "make")
	if fi, err := os.Stat(filepath.Join(dir, "greeter.wasm")); err != nil || fi.Size() == 0 {
		t.Fatalf("make built no greeter.wasm: %v", err)
	}
	if out := shell(t, dir, env, "go test -count=1 ./..."); !strings.Contains(out, "ok") {
		t.Errorf("go test: %s", out)
	}
	if out := shell(t, dir, env, "go vet ./... && GOOS=wasip1 GOARCH=wasm go vet ./..."); out != "" {
		t.Errorf("go vet: %s", out)
	}

	// The configuration the scaffold's README shows, beside the module.
	readme := string(mustRead(t, filepath.Join(dir, "README.md")))
	yml := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(readme)
	if yml == nil {
		t.Fatalf("the scaffold's README has no yaml block:\n%s", readme)
	}
	if err := os.WriteFile(filepath.Join(dir, "hangar.yaml"), []byte(yml[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := shell(t, dir, env, hangar+` call --config hangar.yaml --plugin greeter greet '{"name":"Ada"}'`); strings.TrimSpace(out) != `{"greeting":"Hi, Ada."}` {
		t.Errorf("call with the README's configuration: %q", out)
	}
	checkServed(t, hangar, dir, env, "greeter", "Hi", "--config", "hangar.yaml")
	checkServed(t, hangar, dir, env, "greeter", "Hello", "greeter.wasm")
}

// TestCallValidatesLikeServe checks that call refuses the arguments a
// client of serve is refused, with the server's message: call goes through
// the server's tool handler. (It used to call examples/hello's greet with
// {} successfully.)
func TestCallValidatesLikeServe(t *testing.T) {
	hello := testutil.BuildPlugin(t, "./examples/hello")
	cache := t.TempDir() // one compilation for all the commands
	for args, want := range map[string]string{
		`{}`:          `invalid arguments for tool "greet": missing required argument "name"`,
		`{"name": 7}`: `invalid arguments for tool "greet": name: expected a string, got the number 7`,
	} {
		out, errOut, code := run(t, "call", "--cache-dir", cache, hello, "greet", args)
		if code != 1 || out != "" || strings.TrimSpace(errOut) != want {
			t.Errorf("call greet %s: exit %d, stdout %q, stderr %q\nwant exit 1 and stderr %q", args, code, out, errOut, want)
		}
	}
	out, errOut, code := run(t, "call", "--cache-dir", cache, "--json", hello, "greet", `{}`)
	if code != 1 || !strings.Contains(out, `"isError": true`) || !strings.Contains(out, `missing required argument \"name\"`) {
		t.Errorf("call --json greet {}: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := run(t, "call", "--cache-dir", cache, hello, "greet", `{"name": "Ada"}`); code != 0 || out != "Hello, Ada!\n" {
		t.Errorf("call greet: exit %d, %q %q", code, out, errOut)
	}
}

// writeFile writes body to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCallWithConfig checks that the config values, grants and limits of
// the --config entry apply to call, and that they do not without it; then
// the same for inspect. (It runs the binary: in-process, under -race, a
// compilation takes a minute.)
func TestCallWithConfig(t *testing.T) {
	cache := t.TempDir() // one compilation per module, not per command
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/typed")
	dir := t.TempDir()
	writeFile(t, dir, "note.txt", "from the grant")
	cfg := writeFile(t, dir, "hangar.yaml", fmt.Sprintf(`plugins:
  - name: typed
    path: %s
    prefix: ty
    config: {greeting: Ahoy}
    grants:
      allowed_paths: [{host: ., guest: /data, read_only: true}]
    limits:
      call_timeout: 1s
  - name: other
    path: %[1]s
    prefix: ot
`, wasm))
	with := []string{"call", "--cache-dir", cache, "--config", cfg, "--plugin", "typed"}

	out, errOut, code := run(t, append(with, "read_file", `{"path":"/data/note.txt"}`)...)
	if code != 0 || strings.TrimSpace(out) != `{"text":"from the grant"}` {
		t.Errorf("read_file with the grant: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := run(t, "call", "--cache-dir", cache, wasm, "read_file", `{"path":"/data/note.txt"}`); code != 1 || errOut == "" {
		t.Errorf("read_file without the grant: exit %d, %q", code, errOut)
	}

	out, errOut, code = run(t, append(with, "greet", `{"name":"Ada"}`)...)
	if code != 0 || strings.TrimSpace(out) != `{"greeting":"Ahoy, Ada."}` {
		t.Errorf("greet with config: exit %d, %q %q", code, out, errOut)
	}
	out, errOut, code = run(t, append(with, "--set", "greeting=Yo", "greet", `{"name":"Ada"}`)...)
	if code != 0 || strings.TrimSpace(out) != `{"greeting":"Yo, Ada."}` {
		t.Errorf("greet with --set over config: exit %d, %q %q", code, out, errOut)
	}

	start := time.Now()
	_, errOut, code = run(t, append(with, "spin")...)
	if code != 1 || !strings.Contains(errOut, "1s") {
		t.Errorf("spin with call_timeout 1s: exit %d, %q", code, errOut)
	}
	if took := time.Since(start); took > 25*time.Second {
		t.Errorf("spin with call_timeout 1s took %v; the default limit (30s) seems to apply", took)
	}

	if _, errOut, code := run(t, append(with, "add", `{"a":"x","b":1}`)...); code != 1 || !strings.Contains(errOut, `invalid arguments for tool "add"`) {
		t.Errorf("add with a bad argument: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, append(with, "ty_add", `{"a":1,"b":1}`)...); code != 1 || !strings.Contains(errOut, `unknown tool "ty_add"`) {
		t.Errorf("a prefixed name: exit %d, %q; want the plugin's own names", code, errOut)
	}

	if _, errOut, code := run(t, "call", "--config", cfg, "add"); code != 1 || !strings.Contains(errOut, "configures 2 plugins (typed, other): choose one with --plugin NAME") {
		t.Errorf("two plugins, no --plugin: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, "call", "--config", cfg, "--plugin", "nope", "add"); code != 1 || !strings.Contains(errOut, `configures no plugin named "nope"; its plugins are typed, other`) {
		t.Errorf("unknown --plugin: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, "call", "--plugin", "typed", wasm, "add"); code != 2 || !strings.Contains(errOut, "--plugin needs --config") {
		t.Errorf("--plugin without --config: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "hangar.lock")); !os.IsNotExist(err) {
		t.Errorf("call --config wrote hangar.lock for file plugins: %v", err)
	}

	checkInspectWithConfig(t, wasm, cache)

	// One plugin: --plugin may be left out.
	one := writeFile(t, t.TempDir(), "one.yaml", fmt.Sprintf("plugins:\n  - {name: solo, path: %s}\n", wasm))
	if out, errOut, code := run(t, "call", "--cache-dir", cache, "--config", one, "add", `{"a":1,"b":2}`); code != 0 || strings.TrimSpace(out) != `{"sum":3}` {
		t.Errorf("the only plugin: exit %d, %q %q", code, out, errOut)
	}
}

// checkInspectWithConfig checks that inspect loads the --config entry with
// its limits, and shows its prefix.
func checkInspectWithConfig(t *testing.T, wasm, cache string) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "hangar.yaml", fmt.Sprintf(`plugins:
  - name: typed
    path: %s
    prefix: ty
  - name: tiny
    path: %[1]s
    limits: {memory: 128KiB}
`, wasm))
	out, errOut, code := run(t, "inspect", "--cache-dir", cache, "--config", cfg, "--plugin", "typed")
	if code != 0 || !strings.Contains(out, "plugin:    typed\nprefix:    ty (clients see tools and prompts as ty_NAME, URIs as ty+URI)") ||
		!strings.Contains(out, "  add - Add two numbers.\n      arguments: a: number, b: number") {
		t.Errorf("inspect --config: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "inspect", "--cache-dir", cache, "--json", "--config", cfg, "--plugin", "typed")
	var in struct {
		Prefix string            `json:"prefix"`
		Tools  []json.RawMessage `json:"tools"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in.Prefix != "ty" || len(in.Tools) == 0 {
		t.Errorf("inspect --json --config: exit %d, %+v\n%s%s", code, in, out, errOut)
	}
	// The entry's memory limit applies: a Go plugin does not start in 128KiB.
	if _, errOut, code := run(t, "inspect", "--cache-dir", cache, "--config", cfg, "--plugin", "tiny"); code != 1 || !strings.Contains(errOut, "memory") {
		t.Errorf("inspect with a 128KiB memory limit: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, "inspect", "--config", cfg, "--plugin", "typed", wasm); code != 2 || !strings.Contains(errOut, "Usage: hangar inspect") {
		t.Errorf("inspect --config with a .wasm file too: exit %d, %q", code, errOut)
	}
}

// readmeSection returns the section of README.md with the given heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme := string(mustRead(t, filepath.Join(testutil.Root(), "README.md")))
	_, rest, ok := strings.Cut(readme, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return section
}

type block struct{ lang, body string }

func fencedBlocks(s string) []block {
	var blocks []block
	for _, m := range regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```").FindAllStringSubmatch(s, -1) {
		blocks = append(blocks, block{m[1], m[2]})
	}
	return blocks
}

// TestReadmeWritePlugin follows the README's "Write a plugin in 5 minutes"
// command by command: a block whose first line says "in this checkout" runs
// in the repository (with GOBIN and PATH pointing at a temporary bin), the
// others in a fresh directory, where cd moves. "hangar serve" is run as a
// desktop client runs it, with an MCP client over stdio. JSON blocks must be
// client configurations that run hangar serve on a .wasm file.
func TestReadmeWritePlugin(t *testing.T) {
	root := testutil.Root()
	bin := filepath.Join(t.TempDir(), "bin")
	work := t.TempDir()
	env := authorEnv(t, "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var ran []string
	name := ""
	dir := work
	for _, b := range fencedBlocks(readmeSection(t, "Write a plugin in 5 minutes")) {
		switch b.lang {
		case "json":
			var cfg struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(b.body), &cfg); err != nil || len(cfg.MCPServers) == 0 {
				t.Errorf("JSON block %s: %v", b.body, err)
			}
			for _, s := range cfg.MCPServers {
				if filepath.Base(s.Command) != "hangar" || len(s.Args) != 2 || s.Args[0] != "serve" || !strings.HasSuffix(s.Args[1], ".wasm") {
					t.Errorf("JSON block: %+v is not hangar serve PLUGIN.wasm", s)
				}
			}
			continue
		case "sh":
		default:
			t.Errorf("a %q block in the section; the test runs sh and checks json", b.lang)
			continue
		}
		lines := strings.Split(strings.TrimSpace(b.body), "\n")
		if strings.HasPrefix(lines[0], "#") && strings.Contains(lines[0], "in this checkout") {
			dir = root
		} else if dir == root {
			dir = work
		}
		for _, line := range lines {
			cmdline, _, _ := strings.Cut(line, " #")
			cmdline = strings.TrimSpace(cmdline)
			if cmdline == "" || strings.HasPrefix(cmdline, "#") {
				continue
			}
			ran = append(ran, cmdline)
			fields := strings.Fields(cmdline)
			switch {
			case fields[0] == "cd" && len(fields) == 2:
				dir = filepath.Join(dir, fields[1])
			case len(fields) > 2 && fields[0] == "hangar" && fields[1] == "serve":
				if strings.ContainsAny(cmdline, `'"$`) {
					t.Fatalf("%s: the test splits hangar serve lines on spaces", cmdline)
				}
				checkServed(t, filepath.Join(bin, "hangar"), dir, env, name, "Hello", fields[2:]...)
			default:
				out := shell(t, dir, env, cmdline)
				switch {
				case len(fields) > 2 && fields[0] == "hangar" && fields[1] == "new":
					name = fields[2]
				case len(fields) > 1 && fields[0] == "hangar" && fields[1] == "call":
					if strings.TrimSpace(out) != `{"greeting":"Hello, Ada."}` {
						t.Errorf("%s: %q", cmdline, out)
					}
				case len(fields) > 1 && fields[0] == "hangar" && fields[1] == "inspect":
					if !strings.Contains(out, "greet - Greet someone by name.") || !strings.Contains(out, "welcome(name)") {
						t.Errorf("%s:\n%s", cmdline, out)
					}
				}
			}
		}
	}
	want := []string{"go install ./cmd/hangar", "hangar new", "make", "go test", "hangar inspect", "hangar call", "hangar serve"}
	all := strings.Join(ran, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("the section runs no %q; it ran:\n%s", w, all)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
