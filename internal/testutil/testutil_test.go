package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

var wasmMagic = []byte("\x00asm")

func checkWasm(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, wasmMagic) {
		n := min(len(b), 8)
		t.Fatalf("%s does not start with the wasm magic: % x", path, b[:n])
	}
}

func TestRoot(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(Root(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module github.com/hangar-mcp/hangar\n") {
		t.Errorf("go.mod at %s is not Hangar's", Root())
	}
}

func TestNormalizePkg(t *testing.T) {
	for in, want := range map[string]string{
		"./examples/hello":                    "./examples/hello",
		"examples/hello":                      "./examples/hello",
		"examples/hello/":                     "./examples/hello",
		"../x":                                "./../x",
		"/abs/dir":                            "/abs/dir",
		"github.com/hangar-mcp/hangar/x/y":    "github.com/hangar-mcp/hangar/x/y",
		"./internal/testplugins/legacy/./":    "./internal/testplugins/legacy",
		"internal/testplugins/../testplugins": "./internal/testplugins",
	} {
		if got := normalizePkg(in); got != want {
			t.Errorf("normalizePkg(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBuildPlugin(t *testing.T) {
	// Concurrent callers of one package share a single build. Fatalf may
	// only end the test goroutine, so the others record failures.
	const n = 4
	paths := make([]string, n)
	recs := make([]*fatalRecorder, n)
	var wg sync.WaitGroup
	for i := range n {
		pkg := "./internal/testplugins/legacy"
		if i%2 == 1 {
			pkg = "internal/testplugins/legacy"
		}
		recs[i] = &fatalRecorder{TB: t}
		wg.Go(func() { paths[i] = BuildPlugin(recs[i], pkg) })
	}
	wg.Wait()
	for _, r := range recs {
		if r.msg != "" {
			t.Fatal(r.msg)
		}
	}
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("builds of one package gave different paths: %q", paths)
		}
	}
	checkWasm(t, paths[0])

	servlet := BuildPlugin(t, "./internal/testplugins/servlet")
	if servlet == paths[0] {
		t.Fatalf("two packages built to one path %s", servlet)
	}
	checkWasm(t, servlet)
}

func TestBuildPluginFailure(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		BuildPlugin(ft, "./internal/testplugins/does-not-exist")
	}()
	<-done
	t.Logf("reported: %s", ft.msg)
	if !strings.Contains(ft.msg, "does-not-exist") || !strings.Contains(ft.msg, "go build") {
		t.Errorf("failed build reported %q", ft.msg)
	}
}

func TestBuildWATWithoutTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		BuildWAT(ft, "no-tool-check")
	}()
	<-done
	if !strings.Contains(ft.msg, "wat2wasm not found: apt-get install wabt") {
		t.Errorf("missing wat2wasm reported %q", ft.msg)
	}
}

func TestCleanup(t *testing.T) {
	t.Setenv(RunDirEnv, "") // the process's own directory
	p := BuildWAT(t, "trap")
	Cleanup()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("after Cleanup, stat %s: %v", p, err)
	}
	checkWasm(t, BuildWAT(t, "trap"))
}

// TestBuildWAT assembles every fixture, so a broken .wat shows up here.
func TestBuildWAT(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(Root(), "internal", "testplugins", "wat", "*.wat"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .wat fixtures found (%v)", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".wat")
		t.Run(name, func(t *testing.T) {
			p := BuildWAT(t, name)
			checkWasm(t, p)
			if again := BuildWAT(t, name+".wat"); again != p {
				t.Errorf("second build gave %s, first %s", again, p)
			}
		})
	}
}

// TestProduceOncePerKey: with a run directory, an output is made once per
// key, however many callers want it at once (each opens the lock on its
// own, as separate processes do), and another key makes another output.
func TestProduceOncePerKey(t *testing.T) {
	t.Setenv(RunDirEnv, t.TempDir())
	var made atomic.Int64
	mk := func(out string) error {
		made.Add(1)
		return os.WriteFile(out, []byte("\x00asm"), 0o644)
	}
	key := func(k string) func() (string, error) { return func() (string, error) { return hashOf(k), nil } }
	paths := make([]string, 8)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() {
			p, err := produce("x", key("one"), mk)
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("one key gave paths %q", paths)
		}
	}
	if made.Load() != 1 {
		t.Errorf("made %d times for one key, want once", made.Load())
	}
	if !strings.HasPrefix(paths[0], filepath.Join(os.Getenv(RunDirEnv), "plugins")+string(filepath.Separator)) {
		t.Errorf("output %s is not in the run directory", paths[0])
	}
	other, err := produce("x", key("two"), mk)
	if err != nil || other == paths[0] || made.Load() != 2 {
		t.Errorf("another key: %s, %v, made %d times", other, err, made.Load())
	}
	// A failed make leaves nothing behind, and the next caller tries again.
	if _, err := produce("x", key("three"), func(string) error { return fmt.Errorf("no") }); err == nil {
		t.Error("a failed make succeeded")
	}
	if p, err := produce("x", key("three"), mk); err != nil || !fileExists(p) {
		t.Errorf("after a failed make: %s, %v", p, err)
	}
}

// TestBuildSharedAcrossProcesses: test processes of one run that build the
// same plugin at once get one build of it: one waits for the other.
func TestBuildSharedAcrossProcesses(t *testing.T) {
	if os.Getenv("TESTUTIL_HELPER") == "1" {
		p, err := Build("./internal/testplugins/legacy")
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Printf("BUILT %s %d\n", p, st.Ino)
		os.Exit(0)
	}
	run := t.TempDir()
	outs := make([][]byte, 3)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBuildSharedAcrossProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TESTUTIL_HELPER=1", RunDirEnv+"="+run)
			outs[i], _ = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	var first string
	for _, out := range outs {
		line := ""
		for l := range strings.Lines(string(out)) {
			if strings.HasPrefix(l, "BUILT ") {
				line = strings.TrimSpace(l)
			}
		}
		if line == "" {
			t.Fatalf("helper: %s", out)
		}
		if first == "" {
			first = line
		} else if line != first {
			t.Errorf("two processes got %q and %q, want one build", first, line)
		}
	}
	t.Log(first)
	entries, _ := filepath.Glob(filepath.Join(run, "plugins", "*.wasm"))
	if len(entries) != 1 {
		t.Errorf("run directory holds %v, want one module", entries)
	}
}

func TestShareCompiledCache(t *testing.T) {
	home := t.TempDir()
	t.Setenv(RunDirEnv, "")
	if got := ShareCompiledCache(t, home); got != home || CacheDir() != "" {
		t.Fatalf("without a run directory: %s, CacheDir %q", got, CacheDir())
	}
	if _, err := os.Lstat(filepath.Join(home, "hangar")); !os.IsNotExist(err) {
		t.Errorf("without a run directory, %s/hangar was made: %v", home, err)
	}
	run := t.TempDir()
	t.Setenv(RunDirEnv, run)
	ShareCompiledCache(t, home)
	target, err := os.Readlink(filepath.Join(home, "hangar", "compiled"))
	if err != nil || target != filepath.Join(run, "compiled") || CacheDir() != target {
		t.Errorf("link to %q, %v; CacheDir %q", target, err, CacheDir())
	}
}

// fatalRecorder records Fatalf instead of failing the test; like the real
// one, it ends the calling goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
