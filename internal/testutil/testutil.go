// Package testutil holds helpers shared by Hangar's tests: locating the
// repository, building WebAssembly plugins from Go packages and from the
// WebAssembly text fixtures in internal/testplugins/wat, and the
// compilation cache tests' engines share.
//
// Each Go package and each .wat file is built at most once per process;
// concurrent callers asking for the same one wait for that single build.
// Where the output goes depends on the environment:
//
//   - When $HANGAR_TEST_RUN_DIR names a directory (scripts/test.sh sets one
//     for the whole run), outputs go to its plugins/ subdirectory, named
//     after a hash of their inputs, and are built once per run: test
//     processes running at once (go test runs packages in parallel) take a
//     lock per output, so that one builds it and the others wait and use
//     it. The directory is the caller's to remove.
//   - Otherwise they go to one temporary directory per test process,
//     created on first use and not removed automatically.
//
// A package that uses the builders should remove its process's directory
// in TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testutil.Cleanup()
//		os.Exit(code)
//	}
package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// RunDirEnv is the environment variable naming the directory that test
// processes of one run share built plugins and compiled code through.
const RunDirEnv = "HANGAR_TEST_RUN_DIR"

var (
	rootOnce sync.Once
	rootDir  string

	mu     sync.Mutex
	tmpDir string                // per-process output directory; "" until first use
	builds = map[string]*build{} // by normalized package path or "wat:" + name
	nbuild int                   // numbers output files, so names never collide

	// goCache is the Go build cache when the process started: a test that
	// points XDG_CACHE_HOME elsewhere (t.Setenv) must not send builds to an
	// empty cache.
	goCache = func() string {
		if c := os.Getenv("GOCACHE"); c != "" {
			return c
		}
		if dir, err := os.UserCacheDir(); err == nil {
			return filepath.Join(dir, "go-build")
		}
		return ""
	}()

	srcOnce sync.Once
	srcHash string // of the module's sources, for the keys of Go builds
	srcErr  error
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
	path, err := Build(pkg)
	if err != nil {
		t.Fatalf("testutil.BuildPlugin(%q): %v", normalizePkg(pkg), err)
	}
	return path
}

// Build is BuildPlugin for programs that are not tests (the attack suite):
// it returns the error instead of failing a test.
func Build(pkg string) (string, error) {
	pkg = normalizePkg(pkg)
	return once(pkg, func() (string, error) {
		gobin, err := goBinary()
		if err != nil {
			return "", err
		}
		key := func() (string, error) {
			if filepath.IsAbs(pkg) && !strings.HasPrefix(pkg, Root()+string(filepath.Separator)) {
				return "", nil // sources outside the module: not hashed, not shared
			}
			src, err := moduleHash()
			if err != nil {
				return "", err
			}
			return hashOf("go", gobin, runtime.Version(), os.Getenv("GOFLAGS"), os.Getenv("GOEXPERIMENT"), src, pkg), nil
		}
		return produce(filepath.Base(pkg), key, func(out string) error {
			cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-trimpath", "-o", out, pkg)
			cmd.Dir = Root()
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			if goCache != "" {
				cmd.Env = append(cmd.Env, "GOCACHE="+goCache)
			}
			if msg, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("GOOS=wasip1 GOARCH=wasm %s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
			}
			return nil
		})
	})
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
	path, err := BuildWATFile(dir, name)
	if err != nil {
		t.Fatalf("testutil: assembling %s/%s.wat: %v", dir, name, err)
	}
	return path
}

// BuildWATFile is BuildWAT for programs that are not tests, for the .wat
// file name in internal/testplugins/<dir>.
func BuildWATFile(dir, name string) (string, error) {
	name = strings.TrimSuffix(name, ".wat")
	return once("wat:"+dir+"/"+name, func() (string, error) {
		tool, err := exec.LookPath("wat2wasm")
		if err != nil {
			return "", errors.New("wat2wasm not found: apt-get install wabt")
		}
		src := filepath.Join(Root(), "internal", "testplugins", dir, name+".wat")
		text, err := os.ReadFile(src)
		if err != nil {
			return "", err
		}
		key := func() (string, error) { return hashOf("wat", tool, string(text)), nil }
		return produce(dir+"-"+name, key, func(out string) error {
			cmd := exec.Command(tool, src, "-o", out)
			if msg, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
			}
			return nil
		})
	})
}

