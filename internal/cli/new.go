package cli

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/template"

	"github.com/hangar-mcp/hangar/internal/config"
)

//go:embed scaffold
var scaffold embed.FS

// hangarModule is the module path of Hangar, which a scaffold requires.
const hangarModule = "github.com/hangar-mcp/hangar"

// Versions a scaffold's go.mod names: the go line of Hangar's own go.mod
// (a test checks they agree), the Go PDK version Hangar's pdk is built on,
// and the version required of a module taken from a local checkout.
const (
	scaffoldGoVersion = "1.26.0"
	goPDKVersion      = "v1.1.3"
	localVersion      = "v0.0.0-00010101000000-000000000000"
)

// A scaffoldFile is a template of a scaffold, under scaffold/, and the
// file it becomes.
type scaffoldFile struct{ template, file string }

// scaffoldTemplates are the kinds of plugin new writes (--template), the
// default first. Each has its own main.go, test and README; the module's
// other files are common.
var scaffoldTemplates = []struct {
	name  string
	files []scaffoldFile
}{
	{"basic", []scaffoldFile{
		{"main.go.tmpl", "main.go"},
		{"main_test.go.tmpl", "main_test.go"},
		{"go.mod.tmpl", "go.mod"},
		{"Makefile.tmpl", "Makefile"},
		{"README.md.tmpl", "README.md"},
		{"gitignore.tmpl", ".gitignore"},
	}},
	{"app", []scaffoldFile{
		{"app/main.go.tmpl", "main.go"},
		{"app/view.html.tmpl", "view.html"},
		{"app/main_test.go.tmpl", "main_test.go"},
		{"go.mod.tmpl", "go.mod"},
		{"Makefile.tmpl", "Makefile"},
		{"app/README.md.tmpl", "README.md"},
		{"gitignore.tmpl", ".gitignore"},
	}},
}

// scaffoldFiles returns the files of the template name, or nil if there is
// no such template.
func scaffoldFiles(name string) []scaffoldFile {
	for _, t := range scaffoldTemplates {
		if t.name == name {
			return t.files
		}
	}
	return nil
}

type newFlags struct {
	hangarDir string
	module    string
	template  string
}

func (f *newFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.hangarDir, "hangar-dir", "", "a local checkout of Hangar for the plugin's go.mod to use (a replace line), until the module is published")
	fs.StringVar(&f.module, "module", "", "the plugin's module path (default NAME)")
	fs.StringVar(&f.template, "template", "basic", "what the plugin starts with: basic (a typed tool, a prompt, a resource) or app (an interactive view, MCP Apps, with its tools)")
}

var newCmd = &command{
	name:  "new",
	args:  "[--template basic|app] [--hangar-dir PATH] [--module PATH] NAME [DIR]",
	short: "create a plugin module to start from",
	long: `New writes a Go module for a plugin named NAME into DIR (default ./NAME),
which must not exist or be empty: main.go with a typed tool, a prompt and a
resource; main_test.go, which builds the plugin and calls it through
Hangar's engine and MCP server (package plugintest); go.mod and go.sum; a
Makefile ("make" builds NAME.wasm); a README. NAME follows the rules of a
plugin name in a configuration file: 1 to 64 lower-case letters, digits,
"_" and "-", starting with a letter or digit.

With --template app, the plugin has an interactive view (MCP Apps)
instead: main.go offers the view ui://dashboard, whose HTML is view.html
(embedded with go:embed), the tool show_dashboard, which shows it, and
dashboard_data, a tool only the view calls. The view speaks the
extension's postMessage protocol by itself, with no library and no
network; main_test.go reads it and calls both tools.

The module requires github.com/hangar-mcp/hangar, which comes either
  - from a local checkout of Hangar, through a replace line in go.mod:
    the one --hangar-dir names, or else the checkout this hangar was built
    from, when it was built from one (with go build or go install in the
    checkout, without -trimpath) and it is still there; or
  - from the published module, at the version of this hangar, when it was
    installed from the module (go install github.com/hangar-mcp/hangar/cmd/hangar@VERSION).

New then runs "go mod tidy" in DIR to complete go.mod and go.sum: first
with GOPROXY=off, which uses only the module cache, then, if modules are
missing from it, with the Go module proxy. Without Go, or when the modules
cannot be had, the files stay written and new says what to run.`,
	flags: func(fs *flag.FlagSet) { new(newFlags).register(fs) },
}

func init() { newCmd.run = runNew }

// scaffoldData fills the templates.
type scaffoldData struct {
	Name, Module, GoVersion, PDKVersion string
	Template                            string // basic or app
	HangarVersion                       string // the required version of Hangar
	HangarDir                           string // the checkout replacing it, or ""
}

