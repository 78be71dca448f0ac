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
// files and says what to run.
func TestNewWithoutGo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nogo")
	t.Setenv("PATH", t.TempDir())
	out, errOut, code := hangar(t, "new", "--hangar-dir", testutil.Root(), "--module", "example.com/nogo", "nogo", dir)
	if code != 1 || !strings.Contains(errOut, "the go command was not found") || !strings.Contains(errOut, `run "go mod tidy" in `+dir) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, filepath.Join(dir, "main.go")) {
		t.Errorf("stdout does not list the files: %q", out)
	}
	mod := string(mustRead(t, filepath.Join(dir, "go.mod")))
	for _, want := range []string{"module example.com/nogo\n", "github.com/hangar-mcp/hangar " + localVersion, "replace github.com/hangar-mcp/hangar => " + testutil.Root()} {
		if !strings.Contains(mod, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, mod)
		}
	}
	for _, f := range []string{"main.go", "main_test.go", "Makefile", "README.md", ".gitignore", "go.sum"} {
		b := mustRead(t, filepath.Join(dir, f))
		if strings.Contains(string(b), "<%") {
			t.Errorf("%s holds an unexpanded template action", f)
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

// TestScaffoldTestsPass writes a scaffold and runs its tests, as its
// author would with "go test ./...": each test starts the plugin with
// plugintest.New and must pass, on the host, with the scaffold's main.go
// compiled for the host as well.
func TestScaffoldTestsPass(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "greeter")
	if out, errOut, code := hangar(t, "new", "--hangar-dir", testutil.Root(), "greeter", dir); code != 0 {
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
	for _, test := range []string{"TestGreet", "TestPromptAndResource"} {
		if !strings.Contains(string(out), "--- PASS: "+test+" ") {
			t.Errorf("%s did not pass:\n%s", test, out)
		}
	}
}
