package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// testEnv is the environment ${NAME} references see in tests.
func testEnv(name string) (string, bool) {
	switch name {
	case "HANGAR_API_KEY":
		return "k-123", true
	case "HANGAR_TOKENS":
		return "- {id: env-bot, token: 0123456789abcdef0123456789abcdef, plugins: [hello]}\n", true
	case "EMPTY":
		return "", true
	case "DOLLAR":
		return "${HANGAR_API_KEY}", true // not expanded again
	}
	return "", false
}

func testdataDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// parse parses src as test.yaml in testdata.
func parse(t *testing.T, src string) (*Config, error) {
	t.Helper()
	return Parse([]byte(src), "test.yaml", "testdata", testEnv)
}

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := parse(t, src)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return cfg
}

// messages splits a joined error into its lines.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestFullExample(t *testing.T) {
	dir := testdataDir(t)
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, "testdata/full.yaml", "testdata", testEnv)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	checkGolden(t, cfg, dir, "testdata/full.golden.json")

	// Spot checks, so the golden file cannot silently hold wrong values.
	w := cfg.Plugins[len(cfg.Plugins)-1]
	if w.Limits.MemoryPages != 1024 || w.Limits.MaxOutput != 1_000_000 ||
		w.Limits.CallTimeout != 45*time.Second || w.Limits.HostTimeout != 5*time.Minute ||
		w.Limits.MaxInstances != 4 {
		t.Errorf("weather limits = %+v", w.Limits)
	}
	if w.Tasks["forecast"] != "always" || w.Tasks["now"] != "never" || len(w.Tasks) != 2 || cfg.Plugins[0].Tasks != nil {
		t.Errorf("weather tasks = %v, hello's %v", w.Tasks, cfg.Plugins[0].Tasks)
	}
	if w.Grants.Env["API_KEY"] != "k-123" || w.Grants.Env["PRICE"] != "$5" {
		t.Errorf("weather env = %v", w.Grants.Env)
	}
	if w.Path != filepath.Join(dir, "plugins", "weather.wasm") {
		t.Errorf("weather path = %s", w.Path)
	}
	if !cfg.HTTP.LegacySSE {
		t.Error("http.legacy_sse: true decoded as false")
	}
	if cfg.Plugins[0].Limits != DefaultLimits() {
		t.Errorf("hello limits = %+v, want defaults", cfg.Plugins[0].Limits)
	}
	if m := cfg.MRTR; len(m.StateKey) != 32 || m.StateKey[0] != 0 || m.StateKey[31] != 31 || len(m.PreviousStateKeys) != 1 || m.ParkTimeout != 5*time.Minute || m.MaxParkedPerPrincipal != 4 || m.Peers["r2"] == "" {
		t.Errorf("mrtr = %+v", m)
	}
	if tk := cfg.Tasks; !tk.Enabled || tk.After != 5*time.Second || tk.MaxTasksPerClient != 4 || tk.MaxResultBytes != 512<<10 || tk.MaxKeptBytes != 16<<20 || tk.MaxKeptBytesPerClient != 4<<20 || tk.Keep != 30*time.Minute || tk.MaxListenersPerClient != 2 {
		t.Errorf("tasks = %+v", tk)
	}
}

// checkGolden compares cfg, as JSON with dir written $TESTDATA, with the
// golden file (which go test -update rewrites).
func checkGolden(t *testing.T, cfg *Config, dir, golden string) {
	t.Helper()
	got, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(dir) // the directory as it appears in JSON
	got = bytes.ReplaceAll(got, bytes.Trim(quoted, `"`), []byte("$TESTDATA"))
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("decoded configuration differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

func TestJSONMatchesYAML(t *testing.T) {
	load := func(name string) *Config {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(data, name, "testdata", testEnv)
		if err != nil {
			t.Fatalf("Parse %s:\n%v", name, err)
		}
		return cfg
	}
	y, j := load("testdata/full.yaml"), load("testdata/full.json")
	if !reflect.DeepEqual(y, j) {
		t.Errorf("full.json and full.yaml differ:\nyaml %+v\njson %+v", y, j)
	}
}

func TestLoad(t *testing.T) {
	t.Setenv("HANGAR_API_KEY", "k-123")
	cfg, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatalf("Load:\n%v", err)
	}
	data, _ := os.ReadFile("testdata/full.yaml")
	want, err := Parse(data, "x", "testdata", testEnv)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Plugins { // Load, unlike Parse, knows where the lock file goes
		want.Plugins[i].LockFile = filepath.Join(testdataDir(t), "full.lock")
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Load differs from Parse:\n%+v\n%+v", cfg, want)
	}

	_, err = Load("testdata/nope.yaml")
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Errorf("Load(missing) = %v; want fs.ErrNotExist, not ErrInvalid", err)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "load config: ") {
		t.Errorf("Load(missing) = %v; want a load config: prefix", err)
	}

	_, err = Load("testdata/bad.yaml")
	if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "testdata/bad.yaml:") {
		t.Errorf("Load(bad) = %v; want ErrInvalid prefixed with the path as given", err)
	}
}

