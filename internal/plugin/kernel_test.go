package plugin

import (
	"context"
	"runtime"
	"testing"

	extism "github.com/extism/go-sdk"

	"github.com/hangar-mcp/hangar/internal/config"
)

// TestKernelCached checks that the pool's instances have their Extism
// kernel wrapped (see kernel.go), that they still work, and that the wrapper
// does what it is for: a call allocates a fraction of what it does on an
// unwrapped instance of the same plugin.
func TestKernelCached(t *testing.T) {
	if kernelField == nil {
		t.Fatal("extism.Plugin has no field extism of type api.Module: kernel.go must follow the Extism upgrade")
	}
	ctx := context.Background()
	p := loadEcho(t, config.Limits{})

	inst, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.pool.put(inst, true)
	if !kernelCached(inst.p) {
		t.Fatal("pool instance's kernel is not cached")
	}
	plain, err := p.pool.compiled.Instance(ctx, p.pool.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	if kernelCached(plain) {
		t.Fatal("a fresh instance reports a cached kernel")
	}

	input := []byte(`{"params":{"name":"echo","arguments":{"text":"a text long enough to make a few dozen host calls"}}}`)
	const want = `{"content":[{"type":"text","text":"a text long enough to make a few dozen host calls"}]}`
	perCall := func(ep *extism.Plugin) uint64 {
		t.Helper()
		const n = 50
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			rc, out, err := ep.CallWithContext(ctx, "call", input)
			if err != nil || rc != 0 || string(out) != want {
				t.Fatalf("call: rc %d, out %s, err %v", rc, out, err)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / n
	}
	cached, uncached := perCall(inst.p), perCall(plain)
	t.Logf("bytes allocated per call: %d with the kernel cached, %d without", cached, uncached)
	if cached*4 > uncached {
		t.Errorf("bytes per call: cached %d, uncached %d; want cached under a quarter", cached, uncached)
	}
}
