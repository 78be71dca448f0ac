// Package testutil holds helpers shared by Hangar's tests: locating the
// repository and building WebAssembly plugins from Go packages and from the
// WebAssembly text fixtures in internal/testplugins/wat.
//
// Built modules go to one temporary directory per test process, created on
// first use. Each Go package and each .wat file is built at most once per
// process; concurrent callers asking for the same one wait for that single
// build. The directory is not removed automatically. A package that uses the
// builders should remove it in TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testutil.Cleanup()
//		os.Exit(code)
//	}
package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	rootOnce sync.Once
	rootDir  string

	mu     sync.Mutex
	tmpDir string                // per-process output directory; "" until first use
	builds = map[string]*build{} // by normalized package path or "wat:" + name
	nbuild int                   // numbers output files, so names never collide
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Root returns the repository root: the nearest directory at or above this
// source file (or, failing that, the working directory) holding a go.mod.
// It panics when there is none.
func Root() string {
	rootOnce.Do(func() {
		var starts []string
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			starts = append(starts, filepath.Dir(file))
		}
		if wd, err := os.Getwd(); err == nil {
			starts = append(starts, wd)
		}
		for _, dir := range starts {
			if r, ok := findGoMod(dir); ok {
				rootDir = r
				return
			}
		}
	})
	if rootDir == "" {
		panic("testutil: no go.mod found above the source or working directory")
	}
	return rootDir
}

func findGoMod(dir string) (string, bool) {
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// BuildPlugin compiles the Go package pkg to a WebAssembly plugin with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath and returns
// the path of the .wasm file. pkg is relative to the repository root
// ("./examples/hello" or "examples/hello"); an absolute directory or a full
// import path works too. A failed build fails t with the compiler's output.
func BuildPlugin(t testing.TB, pkg string) string {
	t.Helper()
	pkg = normalizePkg(pkg)
	path, err := once(pkg, func() (string, error) {
		gobin, err := goBinary()
		if err != nil {
			return "", err
		}
		out, err := outputPath(filepath.Base(pkg))
		if err != nil {
			return "", err
		}
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-trimpath", "-o", out, pkg)
		cmd.Dir = Root()
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("GOOS=wasip1 GOARCH=wasm %s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
		}
		return out, nil
	})
	if err != nil {
		t.Fatalf("testutil.BuildPlugin(%q): %v", pkg, err)
	}
	return path
}

// BuildWAT assembles internal/testplugins/wat/<name>.wat with wat2wasm and
// returns the path of the .wasm file. name may carry the .wat suffix. t fails
// when wat2wasm is not installed (Debian package wabt) or the file does not
// assemble.
func BuildWAT(t testing.TB, name string) string {
	t.Helper()
	return buildWAT(t, "wat", name)
}

// BuildHostileWAT is BuildWAT for internal/testplugins/hostile/<name>.wat.
func BuildHostileWAT(t testing.TB, name string) string {
	t.Helper()
	return buildWAT(t, "hostile", name)
}

func buildWAT(t testing.TB, dir, name string) string {
	t.Helper()
	name = strings.TrimSuffix(name, ".wat")
	path, err := once("wat:"+dir+"/"+name, func() (string, error) {
		tool, err := exec.LookPath("wat2wasm")
		if err != nil {
			return "", errors.New("wat2wasm not found: apt-get install wabt")
		}
		src := filepath.Join(Root(), "internal", "testplugins", dir, name+".wat")
		if _, err := os.Stat(src); err != nil {
			return "", err
		}
		out, err := outputPath(dir + "-" + name)
		if err != nil {
			return "", err
		}
		cmd := exec.Command(tool, src, "-o", out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
		}
		return out, nil
	})
	if err != nil {
		t.Fatalf("testutil: assembling %s/%s.wat: %v", dir, name, err)
	}
	return path
}

// Cleanup removes the directory holding the built modules and forgets them,
// so a later Build* call builds again. Call it after m.Run in TestMain, when
// no build is running.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
		tmpDir = ""
	}
	builds = map[string]*build{}
}

// once runs f for key the first time key is asked for, and hands every
// caller, including those that arrive while f runs, its result.
func once(key string, f func() (string, error)) (string, error) {
	mu.Lock()
	b := builds[key]
	if b == nil {
		b = &build{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = f() })
	return b.path, b.err
}

// outputPath returns a fresh file name in the process's output directory.
func outputPath(base string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if tmpDir == "" {
		d, err := os.MkdirTemp("", "hangar-testutil-")
		if err != nil {
			return "", err
		}
		tmpDir = d
	}
	nbuild++
	return filepath.Join(tmpDir, fmt.Sprintf("%d-%s.wasm", nbuild, base)), nil
}

// normalizePkg turns a repository-relative directory into the ./ form go
// build wants, leaving absolute directories and import paths alone.
func normalizePkg(pkg string) string {
	if filepath.IsAbs(pkg) {
		return filepath.Clean(pkg)
	}
	pkg = filepath.ToSlash(pkg)
	first, _, _ := strings.Cut(pkg, "/")
	if strings.HasPrefix(pkg, ".") || !strings.Contains(first, ".") {
		return "./" + filepath.ToSlash(filepath.Clean(pkg))
	}
	return pkg
}

// goBinary finds the go command of the toolchain running the tests, falling
// back to the one on PATH.
func goBinary() (string, error) {
	if goroot := runtime.GOROOT(); goroot != "" {
		p := filepath.Join(goroot, "bin", "go")
		if runtime.GOOS == "windows" {
			p += ".exe"
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go command not found: %w", err)
	}
	return p, nil
}