// Relative paths resolve against the configuration file's directory, not
// the working directory.
func TestLoadRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "conf", "wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "conf", "share"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conf", "wasm", "p.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "plugins:\n  - name: p\n    path: wasm/p.wasm\n    grants:\n      allowed_paths: [{host: share}, {host: ../conf/share/.., guest: /c}]\n"
	if err := os.WriteFile(filepath.Join(dir, "conf", "hangar.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	cfg, err := Load("conf/hangar.yaml")
	if err != nil {
		t.Fatalf("Load:\n%v", err)
	}
	p := cfg.Plugins[0]
	if want := filepath.Join(dir, "conf", "wasm", "p.wasm"); p.Path != want {
		t.Errorf("Path = %s, want %s", p.Path, want)
	}
	share := filepath.Join(dir, "conf", "share")
	want := []Mount{
		{Host: share, Guest: filepath.ToSlash(share)},
		{Host: filepath.Join(dir, "conf"), Guest: "/c"},
	}
	if !reflect.DeepEqual(p.Grants.AllowedPaths, want) {
		t.Errorf("AllowedPaths = %+v, want %+v", p.Grants.AllowedPaths, want)
	}
}

func TestParseBaseDir(t *testing.T) {
	dir := testdataDir(t)
	src := "plugins: [{name: a, path: plugins/hello.wasm}, {name: b, path: " + filepath.Join(dir, "plugins", "weather.wasm") + "}]"
	// "" means the working directory; here the package directory.
	cfg, err := Parse([]byte(strings.Replace(src, "plugins/hello", "testdata/plugins/hello", 1)), "", "", testEnv)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	if cfg.Plugins[0].Path != filepath.Join(dir, "plugins", "hello.wasm") {
		t.Errorf("relative to cwd: %s", cfg.Plugins[0].Path)
	}
	if cfg.Plugins[1].Path != filepath.Join(dir, "plugins", "weather.wasm") {
		t.Errorf("absolute: %s", cfg.Plugins[1].Path)
	}
}

func TestDefaults(t *testing.T) {
	for _, src := range []string{"", "# nothing\n", "---\n", "~\n", "{}", "plugins: []\n", "plugins:\n", "http:\nplugins: ~\n", "http: {addr: \"\"}"} {
		cfg := mustParse(t, src)
		if cfg.HTTP.Addr != "" || cfg.HTTP.AllowedHosts != nil || cfg.HTTP.AllowedOrigins != nil || cfg.Plugins != nil {
			t.Errorf("Parse(%q) = %+v, want an empty configuration", src, cfg)
		}
	}

	cfg := mustParse(t, "plugins:\n  - name: hello\n    path: plugins/hello.wasm\n    limits:\n    grants: {}\n    prefix:\n    config: {}\n")
	p := cfg.Plugins[0]
	want := Plugin{Name: "hello", Source: "plugins/hello.wasm", Kind: SourceFile, Path: filepath.Join(testdataDir(t), "plugins", "hello.wasm"), Limits: Limits{
		MemoryPages:  4096,
		CallTimeout:  30 * time.Second,
		HostTimeout:  2 * time.Minute,
		MaxInstances: 0,
		MaxOutput:    16 << 20,
	}, Compile: CompileLazy}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("plugin = %+v\nwant     %+v", p, want)
	}
	if DefaultLimits() != want.Limits {
		t.Errorf("DefaultLimits() = %+v", DefaultLimits())
	}

	// Setting one limit keeps the other defaults.
	cfg = mustParse(t, "plugins: [{name: a, path: plugins/hello.wasm, limits: {max_instances: 3}}]")
	l := DefaultLimits()
	l.MaxInstances = 3
	if cfg.Plugins[0].Limits != l {
		t.Errorf("limits = %+v, want %+v", cfg.Plugins[0].Limits, l)
	}
}