func runNew(ctx context.Context, env *Env, args []string) error {
	var f newFlags
	fs := newCmd.flagSet(env.Stderr)
	f.register(fs)
	pos, err := newCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		newCmd.help(env.Stderr)
		return errUsage
	}
	name, dir := pos[0], pos[0]
	if len(pos) == 2 {
		dir = pos[1]
	}
	if err := config.CheckName(name); err != nil {
		return err
	}
	files := scaffoldFiles(f.template)
	if files == nil {
		var names []string
		for _, t := range scaffoldTemplates {
			names = append(names, t.name)
		}
		return fmt.Errorf("--template: there is no template %q; use %s", f.template, strings.Join(names, " or "))
	}
	if err := checkEmptyDir(dir); err != nil {
		return err
	}
	data := scaffoldData{Name: name, Module: f.module, GoVersion: scaffoldGoVersion, PDKVersion: goPDKVersion, Template: f.template}
	if data.Module == "" {
		data.Module = name
	}
	seedSum, err := hangarSource(&data, f.hangarDir, env)
	if err != nil {
		return err
	}
	if err := writeScaffold(dir, files, &data, seedSum); err != nil {
		return err
	}
	tidyErr := tidy(ctx, dir, env)
	fmt.Fprintf(env.Stdout, "created %s: a plugin module named %s\n", dir, data.Module)
	for _, s := range files {
		fmt.Fprintf(env.Stdout, "  %s\n", filepath.Join(dir, s.file))
	}
	if tidyErr != nil {
		return tidyErr
	}
	fmt.Fprintf(env.Stdout, "  %s\n\nnext:\n  cd %s\n  make              # builds %s.wasm\n  go test ./...\n  hangar inspect %[3]s.wasm\n",
		filepath.Join(dir, "go.sum"), dir, name)
	return nil
}

// checkEmptyDir refuses a dir that exists and is not an empty directory.
func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty; give a new or empty directory", dir)
	}
	return nil
}

// hangarSource decides where the scaffold's Hangar module comes from (see
// the command's help) and sets data accordingly. For a checkout it returns
// the checkout's go.sum, which holds the checksums of every module the
// scaffold can need, so that go mod tidy works from the module cache alone.
func hangarSource(data *scaffoldData, flagDir string, env *Env) ([]byte, error) {
	if flagDir != "" {
		dir, err := filepath.Abs(flagDir)
		if err != nil {
			return nil, err
		}
		if err := checkCheckout(dir); err != nil {
			return nil, fmt.Errorf("--hangar-dir: %w", err)
		}
		return useCheckout(data, dir)
	}
	if dir := builtFrom(); dir != "" {
		fmt.Fprintf(env.Stderr, "hangar new: using the Hangar checkout this hangar was built from, %s (--hangar-dir chooses another)\n", dir)
		return useCheckout(data, dir)
	}
	if v := releaseVersion(); v != "" {
		data.HangarVersion = v
		return nil, nil
	}
	return nil, errors.New("this hangar was neither built from a Hangar checkout that is still here nor installed from a published version: give --hangar-dir PATH, a checkout of " + hangarModule)
}

func useCheckout(data *scaffoldData, dir string) ([]byte, error) {
	data.HangarVersion, data.HangarDir = localVersion, dir
	if strings.ContainsAny(dir, " \t\"'`\\") {
		data.HangarDir = strconv.Quote(dir)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return sum, nil
}

// checkCheckout checks that dir holds the module github.com/hangar-mcp/hangar.
func checkCheckout(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("%s is not a checkout of %s: %w", dir, hangarModule, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			if strings.Trim(f[1], `"`) == hangarModule {
				return nil
			}
			return fmt.Errorf("%s is not a checkout of %s: its go.mod declares module %s", dir, hangarModule, f[1])
		}
	}
	return fmt.Errorf("%s is not a checkout of %s: its go.mod declares no module", dir, hangarModule)
}

// builtFrom returns the Hangar checkout this binary was built from, if the
// binary records it (a build without -trimpath records the absolute paths
// of its source files) and it still holds Hangar's module. A module
// downloaded into the module cache (go install ...@VERSION) is not a
// checkout.
func builtFrom() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	dir := filepath.Dir(filepath.Dir(filepath.Dir(file))) // .../internal/cli/new.go
	if strings.Contains(filepath.Base(dir), "@") || checkCheckout(dir) != nil {
		return ""
	}
	return dir
}

// releaseVersion returns the version of Hangar's module this binary was
// built from, when that can be a published version: not a development
// build, not one with uncommitted changes.
func releaseVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path != hangarModule {
		return ""
	}
	v := bi.Main.Version
	if !strings.HasPrefix(v, "v") || strings.Contains(v, "+") {
		return ""
	}
	return v
}

// writeScaffold writes files into dir, and seedSum as its go.sum.
func writeScaffold(dir string, files []scaffoldFile, data *scaffoldData, seedSum []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range files {
		// The templates hold Go code, whose composite literals open
		// with "{{": their actions are written <%.Name%>.
		tmpl, err := template.New(path.Base(s.template)).Delims("<%", "%>").ParseFS(scaffold, "scaffold/"+s.template)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			return fmt.Errorf("%s: %w", s.template, err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.file), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if seedSum != nil {
		return os.WriteFile(filepath.Join(dir, "go.sum"), seedSum, 0o644)
	}
	return nil
}

// tidy runs go mod tidy in dir: from the module cache alone first, then
// with the module proxy the environment names.
func tidy(ctx context.Context, dir string, env *Env) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command was not found (%v): install Go %s or later (https://go.dev/dl), then run \"go mod tidy\" in %s to complete go.mod and go.sum", err, strings.TrimSuffix(scaffoldGoVersion, ".0"), dir)
	}
	run := func(extraEnv ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, gobin, "mod", "tidy")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), extraEnv...)
		return cmd.CombinedOutput()
	}
	if _, err := run("GOPROXY=off"); err == nil {
		return nil
	}
	fmt.Fprintf(env.Stderr, "hangar new: fetching the modules missing from the module cache (go mod tidy)\n")
	out, err := run()
	if err != nil {
		return fmt.Errorf("go mod tidy in %s failed: %v\n%s\nThe files are written. Without network, \"go mod tidy\" works once the module cache holds the modules (for example after building Hangar, or a plugin, on this machine); run it in %s then", dir, err, bytes.TrimSpace(out), dir)
	}
	return nil
}