// CacheDir returns the compilation cache directory for the engines of
// tests (plugin.NewEngine(testutil.CacheDir())): the run's, shared by every
// test process, when $HANGAR_TEST_RUN_DIR is set, so that a plugin is
// compiled once per run; otherwise "", an in-memory cache. Tests that
// corrupt or count a cache's entries must use a directory of their own.
func CacheDir() string {
	dir := os.Getenv(RunDirEnv)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "compiled")
}

// ShareCompiledCache makes cacheHome, the XDG_CACHE_HOME of hangar
// commands under test, use the run's compilation cache: it links
// cacheHome/hangar/compiled (the default --cache-dir) to CacheDir(), so
// that the commands of every test compile a plugin once per run, while
// their caches of fetched modules stay their own. Without a run directory
// it does nothing. It returns cacheHome.
func ShareCompiledCache(t testing.TB, cacheHome string) string {
	t.Helper()
	dir := CacheDir()
	if dir == "" {
		return cacheHome
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(cacheHome, "hangar", "compiled")
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	return cacheHome
}

// Cleanup removes the process's directory of built modules and forgets
// them, so a later Build* call builds again. Modules built in the run
// directory stay there. Call it after m.Run in TestMain, when no build is
// running.
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

// produce returns the file make builds for the output called name. Without
// a run directory it is a fresh file in the process's directory. With one
// it is <run>/plugins/<name>-<key>.wasm, made once: the first process to
// want it builds it under a lock while the others wait, and later ones
// find it. key is called only with a run directory; it returns "" for an
// output that is not to be shared.
func produce(name string, key func() (string, error), make func(out string) error) (string, error) {
	k := ""
	if run := os.Getenv(RunDirEnv); run != "" {
		var err error
		if k, err = key(); err != nil {
			return "", err
		}
	}
	if k == "" {
		out, err := outputPath(name)
		if err != nil {
			return "", err
		}
		return out, make(out)
	}
	run := os.Getenv(RunDirEnv)
	dir := filepath.Join(run, "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name+"-"+k[:20]+".wasm")
	if fileExists(out) { // only ever renamed into place, whole
		return out, nil
	}
	unlock, err := lockFile(out + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if fileExists(out) { // built while we waited
		return out, nil
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+name+"-*.wasm")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := make(tmp.Name()); err != nil {
		return "", err
	}
	return out, os.Rename(tmp.Name(), out)
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
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

// hashOf is the hex SHA-256 of its arguments, each length-prefixed.
func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// moduleHash hashes what a plugin's build can depend on inside the
// repository: every file but tests, built modules and the directories
// .git, node_modules, testdata and test/bin. It errs on the side of
// rebuilding: any edit to the module's sources changes every Go plugin's
// key. Dependencies outside the module are pinned by go.sum, which is
// hashed too.
func moduleHash() (string, error) {
	srcOnce.Do(func() {
		root := Root()
		var files []string
		srcErr = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				switch d.Name() {
				case ".git", "node_modules", "testdata":
					return filepath.SkipDir
				}
				if rel == filepath.Join("test", "bin") {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			if !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".wasm") {
				return nil
			}
			files = append(files, rel)
			return nil
		})
		if srcErr != nil {
			return
		}
		sort.Strings(files)
		h := sha256.New()
		for _, rel := range files {
			f, err := os.Open(filepath.Join(root, rel))
			if err != nil {
				srcErr = err
				return
			}
			fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				srcErr = err
				return
			}
			h.Write([]byte{0})
		}
		srcHash = hex.EncodeToString(h.Sum(nil))
	})
	return srcHash, srcErr
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