func TestMemoryPages(t *testing.T) {
	for _, tc := range []struct {
		memory string
		pages  uint32
	}{
		{"1", 1},
		{"65536", 1},
		{"65537", 2},
		{"64KiB", 1},
		{"64MiB", 1024},
		{`"64 MiB"`, 1024},
		{"1MB", 16}, // 1000000 / 65536 = 15.26
		{"256MiB", 4096},
		{"4GiB", 65536},
		{"4294967296", 65536},
		{"0x10000", 1},
	} {
		cfg := mustParse(t, "plugins: [{name: a, path: plugins/hello.wasm, limits: {memory: "+tc.memory+"}}]")
		if got := cfg.Plugins[0].Limits.MemoryPages; got != tc.pages {
			t.Errorf("memory %s: %d pages, want %d", tc.memory, got, tc.pages)
		}
	}
}

func TestConfigValues(t *testing.T) {
	cfg := mustParse(t, `plugins:
  - name: a
    path: plugins/hello.wasm
    config:
      s: text
      i: 8080
      f: 1.50
      b: true
      e: ""
      q: "${NOT_EXPANDED}"
      1: one
`)
	want := map[string]string{"s": "text", "i": "8080", "f": "1.50", "b": "true", "e": "", "q": "${NOT_EXPANDED}", "1": "one"}
	if !reflect.DeepEqual(cfg.Plugins[0].Config, want) {
		t.Errorf("config = %v, want %v", cfg.Plugins[0].Config, want)
	}
}

func TestEnvGrant(t *testing.T) {
	cfg := mustParse(t, `plugins:
  - name: a
    path: plugins/hello.wasm
    grants:
      env:
        KEY: ${HANGAR_API_KEY}
        BOTH: "${HANGAR_API_KEY}/${EMPTY}/x"
        EMPTY: ${EMPTY}
        LITERAL: $$HOME and $5 and a$ and $-
        ONCE: ${DOLLAR}
        PORT: 8080
`)
	want := map[string]string{
		"KEY":     "k-123",
		"BOTH":    "k-123//x",
		"EMPTY":   "",
		"LITERAL": "$HOME and $5 and a$ and $-",
		"ONCE":    "${HANGAR_API_KEY}",
		"PORT":    "8080",
	}
	if got := cfg.Plugins[0].Grants.Env; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v\nwant  %v", got, want)
	}

	// nil getenv reads the process environment.
	t.Setenv("HANGAR_CONFIG_TEST", "from-os")
	c, err := Parse([]byte("plugins: [{name: a, path: plugins/hello.wasm, grants: {env: {V: '${HANGAR_CONFIG_TEST}'}}}]"), "t", "testdata", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugins[0].Grants.Env["V"] != "from-os" {
		t.Errorf("env from os = %v", c.Plugins[0].Grants.Env)
	}
}

func TestExpandEnv(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		problems []string
	}{
		{"plain", "plain", nil},
		{"", "", nil},
		{"$", "$", nil},
		{"$$", "$", nil},
		{"$$$$", "$$", nil},
		{"$${X}", "${X}", nil},
		{"${HANGAR_API_KEY}", "k-123", nil},
		{"a${EMPTY}b", "ab", nil},
		{"${UNSET}", "", []string{"environment variable UNSET is not set"}},
		{"${UNSET}${UNSET}${OTHER}", "", []string{"environment variable UNSET is not set", "environment variable OTHER is not set"}},
		{"${}", "", []string{"invalid reference ${}: a name is letters, digits and underscores, not starting with a digit"}},
		{"${1A}", "", []string{"invalid reference ${1A}: a name is letters, digits and underscores, not starting with a digit"}},
		{"${A:-x}", "", []string{"${A:-x}: defaults and other shell operators are not supported; only ${NAME}"}},
		{"x${A", "", []string{`unterminated "${A"; write ${NAME}, or $$ for a literal $`}},
		{"$HOME/x", "", []string{`"$HOME" is not expanded: write ${HOME} to use the variable, or $$HOME for a literal $`}},
	} {
		got, problems := expandEnv(tc.in, testEnv)
		if got != tc.want || !reflect.DeepEqual(problems, tc.problems) {
			t.Errorf("expandEnv(%q) = %q, %q; want %q, %q", tc.in, got, problems, tc.want, tc.problems)
		}
	}
}

