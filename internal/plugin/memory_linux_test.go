package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// rss is the process's resident set, in bytes.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

func heapInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestMemoryOutsideHeapReturnedOnClose: a plugin's memory is not in the Go
// heap, and closing the instance gives it back to the system at once,
// without waiting for a collection. It runs in a process of its own: in the
// shared one, other tests' garbage given back to the system while the plugin
// allocates hid part of the growth it measures.
func TestMemoryOutsideHeapReturnedOnClose(t *testing.T) {
	if !InOwnProcess(t, "TestMemoryOutsideHeapReturnedOnClose") {
		return
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./internal/testplugins/hostile"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Load(context.Background(), wasm, Options{Name: "hostile", Limits: config.Limits{MemoryPages: 256 << 20 / config.PageSize}, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	debug.FreeOSMemory() // the compilation's garbage is given back now, not while we measure
	rss0, heap0 := rss(t), heapInUse()
	const mb = 150
	if _, err := p.CallTool(context.Background(), nil, "alloc", json.RawMessage(`{"mb":150}`)); err != nil {
		t.Fatal(err)
	}
	rss1, heap1 := rss(t), heapInUse()
	if grew := rss1 - rss0; grew < (mb-20)<<20 {
		t.Fatalf("RSS grew by %d MiB while the plugin holds %d MiB: the test measures nothing", grew>>20, mb)
	}
	if grew := heap1 - heap0; grew > 50<<20 {
		t.Errorf("the Go heap grew by %d MiB while the plugin holds %d MiB: its memory is in the heap", grew>>20, mb)
	}
	p.Close(context.Background())
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	rss2 := rss(t)
	if back := rss1 - rss2; back < (mb-20)<<20 {
		t.Errorf("closing the plugin gave back %d MiB of the %d MiB it held (RSS %d, %d, %d MiB)", back>>20, mb, rss0>>20, rss1>>20, rss2>>20)
	}
	t.Logf("RSS %d MiB, %d MiB holding %d MiB, %d MiB after close; Go heap grew %d MiB", rss0>>20, rss1>>20, mb, rss2>>20, (heap1-heap0)>>20)
}

// machineCode is the resident size of the process's anonymous executable
// mappings: the machine code wazero's compiler made, or read from its cache.
func machineCode(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	var n int64
	code := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4 {
			code = f[1][2] == 'x' && len(f) == 5 // executable, and no file
			continue
		}
		if code && len(f) >= 2 && f[0] == "Rss:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			n += kb << 10
		}
	}
	return n
}

// collect runs the garbage collector until finalizers (which unmap wazero's
// machine code and free what refers to it) have had their turn.
func collect() {
	for range 5 {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClosedPluginReleasesMachineCode: closing a plugin gives its machine
// code and its decoded module back while its engine, whose compilation
// cache other plugins share, stays open.
func TestClosedPluginReleasesMachineCode(t *testing.T) {
	if !InOwnProcess(t, "TestClosedPluginReleasesMachineCode") {
		return
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./bench/plugins/echo"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	collect()
	code0, heap0 := machineCode(t), heapInUse()
	p, err := e.Load(context.Background(), wasm, Options{Name: "echo", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	collect()
	code1, heap1 := machineCode(t), heapInUse()
	if code1-code0 < 4<<20 {
		t.Fatalf("machine code grew by %d KiB with a Go plugin loaded: the test measures nothing", (code1-code0)>>10)
	}
	p.Close(context.Background())
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	collect()
	code2, heap2 := machineCode(t), heapInUse()
	t.Logf("machine code %d -> %d -> %d KiB, Go heap %d -> %d -> %d KiB (before, loaded, closed)", code0>>10, code1>>10, code2>>10, heap0>>10, heap1>>10, heap2>>10)
	if kept := code2 - code0; kept > (code1-code0)/10 {
		t.Errorf("closing the plugin kept %d of its %d KiB of machine code", kept>>10, (code1-code0)>>10)
	}
	// Under the race detector the heap keeps most of it for a while,
	// whatever was closed: the figure says nothing there.
	if kept := heap2 - heap0; kept > (heap1-heap0)/2 && !raceBuild() {
		t.Errorf("closing the plugin kept %d of the %d KiB the Go heap grew by", kept>>10, (heap1-heap0)>>10)
	}
}

// TestWarmKeepsNothing: Warm writes a module's machine code to the
// compilation cache, where a later Load finds it, and keeps none of it.
func TestWarmKeepsNothing(t *testing.T) {
	if !InOwnProcess(t, "TestWarmKeepsNothing") {
		return
	}
	ctx := context.Background()
	wat, err := os.ReadFile(testutil.BuildWAT(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e, err := NewEngine(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if _, err := e.Warm(ctx, wat, Options{Name: "echo", Logger: discard()}); err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(entries) == 0 || len(readSums(dir)) != len(entries) {
		t.Fatalf("after Warm the cache holds %v, recorded %v", entries, readSums(dir))
	}

	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./bench/plugins/echo"))
	if err != nil {
		t.Fatal(err)
	}
	shared, err := NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close(ctx)
	collect()
	code0 := machineCode(t)
	if _, err := shared.Warm(ctx, wasm, Options{Name: "echo", Logger: discard()}); err != nil {
		t.Fatal(err)
	}
	collect()
	if kept := machineCode(t) - code0; kept > 1<<20 {
		t.Errorf("Warm kept %d KiB of machine code", kept>>10)
	}
}

// raceBuild reports whether the test binary was built with -race.
func raceBuild() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}
