package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestScaffoldVersions checks the versions a scaffold's go.mod names
// against Hangar's own go.mod.
func TestScaffoldVersions(t *testing.T) {
	mod := string(mustRead(t, filepath.Join(testutil.Root(), "go.mod")))
	if m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(mod); m == nil || m[1] != scaffoldGoVersion {
		t.Errorf("go.mod's go line is %v; scaffoldGoVersion is %s", m, scaffoldGoVersion)
	}
	if !strings.Contains(mod, "github.com/extism/go-pdk "+goPDKVersion+"\n") {
		t.Errorf("go.mod does not require github.com/extism/go-pdk %s", goPDKVersion)
	}
}

// TestNewRefuses checks the arguments new refuses, before writing
// anything.
func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	notCheckout := t.TempDir()
	if err := os.WriteFile(filepath.Join(notCheckout, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"new"}, 2, "Usage: hangar new"},
		{[]string{"new", "a", "b", "c"}, 2, "Usage: hangar new"},
		{[]string{"new", "Hello", filepath.Join(dir, "x")}, 1, `invalid plugin name "Hello": use 1 to 64 lower-case letters`},
		{[]string{"new", "-x", filepath.Join(dir, "x")}, 2, "flag provided but not defined"},
		{[]string{"new", "my.tool", filepath.Join(dir, "x")}, 1, `invalid plugin name "my.tool"`},
		{[]string{"new", "ok", full}, 1, "full is not empty; give a new or empty directory"},
		{[]string{"new", "--template", "dashboard", "ok", filepath.Join(dir, "x")}, 1, `--template: there is no template "dashboard"; use basic or app`},
		{[]string{"new", "ok", filepath.Join(full, "keep.txt")}, 1, "keep.txt"},
		{[]string{"new", "--hangar-dir", notCheckout, "ok", filepath.Join(dir, "x")}, 1, "is not a checkout of github.com/hangar-mcp/hangar: its go.mod declares module example.com/other"},
		{[]string{"new", "--hangar-dir", filepath.Join(dir, "none"), "ok", filepath.Join(dir, "x")}, 1, "is not a checkout of github.com/hangar-mcp/hangar"},
	} {
		_, errOut, code := hangar(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("hangar %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, errOut, c.code, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Errorf("a refused new wrote %s: %v", filepath.Join(dir, "x"), err)
	}
	if b := mustRead(t, filepath.Join(full, "keep.txt")); string(b) != "mine" {
		t.Errorf("keep.txt changed: %q", b)
	}
}

// TestNewWithoutGo checks that new without the go command writes the
// files of each template and says what to run.
func TestNewWithoutGo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, c := range []struct {
		args  []string // before NAME DIR
		files []string
		rule  string // the Makefile's rule of nogo.wasm
	}{
		{nil, []string{"main.go", "main_test.go", "go.mod", "Makefile", "README.md", ".gitignore", "go.sum"},
			"nogo.wasm: $(wildcard *.go) go.mod go.sum\n"},
		{[]string{"--template", "basic"}, []string{"main.go", "main_test.go", "go.mod", "Makefile", "README.md", ".gitignore", "go.sum"},
			"nogo.wasm: $(wildcard *.go) go.mod go.sum\n"},
		{[]string{"--template", "app"}, []string{"main.go", "view.html", "main_test.go", "go.mod", "Makefile", "README.md", ".gitignore", "go.sum"},
			"nogo.wasm: $(wildcard *.go) view.html go.mod go.sum\n"},
	} {
		dir := filepath.Join(t.TempDir(), "nogo")
		args := append(append([]string{"new", "--hangar-dir", testutil.Root(), "--module", "example.com/nogo"}, c.args...), "nogo", dir)
		out, errOut, code := hangar(t, args...)
		if code != 1 || !strings.Contains(errOut, "the go command was not found") || !strings.Contains(errOut, `run "go mod tidy" in `+dir) {
			t.Errorf("%q: exit %d, stderr %q", c.args, code, errOut)
		}
		for _, f := range c.files {
			if f != "go.sum" && !strings.Contains(out, filepath.Join(dir, f)+"\n") {
				t.Errorf("%q: stdout does not list %s: %q", c.args, f, out)
			}
		}
		mod := string(mustRead(t, filepath.Join(dir, "go.mod")))
		for _, want := range []string{"module example.com/nogo\n", "github.com/hangar-mcp/hangar " + localVersion, "replace github.com/hangar-mcp/hangar => " + testutil.Root()} {
			if !strings.Contains(mod, want) {
				t.Errorf("%q: go.mod lacks %q:\n%s", c.args, want, mod)
			}
		}
		if mk := string(mustRead(t, filepath.Join(dir, "Makefile"))); !strings.Contains(mk, "\n"+c.rule) {
			t.Errorf("%q: the Makefile lacks the rule %q:\n%s", c.args, c.rule, mk)
		}
		for _, f := range c.files {
			b := mustRead(t, filepath.Join(dir, f))
			if strings.Contains(string(b), "<%") {
				t.Errorf("%q: %s holds an unexpanded template action", c.args, f)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != len(c.files) {
			t.Errorf("%q: %s holds %d files, want %d (%v): %v", c.args, dir, len(entries), len(c.files), err, entries)
		}
	}
}

// TestHangarSource checks where a scaffold takes Hangar from without
// --hangar-dir: this test binary is built from the checkout.
func TestHangarSource(t *testing.T) {
	if got := builtFrom(); got != testutil.Root() {
		t.Errorf("builtFrom() = %q, want the checkout %q", got, testutil.Root())
	}
	var data scaffoldData
	var errOut strings.Builder
	sum, err := hangarSource(&data, "", &Env{Stderr: &errOut})
	if err != nil || data.HangarDir != testutil.Root() || data.HangarVersion != localVersion || len(sum) == 0 {
		t.Errorf("hangarSource: %+v, %d bytes of go.sum, %v", data, len(sum), err)
	}
	if !strings.Contains(errOut.String(), "using the Hangar checkout this hangar was built from") {
		t.Errorf("no note on stderr: %q", errOut.String())
	}
}

// TestScaffoldTestsPass writes a scaffold of each template and runs its
// tests, as its author would with "go test ./...": each test starts the
// plugin with plugintest.New, which builds it to WebAssembly (once per
// scaffold), and must pass, on the host, with the scaffold's main.go
// compiled for the host as well.
func TestScaffoldTestsPass(t *testing.T) {
	for _, c := range []struct {
		template string
		tests    []string
	}{
		{"basic", []string{"TestGreet", "TestPromptAndResource"}},
		{"app", []string{"TestView", "TestTools"}},
	} {
		t.Run(c.template, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "greeter")
			if out, errOut, code := hangar(t, "new", "--template", c.template, "--hangar-dir", testutil.Root(), "greeter", dir); code != 0 {
				t.Fatalf("hangar new: exit %d\n%s%s", code, out, errOut)
			}
			if test := string(mustRead(t, filepath.Join(dir, "main_test.go"))); !strings.Contains(test, "plugintest.New(t, \".\"") {
				t.Errorf("the scaffold's test does not use plugintest.New:\n%s", test)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "./...")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go test ./... in the scaffold: %v\n%s", err, out)
			}
			for _, test := range c.tests {
				if !strings.Contains(string(out), "--- PASS: "+test+" ") {
					t.Errorf("%s did not pass:\n%s", test, out)
				}
			}
		})
	}
}