// TestEnvVarProblems: problems with a variable that is not set, or that
// holds the placeholder of hangar client-config, name it in Error.EnvVar;
// other problems do not.
func TestEnvVarProblems(t *testing.T) {
	getenv := func(name string) (string, bool) {
		switch name {
		case "SET":
			return "v", true
		case "PLACEHOLDER":
			return EnvPlaceholder("PLACEHOLDER"), true
		case "OTHER_PLACEHOLDER":
			return EnvPlaceholder("SET"), true // another variable's: a value like any
		}
		return "", false
	}
	_, err := Parse([]byte(`plugins:
  - name: a
    path: plugins/hello.wasm
    grants:
      env:
        A: ${SET}
        B: ${UNSET}
        C: x${PLACEHOLDER}
        D: $HOME
        E: ${OTHER_PLACEHOLDER}
`), "h.yaml", "testdata", getenv)
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		ce := e.(*Error)
		got = append(got, fmt.Sprintf("%d:%s:%s", ce.Line, ce.EnvVar, ce.Msg))
	}
	want := []string{
		"7:UNSET:plugins[0].grants.env.B: environment variable UNSET is not set",
		`8:PLACEHOLDER:plugins[0].grants.env.C: environment variable PLACEHOLDER holds the placeholder "<value of PLACEHOLDER>": replace it with the value`,
		`9::plugins[0].grants.env.D: "$HOME" is not expanded: write ${HOME} to use the variable, or $$HOME for a literal $`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string // substring of the error; "" for success
	}{
		{"0", 0, ""},
		{"1", 1, ""},
		{"1024", 1024, ""},
		{"  42  ", 42, ""},
		{"10B", 10, ""},
		{"1KiB", 1024, ""},
		{"1kib", 1024, ""},
		{"1 KiB", 1024, ""},
		{"64MiB", 64 << 20, ""},
		{"2GiB", 2 << 30, ""},
		{"1TiB", 1 << 40, ""},
		{"1KB", 1000, ""},
		{"1kB", 1000, ""},
		{"5MB", 5_000_000, ""},
		{"3GB", 3_000_000_000, ""},
		{"1TB", 1_000_000_000_000, ""},
		{"8388607TiB", 8388607 << 40, ""},
		{"9223372036854775807", 9223372036854775807, ""},
		{"9223372036854775808", 0, "too large"},
		{"8388608TiB", 0, "too large"},
		{"99999999999999999999999", 0, "too large"},
		{"", 0, "empty"},
		{"   ", 0, "empty"},
		{"-1", 0, "must not be negative"},
		{"+1", 0, "must start with a whole number"},
		{"MiB", 0, "must start with a whole number"},
		{"1.5GiB", 0, "fractions are not supported"},
		{"1,5GiB", 0, "fractions are not supported"},
		{"64M", 0, `unit "M" is ambiguous; write MiB (powers of 1024) or MB (powers of 1000)`},
		{"64k", 0, `unit "k" is ambiguous; write KiB`},
		{"64 mebibytes", 0, `unknown unit "mebibytes"`},
		{"64MiB!", 0, `unknown unit "MiB!"`},
		{"64 Mi B", 0, `unknown unit "Mi B"`},
		{"0x10", 0, `unknown unit "x10"`},
	} {
		got, err := ParseSize(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseSize(%q) = %d, %v; want error containing %q", tc.in, got, err, tc.err)
		case tc.err != "" && !errors.Is(err, ErrInvalid):
			t.Errorf("ParseSize(%q) error %v does not wrap ErrInvalid", tc.in, err)
		}
	}
	_, err := ParseSize("64M")
	if want := `invalid size "64M": unit "M" is ambiguous; write MiB (powers of 1024) or MB (powers of 1000)`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestSingle(t *testing.T) {
	for _, tc := range []struct{ path, name string }{
		{"hello.wasm", "hello"},
		{"/opt/plugins/Hello-World_2.wasm", "hello-world_2"},
		{"My Tool.v2.wasm", "my-tool-v2"},
		{"--x--.wasm", "x"},
		{"_under.wasm", "under"},
		{"ünï.wasm", "n"},
		{"ü.wasm", "plugin"},
		{".wasm", "plugin"},
		{"noext", "noext"},
		{strings.Repeat("a", 70) + ".wasm", strings.Repeat("a", 64)},
		{strings.Repeat("a", 63) + "!b.wasm", strings.Repeat("a", 63)},
	} {
		p := Single(tc.path)
		if p.Name != tc.name {
			t.Errorf("Single(%q).Name = %q, want %q", tc.path, p.Name, tc.name)
		}
		if !nameRe.MatchString(p.Name) {
			t.Errorf("Single(%q).Name = %q does not match the name pattern", tc.path, p.Name)
		}
	}
	p := Single("testdata/plugins/hello.wasm")
	want := Plugin{Name: "hello", Source: "testdata/plugins/hello.wasm", Kind: SourceFile, Path: filepath.Join(testdataDir(t), "plugins", "hello.wasm"), Limits: DefaultLimits(), Compile: CompileLazy}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Single = %+v, want %+v", p, want)
	}
}

