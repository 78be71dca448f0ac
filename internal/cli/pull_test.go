package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/source/registrytest"
	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/verify"
)

func TestMain(m *testing.M) {
	code := m.Run()
	registrytest.Cleanup()
	testutil.Cleanup()
	os.Exit(code)
}

// isolate gives the test its own cache directory (but for compiled code,
// shared by the run: see testutil.ShareCompiledCache) and no Docker
// credentials.
func isolate(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", testutil.ShareCompiledCache(t, t.TempDir()))
	t.Setenv("DOCKER_CONFIG", t.TempDir())
}

// hangar runs the command line in process.
func hangar(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(context.Background(), args, &Env{Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e})
	return o.String(), e.String(), code
}

// field returns the value of "key: value" in output.
func field(t *testing.T, out, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + `:\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s in output:\n%s", key, out)
	}
	return m[1]
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	h, err := (&source.Resolver{}).Resolve(context.Background(), config.Plugin{Kind: config.SourceFile, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return h.SHA256()
}

func TestPullPushHelp(t *testing.T) {
	out, _, code := hangar(t, "help")
	if code != 0 || !strings.Contains(out, "  pull ") || !strings.Contains(out, "  push ") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
	for cmd, flags := range map[string][]string{
		"pull": {"-config", "-update", "-offline", "-sha256", "-plain-http", "-log-level"},
		"push": {"-plain-http", "-log-level"},
	} {
		out, _, code := hangar(t, cmd, "--help")
		if code != 0 {
			t.Errorf("%s --help: exit %d", cmd, code)
		}
		for _, f := range flags {
			if !strings.Contains(out, f) {
				t.Errorf("%s --help does not describe %s:\n%s", cmd, f, out)
			}
		}
	}
	for _, args := range [][]string{{"pull"}, {"push", "x.wasm"}, {"pull", "a", "b"}, {"pull", "--config", "x.yaml", "oci://r/a:1"}} {
		if _, _, code := hangar(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

func TestPushPullCommands(t *testing.T) {
	reg := registrytest.Start(t)
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	isolate(t)
	ref := reg.Ref("hangar/legacy:1.0")

	out, errOut, code := hangar(t, "push", wasm, ref)
	if code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	pinned := field(t, out, "reference")
	manifest := field(t, out, "manifest")
	sha := field(t, out, "sha256")
	if pinned != reg.Ref("hangar/legacy@"+manifest) || sha != fileSHA256(t, wasm) || field(t, out, "pushed") != ref {
		t.Errorf("push output:\n%s", out)
	}

	// Pull into a fresh cache.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out, errOut, code = hangar(t, "pull", ref)
	if code != 0 {
		t.Fatalf("pull: exit %d\n%s%s", code, out, errOut)
	}
	if field(t, out, "reference") != pinned || field(t, out, "manifest") != manifest || field(t, out, "sha256") != sha {
		t.Errorf("pull output:\n%s", out)
	}
	if p := field(t, out, "path"); p != filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hangar", "sources", "blobs", "sha256", sha) {
		t.Errorf("cached at %s", p)
	}
	if _, errOut, code := hangar(t, "pull", "--sha256", strings.Repeat("0", 64), pinned); code != 1 || !strings.Contains(errOut, "digest mismatch") {
		t.Errorf("pull with a wrong --sha256: exit %d, %s", code, errOut)
	}
	if _, errOut, code := hangar(t, "pull", "--plain-http", "oci://registry.example.test/a:1"); code != 1 || !strings.Contains(errOut, "not a loopback address") {
		t.Errorf("--plain-http to a remote registry: exit %d, %s", code, errOut)
	}
	if _, errOut, code := hangar(t, "push", "--plain-http", wasm, "oci://registry.example.test/a:1"); code != 1 || !strings.Contains(errOut, "not a loopback address") {
		t.Errorf("push --plain-http to a remote registry: exit %d, %s", code, errOut)
	}
	if _, errOut, code := hangar(t, "push", wasm, reg.Ref("hangar/legacy@"+manifest)); code != 1 || !strings.Contains(errOut, "push to a tag") {
		t.Errorf("push to a digest: exit %d, %s", code, errOut)
	}
	notWasm := filepath.Join(t.TempDir(), "x.wasm")
	os.WriteFile(notWasm, []byte("text"), 0o644)
	if _, errOut, code := hangar(t, "push", notWasm, ref); code != 1 || !strings.Contains(errOut, "not a WebAssembly module") {
		t.Errorf("push text: exit %d, %s", code, errOut)
	}
}

// TestServeOCI loads oci:// plugins through loadPlugins, the path serve
// takes: the lock file is written, a moved tag changes nothing, the cache
// serves with the registry gone, and pull --config manages the lock.
func TestServeOCI(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	servlet := testutil.BuildPlugin(t, "./internal/testplugins/servlet")
	isolate(t)
	tag := reg.Ref("hangar/tool:stable")
	if _, errOut, code := hangar(t, "push", legacy, tag); code != 0 {
		t.Fatalf("push: %s", errOut)
	}

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hangar.yaml")
	os.WriteFile(filepath.Join(dir, "local.wasm"), mustRead(t, servlet), 0o644)
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`plugins:
  - name: tool
    source: %s
    verify: false
  - name: local
    path: local.wasm
`, tag)), 0o644)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	engine, err := plugin.NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	// tools loads the configuration and lists the tools of plugin "tool".
	tools := func() (string, error) {
		t.Helper()
		cfg, err := config.Load(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := loadPlugins(ctx, engine, cfg.Plugins, log)
		if err != nil {
			return "", err
		}
		defer closeAll(ctx, ps)
		list, err := ps[0].ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list {
			names = append(names, tool.Name)
		}
		return strings.Join(names, ","), nil
	}
	legacyTools, err := tools()
	if err != nil || !strings.Contains(legacyTools, "reverse") {
		t.Fatalf("first load: %q, %v", legacyTools, err)
	}
	if !strings.Contains(logs.String(), "signature verification is disabled") {
		t.Errorf("no warning for verify: false:\n%s", logs.String())
	}
	lockPath := filepath.Join(dir, "hangar.lock")
	var lf struct {
		Plugins map[string]source.LockEntry
	}
	if err := json.Unmarshal(mustRead(t, lockPath), &lf); err != nil {
		t.Fatal(err)
	}
	if e := lf.Plugins["tool"]; e.Source != tag || e.SHA256 != fileSHA256(t, legacy) || e.Manifest == "" || e.Verify != "disabled" {
		t.Errorf("lock entry for tool: %+v", e)
	}
	if e := lf.Plugins["local"]; e.Source != "local.wasm" || e.SHA256 != fileSHA256(t, servlet) {
		t.Errorf("lock entry for local: %+v", e)
	}

	// The tag moves to another plugin; the lock keeps the first.
	if _, errOut, code := hangar(t, "push", servlet, tag); code != 0 {
		t.Fatalf("push: %s", errOut)
	}
	if got, err := tools(); err != nil || got != legacyTools {
		t.Errorf("after the tag moved: %q, %v; want the locked %q", got, err, legacyTools)
	}
	// pull --config --update follows the tag and rewrites the lock.
	out, errOut, code := hangar(t, "pull", "--config", cfgPath, "--update")
	if code != 0 || !strings.Contains(out, "locked 2 plugins in "+lockPath) {
		t.Fatalf("pull --update: exit %d\n%s%s", code, out, errOut)
	}
	servletTools, err := tools()
	if err != nil || servletTools == legacyTools {
		t.Errorf("after pull --update: %q, %v", servletTools, err)
	}

	// With the registry gone, the lock and the cache suffice.
	reg.Stop()
	if got, err := tools(); err != nil || got != servletTools {
		t.Errorf("registry stopped: %q, %v", got, err)
	}
	if out, errOut, code := hangar(t, "pull", "--config", cfgPath, "--offline"); code != 0 || !strings.Contains(out, "(locked)") {
		t.Errorf("pull --offline: exit %d\n%s%s", code, out, errOut)
	}
	// An emptied cache with the registry gone: a clear error.
	filledCache := os.Getenv("XDG_CACHE_HOME")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if _, errOut, code := hangar(t, "pull", "--config", cfgPath, "--offline"); code != 1 || !strings.Contains(errOut, "not available offline") {
		t.Errorf("pull --offline, empty cache: exit %d, %s", code, errOut)
	}
	if _, err := tools(); err == nil || !strings.Contains(err.Error(), "plugin tool:") || errors.Is(err, source.ErrOffline) {
		t.Errorf("empty cache, registry stopped: %v", err)
	}
	// serve --offline: the same, without trying the network.
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := loadPlugins(withOffline(ctx, true), engine, cfg.Plugins, log)
	closeAll(ctx, ps)
	if !errors.Is(err, source.ErrOffline) {
		t.Errorf("offline, empty cache: %v, want ErrOffline", err)
	}

	// pull --config drops entries of plugins no longer configured.
	t.Setenv("XDG_CACHE_HOME", filledCache)
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("plugins:\n  - name: tool\n    source: %s\n    verify: false\n", tag)), 0o644)
	if out, errOut, code := hangar(t, "pull", "--config", cfgPath); code != 0 || !strings.Contains(out, "locked 1 plugins") {
		t.Errorf("pull --config: exit %d\n%s%s", code, out, errOut)
	}
	lf.Plugins = nil
	json.Unmarshal(mustRead(t, lockPath), &lf)
	if _, ok := lf.Plugins["local"]; ok || len(lf.Plugins) != 1 {
		t.Errorf("lock after removing a plugin: %+v", lf.Plugins)
	}
	locked := string(mustRead(t, lockPath))

	// A configuration of local files only has no lock file: pull and serve
	// leave the existing one alone, and write none where there is none.
	os.WriteFile(cfgPath, []byte("plugins:\n  - name: local\n    path: local.wasm\n"), 0o644)
	if out, errOut, code := hangar(t, "pull", "--config", cfgPath); code != 0 || !strings.Contains(out, "no lock file: every plugin of "+cfgPath+" is a local file") {
		t.Errorf("pull --config, local files only: exit %d\n%s%s", code, out, errOut)
	}
	if got := string(mustRead(t, lockPath)); got != locked {
		t.Errorf("a configuration of local files changed the lock file:\n%s", got)
	}
	localDir := t.TempDir()
	os.WriteFile(filepath.Join(localDir, "local.wasm"), mustRead(t, servlet), 0o644)
	localCfg := filepath.Join(localDir, "hangar.yaml")
	os.WriteFile(localCfg, []byte("plugins:\n  - name: local\n    path: local.wasm\n  - name: pinned\n    path: local.wasm\n    sha256: "+fileSHA256(t, servlet)+"\n"), 0o644)
	cfg, err = config.Load(localCfg)
	if err != nil {
		t.Fatal(err)
	}
	ps, err = loadPlugins(ctx, engine, cfg.Plugins, log)
	closeAll(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(localDir); len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("serving local files wrote into the directory: %v", names)
	}

	// A second configuration beside hangar.yaml gets its own lock file,
	// taking its plugins' entries from the hangar.lock every configuration
	// shared before: with the registry gone, the tag resolves as locked.
	teamCfg := filepath.Join(dir, "team.yaml")
	os.WriteFile(teamCfg, []byte(fmt.Sprintf("plugins:\n  - name: tool\n    source: %s\n    verify: false\n  - name: other\n    path: local.wasm\n", tag)), 0o644)
	cfg, err = config.Load(teamCfg)
	if err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	ps, err = loadPlugins(ctx, engine, cfg.Plugins, log)
	if err != nil {
		t.Fatalf("team.yaml, registry gone: %v\n%s", err, logs.String())
	}
	closeAll(ctx, ps)
	teamLock := filepath.Join(dir, "team.lock")
	var team struct{ Plugins map[string]source.LockEntry }
	if err := json.Unmarshal(mustRead(t, teamLock), &team); err != nil {
		t.Fatal(err)
	}
	if team.Plugins["tool"] != lf.Plugins["tool"] || team.Plugins["other"].SHA256 != fileSHA256(t, servlet) || len(team.Plugins) != 2 {
		t.Errorf("team.lock = %+v, want tool's entry from hangar.lock %+v and other", team.Plugins, lf.Plugins["tool"])
	}
	if !strings.Contains(logs.String(), "lock entries taken from the lock file every configuration in the directory shared before") {
		t.Errorf("the migration is not logged:\n%s", logs.String())
	}
	if got := string(mustRead(t, lockPath)); got != locked {
		t.Errorf("team.yaml changed hangar.lock:\n%s", got)
	}
	// Once team.lock exists, hangar.lock is not read for it: an entry
	// removed from team.lock is resolved again (and fails without the
	// registry) rather than taken from hangar.lock again.
	os.WriteFile(teamLock, []byte(`{"version": 1, "plugins": {}}`), 0o644)
	ps, err = loadPlugins(ctx, engine, cfg.Plugins, log)
	closeAll(ctx, ps)
	if err == nil || !strings.Contains(err.Error(), "plugin tool:") {
		t.Errorf("entry removed from team.lock, registry gone: %v", err)
	}
}

// TestServeRefusals: what loadPlugins refuses before running anything.
func TestServeRefusals(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	isolate(t)
	out, errOut, code := hangar(t, "push", legacy, reg.Ref("hangar/signed:1"))
	if code != 0 {
		t.Fatalf("push: %s", errOut)
	}
	layer := field(t, out, "sha256")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cosign.pub"), []byte("a key"), 0o644)
	engine, err := plugin.NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	load := func(body string) error {
		t.Helper()
		path := filepath.Join(dir, "hangar.yaml")
		os.WriteFile(path, []byte(body), 0o644)
		cfg, err := config.Load(path)
		if err != nil {
			return err
		}
		ps, err := loadPlugins(ctx, engine, cfg.Plugins, slog.New(slog.NewTextHandler(io.Discard, nil)))
		closeAll(ctx, ps)
		return err
	}
	// A key file that holds no public key is refused as a policy error
	// (signed plugins are tested in verify_test.go).
	err = load(fmt.Sprintf("plugins:\n  - name: s\n    source: %s\n    verify: {key: cosign.pub}\n", reg.Ref("hangar/signed:1")))
	if !errors.Is(err, source.ErrUnsigned) || !errors.Is(err, verify.ErrPolicy) {
		t.Errorf("key policy with an unusable key: %v", err)
	}
	// A pin that does not match.
	err = load(fmt.Sprintf("plugins:\n  - name: s\n    source: %s\n    sha256: %s\n    verify: false\n", reg.Ref("hangar/signed:1"), strings.Repeat("a", 64)))
	if !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("wrong pin: %v", err)
	}
	// The tampered module in the registry (push cached the module: start
	// from an empty cache).
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	blob := reg.BlobPath(layer)
	b := mustRead(t, blob)
	b[len(b)/2] ^= 1
	os.WriteFile(blob, b, 0o644)
	err = load(fmt.Sprintf("plugins:\n  - name: t\n    source: %s\n    verify: false\n", reg.Ref("hangar/signed:1")))
	if !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("tampered module: %v", err)
	}
	// A file whose pin does not match.
	os.WriteFile(filepath.Join(dir, "p.wasm"), mustRead(t, legacy), 0o644)
	err = load(fmt.Sprintf("plugins:\n  - name: f\n    path: p.wasm\n    sha256: %s\n", strings.Repeat("b", 64)))
	if !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("file pin: %v", err)
	}
	// https without sha256 never gets that far.
	err = load("plugins:\n  - name: h\n    source: https://plugins.example.test/p.wasm\n")
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "needs a sha256 pin") {
		t.Errorf("https without sha256: %v", err)
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
