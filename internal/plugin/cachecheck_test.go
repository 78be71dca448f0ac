package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestCacheHelperProcess is not a test: TestCompiledCacheCorruption runs
// the test binary with it as a separate process, which may crash. It loads
// the module $HANGAR_CACHE_WASM with the compilation cache in
// $HANGAR_CACHE_DIR and calls its echo tool: through NewEngine when
// $HANGAR_CACHE_HELPER is "hangar", or with the cache opened by wazero
// alone (no checks, as before cachecheck.go) when it is "unchecked".
func TestCacheHelperProcess(t *testing.T) {
	mode := os.Getenv("HANGAR_CACHE_HELPER")
	if mode == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	dir := os.Getenv("HANGAR_CACHE_DIR")
	wasm, err := os.ReadFile(os.Getenv("HANGAR_CACHE_WASM"))
	if err != nil {
		fmt.Println("HELPER ERROR:", err)
		os.Exit(3)
	}
	var e *Engine
	if mode == "hangar" {
		e, err = NewEngine(dir)
	} else {
		var c wazero.CompilationCache
		c, err = wazero.NewCompilationCacheWithDir(dir)
		e = &Engine{cache: c}
	}
	if err != nil {
		fmt.Println("HELPER ERROR:", err)
		os.Exit(3)
	}
	p, err := e.Load(ctx, wasm, Options{Name: "echo"})
	if err != nil {
		fmt.Println("HELPER ERROR:", err)
		os.Exit(3)
	}
	res, err := p.CallTool(ctx, nil, "echo", json.RawMessage(`{"text":"still here"}`))
	if err != nil {
		fmt.Println("HELPER ERROR:", err)
		os.Exit(3)
	}
	b, _ := json.Marshal(res)
	fmt.Printf("HELPER RESULT: %s\n", b)
	p.Close(ctx)
	e.Close(ctx)
	os.Exit(0)
}

// runHelper runs TestCacheHelperProcess in a new process.
func runHelper(t *testing.T, mode, dir, wasm string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCacheHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HANGAR_CACHE_HELPER="+mode, "HANGAR_CACHE_DIR="+dir, "HANGAR_CACHE_WASM="+wasm)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// cacheEntries returns the entry files of a compilation cache directory.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".tmp") {
			out = append(out, f)
		}
	}
	return out
}

// TestCompiledCacheCorruption corrupts the compilation cache as was seen
// to break Hangar for good (a flipped byte in the machine code: every
// start refused; a shifted function-offset table: every start crashed)
// and checks that Hangar, in a separate process, detects the corruption,
// compiles again and serves the call, leaving a good cache behind.
func TestCompiledCacheCorruption(t *testing.T) {
	wasmPath := testutil.BuildWAT(t, "echo")
	for _, tc := range testutil.CacheCorruptions {
		t.Run(tc.Name, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := runHelper(t, "hangar", dir, wasmPath); err != nil || !strings.Contains(out, "still here") {
				t.Fatalf("first run: %v\n%s", err, out)
			}
			entries := cacheEntries(t, dir)
			if len(entries) == 0 {
				t.Fatal("no cache entries written")
			}
			sums := readSums(dir)
			corrupted := map[string][]byte{}
			for _, e := range entries {
				b, err := os.ReadFile(e)
				if err != nil {
					t.Fatal(err)
				}
				rel := filepath.Base(filepath.Dir(e)) + "/" + filepath.Base(e)
				if h, _ := hashEntry(e); sums[rel] != h {
					t.Errorf("entry %s not recorded: %q vs %q", rel, sums[rel], h)
				}
				if !tc.Corrupt(b) {
					continue
				}
				os.Chmod(e, 0o600)
				if err := os.WriteFile(e, b, 0o600); err != nil {
					t.Fatal(err)
				}
				corrupted[e] = b
			}
			if len(corrupted) == 0 {
				t.Fatal("no entry in wazero's format to corrupt")
			}
			// Keep a copy: the unchecked run below may repair it itself.
			backup := t.TempDir()
			copyDir(t, dir, backup)
			// The corruption is real: without Hangar's check, the start
			// fails (or the process crashes), or the module no longer
			// compiles instrumented and runs under the slower fallback guard.
			out, err := runHelper(t, "unchecked", backup, wasmPath)
			if err == nil && !strings.Contains(out, "not instrumented") {
				t.Errorf("the corrupted cache did no harm without the check; the test corrupts nothing that matters:\n%s", out)
			}
			t.Logf("without the check: %v\n%s", err, lastLines(out, 4))

			out, err = runHelper(t, "hangar", dir, wasmPath)
			if err != nil || !strings.Contains(out, `still here`) {
				t.Fatalf("hangar on the corrupted cache: %v\n%s", err, out)
			}
			if strings.Contains(out, "not instrumented") {
				t.Errorf("hangar on the corrupted cache fell back to the slower guard:\n%s", out)
			}
			sums = readSums(dir)
			for e, bad := range corrupted {
				b, err := os.ReadFile(e)
				if err != nil {
					t.Errorf("entry %s not recompiled: %v", e, err)
					continue
				}
				if bytes.Equal(b, bad) {
					t.Errorf("entry %s still corrupted", e)
				}
				rel := filepath.Base(filepath.Dir(e)) + "/" + filepath.Base(e)
				if h, _ := hashEntry(e); sums[rel] != h {
					t.Errorf("recompiled entry %s not recorded", rel)
				}
			}
			// And a third start uses the cache as it is.
			if out, err := runHelper(t, "hangar", dir, wasmPath); err != nil || !strings.Contains(out, "still here") {
				t.Fatalf("third run: %v\n%s", err, out)
			}
		})
	}
}

// TestCompiledCacheUnknownEntries: entries Hangar did not record (written
// by an older version, or put there by hand) and a damaged record are not
// trusted; start-up still works.
func TestCompiledCacheUnknownEntries(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "wazero-test-version")
	os.MkdirAll(sub, 0o700)
	stray := filepath.Join(sub, strings.Repeat("ab", 32))
	os.WriteFile(stray, []byte("WAZEVO garbage"), 0o600)
	os.WriteFile(filepath.Join(dir, sumsFile), []byte("{not json"), 0o600)
	c := checkCompiledCache(dir)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("unrecorded entry kept: %v", err)
	}
	// A recorded entry that still matches is kept.
	os.WriteFile(stray, []byte("WAZEVO entry"), 0o600)
	c.record()
	checkCompiledCache(dir)
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("recorded entry removed: %v", err)
	}
	// Truncated: removed.
	os.WriteFile(stray, []byte("WAZEVO"), 0o600)
	checkCompiledCache(dir)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("truncated entry kept: %v", err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