func TestNormalizedLists(t *testing.T) {
	cfg := mustParse(t, `http:
  addr: "[::1]:0"
  allowed_origins: [HTTP://LocalHost:3000, "https://x.test:443", "http://x.test:80", "https://[::1]:8443", "vscode-webview://abc"]
  allowed_hosts: [MCP.Example.Test, "mcp.example.test:8443", "[::1]:80", "10.0.0.1"]
plugins:
  - name: a
    path: plugins/hello.wasm
    grants:
      allowed_hosts: [API.Example.com, "*.Example.org", 10.0.0.1, "::1", "[2001:db8::1]", under_score.example, "*"]
`)
	wantOrigins := []string{"http://localhost:3000", "https://x.test", "http://x.test", "https://[::1]:8443", "vscode-webview://abc"}
	if !reflect.DeepEqual(cfg.HTTP.AllowedOrigins, wantOrigins) {
		t.Errorf("origins = %q\nwant      %q", cfg.HTTP.AllowedOrigins, wantOrigins)
	}
	wantHosts := []string{"mcp.example.test", "mcp.example.test:8443", "[::1]:80", "10.0.0.1"}
	if !reflect.DeepEqual(cfg.HTTP.AllowedHosts, wantHosts) {
		t.Errorf("http hosts = %q\nwant         %q", cfg.HTTP.AllowedHosts, wantHosts)
	}
	wantGrants := []string{"api.example.com", "*.example.org", "10.0.0.1", "::1", "2001:db8::1", "under_score.example", "*"}
	if !reflect.DeepEqual(cfg.Plugins[0].Grants.AllowedHosts, wantGrants) {
		t.Errorf("grant hosts = %q\nwant          %q", cfg.Plugins[0].Grants.AllowedHosts, wantGrants)
	}
	if cfg.HTTP.Addr != "[::1]:0" {
		t.Errorf("addr = %q", cfg.HTTP.Addr)
	}
}

func TestAliasesInPlugins(t *testing.T) {
	cfg := mustParse(t, `plugins:
  - name: a
    path: &wasm plugins/hello.wasm
    limits: &small {memory: 1MiB, max_instances: 2}
  - name: b
    path: *wasm
    limits: *small
`)
	if len(cfg.Plugins) != 2 || cfg.Plugins[1].Limits.MemoryPages != 16 || cfg.Plugins[1].Limits.MaxInstances != 2 ||
		cfg.Plugins[1].Path != cfg.Plugins[0].Path {
		t.Errorf("plugins = %+v", cfg.Plugins)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"memory", "call_timeout", "host_timeout", "max_instances", "max_output"}
	for key, want := range map[string]string{
		"memroy":       "memory",
		"Memory":       "memory",
		"callTimeout":  "call_timeout",
		"max-output":   "max_output",
		"MAX_INSTANCE": "",
		"maxinstance":  "max_instances",
		"max_instance": "max_instances",
		"mem":          "",
		"m":            "",
		"timeout":      "",
	} {
		if got := suggest(key, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", key, got, want)
		}
	}
}
