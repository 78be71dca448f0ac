package plugin

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

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
// without waiting for a collection.
func TestMemoryOutsideHeapReturnedOnClose(t *testing.T) {
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
	runtime.GC()
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
