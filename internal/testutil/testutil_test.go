package testutil

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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
