package cli

// What the command line tells a user who gives it the wrong thing.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNotAModule: a configuration file given where a plugin goes (hangar
// serve examples/hangar.yaml, without --config) is named as one, and so
// are other files that are not WebAssembly modules.
func TestNotAModule(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, dir, "hangar.yaml", "plugins:\n  - name: hello\n    path: hello.wasm\n")
	writeFile(t, dir, "hangar.json", `{"plugins": [{"name": "hello", "path": "hello.wasm"}]}`)
	writeFile(t, dir, "notes.json", `{"a": 1}`)
	writeFile(t, dir, "echo.wat", "(module)\n")
	writeFile(t, dir, "README.md", "# hello\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--stdio", "hangar.yaml"}, "hangar serve: plugin hangar: hangar.yaml is a configuration file, not a WebAssembly module: pass it with --config (--config hangar.yaml)"},
		{[]string{"inspect", "hangar.json"}, "hangar inspect: plugin hangar: hangar.json is a configuration file, not a WebAssembly module: pass it with --config (--config hangar.json)"},
		{[]string{"call", "hangar.yaml", "greet"}, "hangar call: plugin hangar: hangar.yaml is a configuration file, not a WebAssembly module: pass it with --config (--config hangar.yaml)"},
		{[]string{"inspect", "notes.json"}, `hangar inspect: plugin notes: notes.json is not a WebAssembly module: it is a JSON or YAML document (a module starts with the bytes \0asm)`},
		{[]string{"inspect", "echo.wat"}, "hangar inspect: plugin echo: echo.wat is WebAssembly text, not a module: assemble it first (wat2wasm echo.wat)"},
		{[]string{"inspect", "README.md"}, `hangar inspect: plugin readme: README.md is not a WebAssembly module: it starts with "# he" where a module starts with "\x00asm"`},
	} {
		_, stderr, code := hangar(t, tc.args...)
		if code != 1 || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("hangar %s: exit %d\n%s\nwant\n%s", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// hyperConfig is a hyper-mcp configuration as its README shows one.
const hyperConfig = `{
  "plugins": [
    {
      "name": "time",
      "url": "oci://ghcr.io/tuananh/time-plugin:latest"
    },
    {
      "name": "hello",
      "url": "oci://ghcr.io/tuananh/hello-plugin:latest",
      "runtime_config": {"tool_name_prefix": "hi_", "allowed_hosts": ["example.com"]}
    }
  ]
}
`

// TestHyperMCPConfigServed: a hyper-mcp configuration given to --config is
// recognized, and the user told how to import it, instead of a list of
// unknown keys.
func TestHyperMCPConfigServed(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "config.json", hyperConfig)
	out := filepath.Join(dir, "hangar.yaml")
	want := cfg + " is a hyper-mcp configuration, which Hangar does not read as it is: convert it with\n" +
		"  hangar import hyper-mcp " + cfg + " > " + out + "\n" +
		"review the result (hangar import lists what it could not carry over), then run\n" +
		"  hangar pull --config " + out + "\n" +
		"  hangar serve --config " + out + "\n"
	for _, cmd := range []string{"serve", "inspect", "pull"} {
		_, stderr, code := hangar(t, cmd, "--config", cfg)
		if code != 1 || stderr != "hangar "+cmd+": "+want {
			t.Errorf("hangar %s --config config.json: exit %d\n%s\nwant\nhangar %s: %s", cmd, code, stderr, cmd, want)
		}
	}
	// The mapping form of newer versions, in YAML.
	yml := writeFile(t, dir, "config.yaml", "plugins:\n  time:\n    url: oci://ghcr.io/tuananh/time-plugin:latest\n")
	if _, stderr, _ := hangar(t, "serve", "--config", yml); !strings.Contains(stderr, "is a hyper-mcp configuration") {
		t.Errorf("the mapping form: %s", stderr)
	}
	// A Hangar configuration with a mistake is not one.
	bad := writeFile(t, dir, "bad.yaml", "plugins:\n  - name: a\n    url: x.wasm\n    prefix: a\n")
	if _, stderr, _ := hangar(t, "serve", "--config", bad); strings.Contains(stderr, "hyper-mcp") || !strings.Contains(stderr, `unknown key "url"`) {
		t.Errorf("a Hangar configuration with a wrong key: %s", stderr)
	}
}

// TestImportToolNamePrefix: hyper-mcp's tool_name_prefix is put before tool
// names as it is; Hangar joins its prefix with "_". "hi_" becomes "hi", and
// the tools keep their names; other prefixes are converted with a note.
func TestImportToolNamePrefix(t *testing.T) {
	for _, tc := range []struct {
		in, prefix, note string
	}{
		{"hi_", "hi", ""},
		{"hi", "hi", `tool_name_prefix "hi": Hangar joins its prefix to names with "_": tools are named hi_NAME, where hyper-mcp named them hiNAME`},
		{"my_tools_", "my-tools", `tool_name_prefix "my_tools_": Hangar prefixes are letters, digits, "." and "-", joined to names with "_": tools are named my-tools_NAME`},
		{"__", "", `tool_name_prefix "__": no Hangar prefix can be made of it (1 to 32 letters, digits, "." and "-", starting with a letter); not imported`},
	} {
		src := strings.Replace(hyperConfig, `"hi_"`, `"`+tc.in+`"`, 1)
		out, notes, err := importHyperMCP([]byte(src), ".json")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(out, "(imported)", t.TempDir(), func(string) (string, bool) { return "", true })
		if err != nil {
			if strings.Contains(err.Error(), "prefix") {
				t.Errorf("tool_name_prefix %q: the import does not load: %v\n%s", tc.in, err, out)
			}
		} else if got := cfg.Plugins[1].Prefix; got != tc.prefix {
			t.Errorf("tool_name_prefix %q: prefix %q, want %q", tc.in, got, tc.prefix)
		}
		noted := strings.Join(notes, "\n")
		if tc.note == "" && strings.Contains(noted, "tool_name_prefix") || tc.note != "" && !strings.Contains(noted, "hello: "+tc.note) {
			t.Errorf("tool_name_prefix %q: notes\n%s\nwant %q", tc.in, noted, tc.note)
		}
		if tc.prefix != "" && !strings.Contains(string(out), "prefix: "+tc.prefix+"\n") {
			t.Errorf("tool_name_prefix %q:\n%s", tc.in, out)
		}
	}
}

// TestCallUnknownTool: hangar call takes the plugin's own tool names; a
// prefixed name, as clients see it, is answered with the name to use and
// the plugin's tools.
func TestCallUnknownTool(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	hello := testutil.BuildPlugin(t, "./examples/hello")
	cfg := writeFile(t, dir, "hangar.yaml", "plugins:\n  - name: hello\n    path: "+hello+"\n    prefix: h2\n")
	_, stderr, code := hangar(t, "call", "--config", cfg, "h2_greet", `{"name":"Ada"}`)
	want := `unknown tool "h2_greet"` + "\n" +
		`hint: hangar call takes the plugin's own tool names, without the prefix "h2" that clients see: call "greet"` + "\n" +
		"the plugin's tools are: base64, greet, hash, uuid\n"
	if code != 1 || !strings.HasPrefix(stderr, "hangar call: calling tool h2_greet: ") || !strings.HasSuffix(stderr, want) {
		t.Errorf("call h2_greet: exit %d\n%s\nwant\n%s", code, stderr, want)
	}
	_, stderr, _ = hangar(t, "call", hello, "gret")
	if want := `unknown tool "gret"` + "\nthe plugin's tools are: base64, greet, hash, uuid\n"; !strings.HasSuffix(stderr, want) {
		t.Errorf("call gret:\n%s\nwant\n%s", stderr, want)
	}
	if out, _, code := hangar(t, "call", "--config", cfg, "greet", `{"name":"Ada"}`); code != 0 || !strings.Contains(out, "Ada") {
		t.Errorf("call greet: exit %d, %q", code, out)
	}
}

// TestClientConfigGoRun: a hangar binary that go run built, in a
// temporary directory or in Go's build cache, is named as one; the
// placeholders are printed as they are written.
func TestClientConfigGoRun(t *testing.T) {
	cache := t.TempDir()
	getenv := func(name string) string {
		if name == "GOCACHE" {
			return cache
		}
		return ""
	}
	home, _ := os.UserCacheDir()
	for path, want := range map[string]bool{
		filepath.Join(os.TempDir(), "go-build1346854375", "b001", "exe", "hangar"): true,
		filepath.Join(cache, "3f", "3f1c2d-d", "hangar"):                           true,
		filepath.Join(home, "go-build", "ab", "abcd-d", "hangar"):                  true,
		"/srv/go-build/exe/hangar":                                                 true,
		"/usr/local/bin/hangar":                                                    false,
		filepath.Join(os.TempDir(), "hangar"):                                      false,
	} {
		if got := temporaryBuild(path, getenv); got != want {
			t.Errorf("temporaryBuild(%s) = %v, want %v", path, got, want)
		}
	}

	dir := t.TempDir()
	cfg := writeFile(t, dir, "hangar.yaml", "plugins:\n  - name: a\n    path: a.wasm\n    grants:\n      env:\n        KEY: ${HANGAR_CC_GO_RUN_UNSET}\n")
	writeFile(t, dir, "a.wasm", "\x00asm\x01\x00\x00\x00")
	bin := filepath.Join(cache, "3f", "3f1c2d-d", "hangar")
	t.Setenv("GOCACHE", cache)
	stdout, stderr, code := hangar(t, "client-config", "claude", "--config", cfg, "--command", bin)
	if code != 0 {
		t.Fatalf("client-config: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, `"HANGAR_CC_GO_RUN_UNSET": "<value of HANGAR_CC_GO_RUN_UNSET>"`) || strings.Contains(stdout, `\u003c`) {
		t.Errorf("client-config printed\n%s", stdout)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Errorf("not JSON: %v", err)
	}
	if want := "hangar client-config: " + bin + " is a temporary build (go run) that will be gone"; !strings.Contains(stderr, want) {
		t.Errorf("client-config with a binary in the build cache:\n%s\nwant %s", stderr, want)
	}
}

// TestMistypedCommand: a command a letter away from one is suggested.
func TestMistypedCommand(t *testing.T) {
	for args, want := range map[string]string{
		"srve":         "hangar: unknown command \"srve\"; did you mean \"serve\"?\nRun \"hangar help\" for the list of commands.\n",
		"inspcet":      "hangar: unknown command \"inspcet\"; did you mean \"inspect\"?\nRun \"hangar help\" for the list of commands.\n",
		"help clal":    "hangar: unknown command \"clal\"; did you mean \"call\"?\n",
		"client-confg": "hangar: unknown command \"client-confg\"; did you mean \"client-config\"?\nRun \"hangar help\" for the list of commands.\n",
	} {
		_, stderr, code := hangar(t, strings.Fields(args)...)
		if code != 2 || stderr != want {
			t.Errorf("hangar %s: exit %d\n%q\nwant\n%q", args, code, stderr, want)
		}
	}
	if _, stderr, code := hangar(t, "frobnicate"); code != 2 || strings.Contains(stderr, "did you mean") || !strings.Contains(stderr, "Commands:") {
		t.Errorf("hangar frobnicate: exit %d\n%s", code, stderr)
	}
}

// TestInspectUnsetVariable: inspect only lists, so a variable that only
// grants.env uses may be unset; it says so. serve and call still need it.
func TestInspectUnsetVariable(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	hello := testutil.BuildPlugin(t, "./examples/hello")
	cfg := writeFile(t, dir, "hangar.yaml", "plugins:\n  - name: hello\n    path: "+hello+"\n    grants:\n      env:\n        API_KEY: ${HANGAR_INSPECT_UNSET}\n")
	stdout, stderr, code := hangar(t, "inspect", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "greet") {
		t.Fatalf("inspect: exit %d\n%s%s", code, stdout, stderr)
	}
	if want := "hangar inspect: HANGAR_INSPECT_UNSET is not set; listing with it empty (serve and call need it set)\n"; stderr != want {
		t.Errorf("inspect said\n%s\nwant\n%s", stderr, want)
	}
	if _, stderr, code := hangar(t, "call", "--config", cfg, "greet", `{"name":"Ada"}`); code != 1 || !strings.Contains(stderr, "HANGAR_INSPECT_UNSET is not set") {
		t.Errorf("call: exit %d\n%s", code, stderr)
	}
}
