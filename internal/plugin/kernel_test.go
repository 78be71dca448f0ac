package plugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The tests of Hangar's Extism kernel (kernel.go, env.go) run programs of
// kernel calls (internal/testplugins/wat/kernel.wat interprets them) on a
// Hangar instance and on Extism's Go SDK, whose kernel is the reference:
// both must answer the same numbers, report the same output and error,
// trap on the same calls, and leave their memories byte for byte the same.

// The opcodes of kernel.wat.
const (
	opAlloc byte = iota
	opFree
	opLength
	opLengthUnsafe
	opLoadU8
	opLoadU64
	opStoreU8
	opStoreU64
	opInputLoadU8
	opInputLoadU64
	opInputSet
	opOutputSet
	opInputLength
	opInputOffset
	opOutputLength
	opOutputOffset
	opErrorSet
	opErrorGet
	opMemoryBytes
	opReset
	opConfigGet
	opVarGet
	opVarSet
	opHTTPStatus
	opHTTPHeaders
	opBlock
	opLogInfo
	opHTTPRequest
	opLogLevel
)

// opResults says which opcodes return a result.
var opResults = map[byte]bool{
	opAlloc: true, opLength: true, opLengthUnsafe: true, opLoadU8: true, opLoadU64: true,
	opInputLoadU8: true, opInputLoadU64: true, opInputLength: true, opInputOffset: true,
	opOutputLength: true, opOutputOffset: true, opErrorGet: true, opMemoryBytes: true,
	opConfigGet: true, opVarGet: true, opHTTPStatus: true, opHTTPHeaders: true, opBlock: true,
	opHTTPRequest: true, opLogLevel: true,
}

// program is a program for kernel.wat.
type program struct{ b []byte }

func (p *program) op(code byte, args ...uint64) *program {
	p.b = append(p.b, code)
	for _, a := range args {
		p.b = binary.LittleEndian.AppendUint64(p.b, a)
	}
	return p
}

// block adds a block holding data.
func (p *program) block(data string) *program {
	p.op(opBlock, uint64(len(data)))
	p.b = append(p.b, data...)
	return p
}

// outcome is what a program did on one host.
type outcome struct {
	trapped bool
	trap    string
	rc      uint32
	results []uint64
	errMsg  string
	memory  []byte // the kernel's memory, all of it
	vars    map[string][]byte
}

func (o *outcome) String() string {
	if o.trapped {
		return "trap: " + o.trap
	}
	return fmt.Sprintf("rc %d, error %q, results %v, memory %d bytes, %d vars", o.rc, o.errMsg, o.results, len(o.memory), len(o.vars))
}

func decodeResults(out []byte) []uint64 {
	r := make([]uint64, len(out)/8)
	for i := range r {
		r[i] = binary.LittleEndian.Uint64(out[8*i:])
	}
	return r
}

// kernelConfig is the configuration both hosts give the programs.
var kernelConfig = map[string]string{"k": "v", "empty": "", "long": "a longer configuration value"}

// kernelRig runs programs on a Hangar instance and an Extism plugin of
// kernel.wat, side by side. A host whose program trapped gets a new
// instance, the other too, so that both start from the same state.
type kernelRig struct {
	t      testing.TB
	wasm   []byte
	pages  uint32
	hangar *Plugin
	inst   *instance
	extism *extism.Plugin
}

// loadKernelWAT loads kernel.wat into Hangar.
func loadKernelWAT(t testing.TB, pages uint32, logger *slog.Logger) (*Plugin, []byte) {
	t.Helper()
	wasm, err := os.ReadFile(testutil.BuildWAT(t, "kernel"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Load(context.Background(), wasm, Options{
		Name:   "kernel",
		Config: kernelConfig,
		Limits: config.Limits{MemoryPages: pages},
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, wasm
}

func newKernelRig(t testing.TB, pages uint32) *kernelRig {
	t.Helper()
	// log_info reads its message only when the log takes it, as in
	// Extism's Go SDK (which always reads it).
	p, wasm := loadKernelWAT(t, pages, slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})))
	r := &kernelRig{t: t, wasm: wasm, pages: pages, hangar: p}
	t.Cleanup(func() {
		r.drop()
		p.Close(context.Background())
	})
	r.fresh()
	return r
}

// fresh replaces both instances with new ones.
func (r *kernelRig) fresh() {
	r.t.Helper()
	r.drop()
	ctx := context.Background()
	inst, err := r.hangar.pool.get(ctx, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	r.inst = inst
	r.extism, err = extism.NewPlugin(ctx, extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: r.wasm}},
		Config: kernelConfig,
		Memory: &extism.ManifestMemory{MaxPages: r.pages, MaxHttpResponseBytes: maxHTTPResponse, MaxVarBytes: maxVarBytes},
	}, extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(extismCache)}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
}

// extismCache keeps the rigs' Extism plugins from compiling the same
// modules again.
var extismCache = wazero.NewCompilationCache()

func (r *kernelRig) drop() {
	if r.inst != nil {
		r.hangar.pool.put(r.inst, false)
		r.inst = nil
	}
	if r.extism != nil {
		r.extism.Close(context.Background())
		r.extism = nil
	}
}

// run runs prog on both hosts.
func (r *kernelRig) run(prog []byte) (h, e *outcome) {
	ctx := context.Background()
	h = r.runHangar(prog)
	e = &outcome{}
	rc, out, err := r.extism.CallWithContext(ctx, "call", prog)
	msg := r.extism.GetError()
	if err != nil && (msg == "" || msg != err.Error()) {
		e.trapped, e.trap = true, err.Error()
	} else {
		e.rc, e.results, e.errMsg = rc, decodeResults(out), msg
		mem := r.extism.Memory()
		b, _ := mem.Read(0, mem.Size())
		e.memory = bytes.Clone(b)
		e.vars = maps.Clone(r.extism.Var)
	}
	if h.trapped || e.trapped {
		r.fresh()
	}
	return h, e
}

// runHangar runs prog on Hangar's instance only.
func (r *kernelRig) runHangar(prog []byte) *outcome {
	h := &outcome{}
	res, err := r.inst.call(context.Background(), "call", prog)
	if err != nil {
		h.trapped, h.trap = true, err.Error()
		return h
	}
	h.rc, h.results, h.errMsg = res.rc, decodeResults(res.out), res.err
	k := r.inst.kernel
	h.memory, _ = k.bytes(0, k.size())
	h.vars = maps.Clone(r.inst.vars)
	return h
}

// same reports how h and e differ, or "".
func same(h, e *outcome) string {
	switch {
	case h.trapped != e.trapped:
		return fmt.Sprintf("Hangar: %v\nExtism: %v", h, e)
	case h.trapped:
		return ""
	case h.rc != e.rc || h.errMsg != e.errMsg || !slices.Equal(h.results, e.results):
		return fmt.Sprintf("Hangar: %v\nExtism: %v", h, e)
	case len(h.memory) != len(e.memory):
		return fmt.Sprintf("memory size: Hangar %d, Extism %d", len(h.memory), len(e.memory))
	case !bytes.Equal(h.memory, e.memory):
		i := 0
		for h.memory[i] == e.memory[i] {
			i++
		}
		return fmt.Sprintf("memories differ first at %d: Hangar %x, Extism %x", i, h.memory[i:min(i+16, len(h.memory))], e.memory[i:min(i+16, len(e.memory))])
	case !maps.EqualFunc(h.vars, e.vars, bytes.Equal):
		return fmt.Sprintf("vars: Hangar %q, Extism %q", h.vars, e.vars)
	}
	return ""
}

// checkProgram runs prog on both hosts, and checks that Hangar's results
// are want and that Extism agrees in everything.
func checkProgram(t *testing.T, r *kernelRig, what string, prog *program, want []uint64) {
	t.Helper()
	h, e := r.run(prog.b)
	if h.trapped || !slices.Equal(h.results, want) {
		t.Errorf("%s: Hangar: %v\nwant results %v", what, h, want)
	}
	if d := same(h, e); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

// TestKernelABI pins the kernel's answers to numbers worked out from the
// layout of Extism's kernel (kernel.go): after a reset the first block's
// data is at 77 (the root is at 1 and 64 bytes long, a block header 12),
// blocks follow each other while the usable length lasts, a freed block is
// not reused while it does, and so on. Both hosts must give them.
func TestKernelABI(t *testing.T) {
	r := newKernelRig(t, 64)
	const mib = 1 << 20 // the kernel's 16 pages
	p := &program{}
	p.op(opReset)
	var want []uint64
	expect := func(code byte, w uint64, args ...uint64) {
		p.op(code, args...)
		want = append(want, w)
	}
	expect(opAlloc, 0, 0)           // alloc(0) is 0
	expect(opAlloc, 77, 16)         // header at 65, data at 77
	expect(opLength, 16, 77)        //
	expect(opLengthUnsafe, 16, 77)  //
	expect(opLength, 0, 78)         // not a block
	expect(opLengthUnsafe, 0, 78)   // its "header" is not active
	expect(opAlloc, 77+16+12, 100)  // the next block, at 105
	p.op(opFree, 77)                //
	expect(opLength, 0, 77)         // a freed block has no length
	expect(opLengthUnsafe, 0, 77)   //
	p.op(opFree, 77)                // twice is nothing
	expect(opAlloc, 105+100+12, 16) // no reuse while there is room: 217
	p.op(opStoreU8, 217, 0x41)      //
	expect(opLoadU8, 0x41, 217)     //
	p.op(opStoreU64, 218, 0x0102030405060708)
	expect(opLoadU64, 0x0102030405060708, 218)
	expect(opLoadU8, 8, 218)                         // little-endian
	expect(opLoadU64, 0x100, 0)                      // load_u64 reads the root: the flag at 1
	expect(opLoadU8, 0, 63)                          // load_u8 does not
	p.op(opStoreU8, 63, 9)                           // nor does store_u8 write it
	expect(opOutputLength, 0)                        //
	p.op(opStoreU8, 64, 5)                           // but 64 is the output length's last byte
	expect(opOutputLength, 5<<56)                    //
	expect(opLoadU8, 0, mib+1)                       // past the end: 0 (the end itself traps)
	expect(opLoadU8, 0, 1<<32+217)                   // not truncated: past the end
	expect(opLoadU64, 0x0102030405060708, 1<<32+218) // truncated to 32 bits
	expect(opInputLength, 0)                         // reset dropped the input
	expect(opInputOffset, 0)                         //
	p.op(opOutputSet, 105, 3)                        //
	expect(opOutputLength, 3)                        //
	expect(opOutputOffset, 105)                      //
	p.op(opOutputSet, 64, 1)                         // below the blocks: ignored
	p.op(opOutputSet, 105, 1<<20)                    // past the usable length: ignored
	expect(opOutputOffset, 105)                      //
	p.op(opOutputSet, 105, 0)                        // empty, and accepted
	expect(opOutputLength, 0)                        //
	p.op(opOutputSet, 65472+65, 0)                   // just past the usable length: ignored
	expect(opOutputOffset, 105)
	p.op(opInputSet, 105, 100)
	expect(opInputLoadU8, 0, 100)      // past the input: 0, not the next header
	p.op(opInputSet, 217, 16)          // any block can become the input
	expect(opInputLoadU8, 0x41, 0)     //
	expect(opInputLoadU8, 0, 16)       // past its length: 0
	p.op(opFree, 217)                  // freeing it empties the input
	expect(opInputLength, 0)           //
	p.op(opErrorSet, 64)               // not a block: ignored
	expect(opErrorGet, 0)              //
	expect(opMemoryBytes, 65472)       // one page less the root
	expect(opHTTPStatus, 0)            //
	expect(opHTTPHeaders, 0)           // response headers are off
	expect(opAlloc, 245, 1)            // 233 + 12: after the 16 bytes at 217
	expect(opAlloc, 258, 70000)        // the usable length grows a page
	expect(opMemoryBytes, 65472+65536) //
	p.op(opReset)                      //
	expect(opMemoryBytes, 65472+65536) // and stays grown
	expect(opAlloc, 77, 1)             // from the start again
	expect(opLoadU8, 0, 258)           // reset cleared the data
	h, e := r.run(p.b)
	for _, o := range []struct {
		host string
		o    *outcome
	}{{"Hangar", h}, {"Extism", e}} {
		if o.o.trapped || !slices.Equal(o.o.results, want) {
			t.Errorf("%s: %v\nwant results %v", o.host, o.o, want)
		}
	}
	if d := same(h, e); d != "" {
		t.Error(d)
	}
	// The memory grew by a page: 17 pages.
	if n := len(h.memory); n != 17*pageSize {
		t.Errorf("memory is %d bytes, want 17 pages", n)
	}

	// Configuration and variables: values come in new blocks, missing and
	// empty ones as 0, and var_get frees the name.
	p = &program{}
	p.op(opReset).block("k").op(opConfigGet, 77).op(opLength, 90).op(opLoadU8, 90)
	p.block("nope").op(opConfigGet, 103).block("empty").op(opConfigGet, 119)
	p.block("x").op(opVarGet, 136).op(opLength, 136)
	p.block("x").block("hello").op(opVarSet, 149, 162).block("x").op(opVarGet, 179).op(opLength, 192)
	p.block("x").op(opVarSet, 209, 0).block("x").op(opVarGet, 222)
	want = []uint64{
		77, 90, 1, 'v', // "k" at 77, its value "v" at 90
		103, 0, 119, 0, // "nope" and "empty" get nothing
		136, 0, 0, // "x" is not set; its name was freed
		149, 162, 179, 192, 5, // x = "hello"; var_get answers a copy
		209, 222, 0, // deleted
	}
	checkProgram(t, r, "config and vars", p, want)

	// An error the plugin sets is reported with its output; a status too.
	p = &program{}
	p.op(opReset).block("boom").op(opErrorSet, 77).op(opErrorGet)
	h, e = r.run(p.b)
	if h.trapped || h.errMsg != "boom" || !slices.Equal(h.results, []uint64{77, 77}) {
		t.Errorf("error_set: %v", h)
	}
	if d := same(h, e); d != "" {
		t.Error(d)
	}
}

// TestKernelTraps: the calls that trap in Extism trap in Hangar, and the
// next program runs on a healthy instance.
func TestKernelTraps(t *testing.T) {
	r := newKernelRig(t, 32)
	const mib = 1 << 20 // the kernel's 16 pages
	big := (&program{}).op(opReset).op(opAlloc, 3*mib).op(opMemoryBytes)
	for name, c := range map[string]struct {
		prog *program
		trap bool
	}{
		"load_u8 at the end":    {(&program{}).op(opLoadU8, mib), true},
		"load_u64 over the end": {(&program{}).op(opLoadU64, mib-7), true},
		"load_u64 to the end":   {(&program{}).op(opLoadU64, mib-8), false},
		// the walk over empty blocks stops at mib-64+65 without reading it
		"length walks to its bound": {(&program{}).op(opReset).op(opLength, mib-64), false},
		"length walks past the end": {(&program{}).op(opReset).op(opLength, mib-50), true},
		"store_u64 over the end":    {(&program{}).op(opStoreU64, mib-4, 1), true},
		"store_u8 at the end":       {(&program{}).op(opStoreU8, mib, 1), true},
		"store_u8 past the end":     {(&program{}).op(opStoreU8, mib+1, 1), false},
		"input_load_u64 far":        {(&program{}).op(opInputLoadU64, mib), true},
		"config_get of garbage":     {(&program{}).op(opConfigGet, 0xFFFFFFFFFFFF), true},
		"config_get of nothing":     {(&program{}).op(opConfigGet, 0), false},
		"var_get of garbage":        {(&program{}).op(opVarGet, 0xFFFFFFFFFFFF), true},
		"log_info of garbage":       {(&program{}).op(opLogInfo, 0xFFFFFFFFFFFF), true},
		"full memory: alloc is 0":   {big, false},
		// 40 + len("big") + mib-40 bytes: over the 1MiB of variables
		"var store full":           {(&program{}).op(opReset).op(opAlloc, mib-40).block("big").op(opVarSet, mib+49, 77), true},
		"a reset corrupted":        {(&program{}).op(opStoreU64, 9, 0x7f7f7f7f).op(opReset), true},
		"http_request not allowed": {(&program{}).op(opReset).block(`{"url":"http://example.com/"}`).op(opHTTPRequest, 77, 0), true},
	} {
		r.fresh()
		h, e := r.run(c.prog.b)
		if h.trapped != c.trap {
			t.Errorf("%s: %v, want trapped %v", name, h, c.trap)
		}
		if d := same(h, e); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
	// The big alloc failed: the memory may not grow past 32 pages.
	if h, _ := r.run(big.b); h.trapped || !slices.Equal(h.results, []uint64{0, 65472}) {
		t.Errorf("alloc over the memory limit: %v", h)
	}
}

// TestKernelReuse: once the usable length is used up, free blocks are
// reused, split when 128 bytes or more are left over; and the memory does
// not grow past the plugin's limit. Worked out by hand on 16 pages, the
// least a kernel has, so that it cannot grow at all.
func TestKernelReuse(t *testing.T) {
	r := newKernelRig(t, 16)
	p := &program{}
	var want []uint64
	expect := func(code byte, w uint64, args ...uint64) {
		p.op(code, args...)
		want = append(want, w)
	}
	p.op(opReset)
	expect(opAlloc, 77, 300)
	p.op(opFree, 77)
	expect(opAlloc, 389, 64984)      // header at 377; the position is now 65308
	expect(opAlloc, 77, 173)         // 100 bytes left, fewer than needed: reuse, whole (127 over)
	expect(opLength, 173, 77)        //
	p.op(opFree, 77)                 //
	expect(opAlloc, 205, 172)        // 128 over: split, the new block at the end
	expect(opLength, 0, 77)          // the rest stays free, 116 bytes
	expect(opAlloc, 77, 88)          // 88+12 is exactly what is left: reuse
	expect(opLength, 88, 77)         //
	expect(opAlloc, 65385, 16)       // 28 bytes fit: bumped
	expect(opAlloc, 0, 100)          // no free block, no page to grow by
	expect(opMemoryBytes, 65472)     //
	expect(opLengthUnsafe, 172, 205) //
	p.op(opFree, 389)                // room for kernel.wat's output
	checkProgram(t, r, "reuse", p, want)

	// A free block that takes up everything below the position is found.
	p = &program{}
	want = nil
	p.op(opReset)
	expect(opAlloc, 77, 65380) // the position is 65392, 16 bytes left
	p.op(opFree, 77)
	expect(opAlloc, 77, 65380) // needs exactly the position: reused
	p.op(opFree, 77)           // room for kernel.wat's output
	checkProgram(t, r, "a free block below the position", p, want)

	// A root whose flag was cleared is made again at the next call that
	// uses it: the position goes back to 0, and the first 144 bytes of
	// blocks are cleared (not more).
	p = &program{}
	want = nil
	p.op(opReset)
	expect(opAlloc, 77, 200)
	p.op(opStoreU8, 208, 0x33).op(opStoreU8, 209, 0x44)
	p.op(opStoreU64, 0, 0)
	expect(opMemoryBytes, 65472)
	expect(opLoadU8, 0, 208)
	expect(opLoadU8, 0x44, 209)
	expect(opAlloc, 77, 1)
	// reset clears as many bytes as the low 32 bits of the position say
	p.op(opStoreU64, 9, 1<<32|1).op(opReset)
	expect(opInputLength, 0)
	checkProgram(t, r, "the root made again", p, want)
}

// TestKernelDifferences checks, on Hangar alone, where it differs from
// Extism on purpose (docs/abi.md): a value the host cannot fit in the
// memory is answered with 0 and written nowhere (Extism's Go SDK writes it
// over the root), and a block list that wraps around 4GiB traps (Extism's
// kernel walks it forever).
func TestKernelDifferences(t *testing.T) {
	r := newKernelRig(t, 16)
	p := &program{}
	p.op(opReset).block("long") // at 77, 4 bytes
	p.op(opAlloc, 65360)        // at 93: the position is 65388, 20 bytes left
	p.op(opConfigGet, 77)       // 28 bytes do not fit, and there is no page to grow by
	p.op(opLoadU64, 9)          // the root is intact
	p.op(opFree, 93)            // room for kernel.wat's output
	if h := r.runHangar(p.b); h.trapped || !slices.Equal(h.results, []uint64{77, 93, 0, 65388}) {
		t.Errorf("a config value that does not fit: %v", h)
	}

	p = &program{}
	p.op(opReset).op(opAlloc, 16)
	p.op(opStoreU64, 65+blockSizeAt, 0xFFFFFFF0) // the next header would be at 61
	p.op(opLength, 1000)
	h := r.runHangar(p.b)
	if !h.trapped || !strings.Contains(h.trap, errKernelCorrupt.Error()) {
		t.Errorf("a block list that wraps around: %v", h)
	}
}

// TestKernelLog: the log_* functions log the plugin's message in Hangar's
// log, within the plugin's log budget, and get_log_level says what the log
// takes.
func TestKernelLog(t *testing.T) {
	ctx := context.Background()
	run := func(p *Plugin, prog *program) []uint64 {
		t.Helper()
		inst, err := p.pool.get(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer p.pool.put(inst, true)
		res, err := inst.call(ctx, "call", prog.b)
		if err != nil {
			t.Fatal(err)
		}
		return decodeResults(res.out)
	}

	quiet, _ := loadKernelWAT(t, 16, slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer quiet.Close(ctx)
	if got := run(quiet, (&program{}).op(opLogLevel)); !slices.Equal(got, []uint64{extismWarn}) {
		t.Errorf("get_log_level with a log at warn: %v, want %d", got, extismWarn)
	}

	rec := &recorder{}
	p, _ := loadKernelWAT(t, 16, slog.New(rec))
	defer p.Close(ctx)
	prog := (&program{}).op(opReset).op(opLogLevel).block("hello from the plugin").op(opLogInfo, 77).op(opLength, 77)
	if got := run(p, prog); !slices.Equal(got, []uint64{extismTrace, 77, 0}) {
		t.Errorf("results %v, want the trace level, the block, and the block freed", got)
	}
	found := false
	rec.mu.Lock()
	for _, r := range rec.records {
		if r.Message == "hello from the plugin" && r.Level == slog.LevelInfo {
			found = true
		}
	}
	rec.mu.Unlock()
	if !found {
		t.Error("the plugin's message was not logged at info")
	}

	// A flood: the burst of 500 lines, then the rest dropped and counted.
	prog = (&program{}).op(opReset)
	for range 600 {
		prog.block("flood").op(opLogInfo, 77).op(opReset)
	}
	run(p, prog)
	deadline := time.Now().Add(10 * time.Second)
	for rec.dropped() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	logged := 0
	rec.mu.Lock()
	for _, r := range rec.records {
		if r.Message == "flood" {
			logged++
		}
	}
	rec.mu.Unlock()
	if dropped := rec.dropped(); logged > logBurst+10 || dropped == 0 || int64(logged)+dropped != 600 {
		t.Errorf("a flood of 600 lines: %d logged, %d reported dropped", logged, dropped)
	}
}

// kernelGen writes random programs for kernel.wat. It runs each operation
// on a kernel of its own, a model of the hosts', to choose arguments that
// mean something: offsets of blocks, near them, at the bounds. The model
// need not be exact: the hosts are compared with each other, not with it.
//
// The programs keep away from the two places where Hangar differs from
// Extism on purpose (docs/abi.md):
//
//   - Every byte they store is below 0x80 and every allocation under 2^31
//     bytes, so that no block size can make an address wrap around 4GiB,
//     where Extism's kernel would walk its blocks forever (and Hangar's
//     traps).
//   - The memory never fills up so far that a value the host writes (a
//     configuration value, a variable, kernel.wat's results, the next
//     call's input) would not fit, which Extism's Go SDK writes over the
//     root. Allocations that would are not made, but for those larger
//     than the memory can ever hold, which fail without a trace; variable
//     values are small; and a program that writes into the root ends
//     there, and the next starts on new instances (dirty).
type kernelGen struct {
	rng    *rand.Rand
	k      *kernel
	vars   map[string][]byte
	blocks []uint64
	small  []uint64 // blocks of at most 64 bytes
	used   uint64   // bytes allocated since the last reset, headers included
	dirty  bool     // a program wrote into the root
}

func newKernelGen(rng *rand.Rand, pages uint32) *kernelGen {
	return &kernelGen{rng: rng, k: modelKernel(pages), vars: map[string][]byte{}}
}

// modelKernel is a kernel in the Go heap, for a model that is never
// closed: a reservation (memory.go) would stay mapped.
func modelKernel(pages uint32) *kernel {
	k := newKernel(pages)
	k.release()
	return k
}

// capacity is the most the memory can hold in blocks.
func (g *kernelGen) capacity() uint64 {
	return initialLength + uint64(g.k.maxPages-kernelPages)*pageSize
}

// fits reports whether n more bytes leave room for what the hosts write.
func (g *kernelGen) fits(n uint64) bool { return g.used+n+blockHeader+16<<10 <= g.capacity() }

// ptr picks an offset.
func (g *kernelGen) ptr() uint64 {
	size := g.k.size()
	switch r := g.rng.IntN(40); {
	case r < 30 && len(g.blocks) > 0:
		b := g.blocks[g.rng.IntN(len(g.blocks))]
		deltas := []int64{0, 0, 0, 0, 0, -12, -11, -8, -4, -1, 1, 7, 8, 16, 100}
		return uint64(int64(b) + deltas[g.rng.IntN(len(deltas))])
	case r < 34:
		specials := []uint64{0, 1, 8, 9, 17, 25, 33, 41, 49, 57, 63, 64, 65, 66, 76, 77, 78, 89, size - 8, 1<<32 + 77}
		return specials[g.rng.IntN(len(specials))]
	case r < 35:
		// out of bounds for most
		specials := []uint64{size - 1, size, size + 1, math.MaxUint64}
		return specials[g.rng.IntN(len(specials))]
	default:
		return g.rng.Uint64N(min(size, 1<<16))
	}
}

// size picks an allocation size.
func (g *kernelGen) size() uint64 {
	sizes := []uint64{0, 1, 2, 7, 8, 9, 12, 16, 100, 115, 116, 127, 128, 129, 140, 1000, 4096, 65408, 65536, 70000, 1 << 20, 3 << 20}
	if g.rng.IntN(4) == 0 {
		return g.rng.Uint64N(300)
	}
	return sizes[g.rng.IntN(len(sizes))]
}

// value picks bytes to store: a block status often, all below 0x80.
func (g *kernelGen) value(n int) uint64 {
	if g.rng.IntN(2) == 0 {
		return g.rng.Uint64N(4)
	}
	var v uint64
	for i := range n {
		v |= g.rng.Uint64N(0x80) << (8 * i)
	}
	return v
}

func (g *kernelGen) name() string {
	names := []string{"k", "empty", "long", "nope", "x", "y", ""}
	return names[g.rng.IntN(len(names))]
}

// program returns a program of up to n operations. It starts with a reset,
// so that the input (the program itself) does not shift the offsets.
func (g *kernelGen) program(n int) []byte {
	p := &program{}
	p.op(opReset)
	if g.apply(opReset, nil, "") {
		// The last program left the memory so that the call's own reset
		// traps: the hosts start again, and so does the model.
		g.k = modelKernel(g.k.maxPages)
	}
	g.blocks, g.small, g.used = g.blocks[:0], g.small[:0], 0
	nres := 0
	for range n {
		code, args, data := g.next()
		if code == opBlock {
			p.block(data)
		} else {
			p.op(code, args...)
		}
		if opResults[code] {
			nres++
		}
		if g.apply(code, args, data) {
			return p.b // the model trapped: so, probably, will the hosts
		}
		if code == opStoreU64 && addr(args[0]) < blocksStart || code == opStoreU8 && args[0] == rootSize {
			g.dirty = true
			return p.b
		}
	}
	// kernel.wat's output of its results
	g.apply(opAlloc, []uint64{uint64(8 * nres)}, "")
	return p.b
}

// next picks an operation.
func (g *kernelGen) next() (byte, []uint64, string) {
	switch r := g.rng.IntN(100); {
	case r < 14:
		n := g.size()
		if !g.fits(n) && n+blockHeader <= g.capacity() {
			n = 8
		}
		return opAlloc, []uint64{n}, ""
	case r < 22:
		return opBlock, nil, g.name()
	case r < 30:
		return opFree, []uint64{g.ptr()}, ""
	case r < 38:
		return opLength, []uint64{g.ptr()}, ""
	case r < 43:
		return opLengthUnsafe, []uint64{g.ptr()}, ""
	case r < 50:
		return opLoadU8, []uint64{g.ptr()}, ""
	case r < 54:
		return opLoadU64, []uint64{g.ptr()}, ""
	case r < 62:
		return opStoreU8, []uint64{g.ptr(), g.value(1)}, ""
	case r < 66:
		return opStoreU64, []uint64{g.ptr(), g.value(8)}, ""
	case r < 69:
		return opInputLoadU8, []uint64{g.rng.Uint64N(200)}, ""
	case r < 70:
		return opInputLoadU64, []uint64{g.rng.Uint64N(200)}, ""
	case r < 73:
		return opInputSet, []uint64{g.ptr(), g.size()}, ""
	case r < 76:
		return opOutputSet, []uint64{g.ptr(), g.size()}, ""
	case r < 82:
		getters := []byte{opInputLength, opInputOffset, opOutputLength, opOutputOffset, opErrorGet, opMemoryBytes, opHTTPStatus, opHTTPHeaders}
		return getters[g.rng.IntN(len(getters))], nil, ""
	case r < 84:
		return opErrorSet, []uint64{g.ptr()}, ""
	case r < 88 && g.fits(64):
		return opConfigGet, []uint64{g.ptr()}, ""
	case r < 91 && g.fits(64):
		return opVarGet, []uint64{g.ptr()}, ""
	case r < 95:
		q := uint64(0) // deletes
		switch r := g.rng.IntN(16); {
		case r < 12:
			if len(g.small) > 0 {
				q = g.small[g.rng.IntN(len(g.small))]
			}
		case r < 13:
			q = 0xFFFFFFFFFFFF // no block: a trap
		}
		return opVarSet, []uint64{g.ptr(), q}, ""
	case r < 97:
		return opLogInfo, []uint64{g.ptr()}, ""
	default:
		return opReset, nil, ""
	}
}

// apply runs an operation on the model, and reports whether it trapped.
func (g *kernelGen) apply(code byte, args []uint64, data string) (trapped bool) {
	defer func() {
		if recover() != nil {
			trapped = true
		}
	}()
	k := g.k
	arg := func(i int) uint64 { return args[i] }
	keep := func(p, n uint64) {
		if p != 0 {
			g.blocks = append(g.blocks, p)
			g.used += n + blockHeader
			if n <= 64 {
				g.small = append(g.small, p)
			}
		}
	}
	read := func(p uint64) []byte {
		b, err := k.readBlock(p)
		if err != nil {
			panic(err)
		}
		return b
	}
	switch code {
	case opAlloc:
		keep(k.alloc(arg(0)), arg(0))
	case opBlock:
		b := k.alloc(uint64(len(data)))
		for i := range len(data) {
			k.storeU8(b+uint64(i), uint32(data[i]))
		}
		keep(b, uint64(len(data)))
	case opFree:
		k.free(arg(0))
	case opLength:
		k.length(arg(0))
	case opLengthUnsafe:
		k.lengthUnsafe(arg(0))
	case opLoadU8:
		k.loadU8(arg(0))
	case opLoadU64:
		k.loadU64(arg(0))
	case opStoreU8:
		k.storeU8(arg(0), uint32(arg(1)))
	case opStoreU64:
		k.storeU64(arg(0), arg(1))
	case opInputLoadU8:
		k.inputLoadU8(arg(0))
	case opInputLoadU64:
		k.inputLoadU64(arg(0))
	case opInputSet:
		k.inputSet(arg(0), arg(1))
	case opOutputSet:
		k.outputSet(arg(0), arg(1))
	case opErrorSet:
		k.errorSet(arg(0))
	case opReset:
		k.reset()
		g.blocks, g.small, g.used = g.blocks[:0], g.small[:0], 0
	case opConfigGet:
		if v, ok := kernelConfig[string(read(arg(0)))]; ok {
			keep(k.writeBlock([]byte(v)), uint64(len(v)))
		}
	case opVarGet:
		name := read(arg(0))
		k.free(arg(0))
		if v, ok := g.vars[string(name)]; ok {
			keep(k.writeBlock(v), uint64(len(v)))
		}
	case opVarSet:
		name := read(arg(0))
		k.free(arg(0))
		if arg(1) == 0 {
			delete(g.vars, string(name))
			break
		}
		v := read(arg(1))
		k.free(arg(1))
		g.vars[string(name)] = v
	case opLogInfo:
		read(arg(0))
		k.free(arg(0))
	default:
		k.field(rootError)
	}
	return false
}

// TestKernelMatchesExtism runs random programs on both hosts, several on
// each instance, and compares everything they did.
func TestKernelMatchesExtism(t *testing.T) {
	runs := 150 // FuzzKernel runs more
	if testing.Short() {
		runs = 30
	}
	for _, pages := range []uint32{16, 80} {
		t.Run(fmt.Sprintf("%d pages", pages), func(t *testing.T) {
			r := newKernelRig(t, pages)
			g := newKernelGen(rand.New(rand.NewPCG(1, uint64(pages))), pages)
			traps := 0
			for i := range runs {
				prog := g.program(1 + g.rng.IntN(120))
				h, e := r.run(prog)
				if d := same(h, e); d != "" {
					t.Fatalf("program %d (%x):\n%s", i, prog, d)
				}
				if h.trapped {
					traps++
				}
				if h.trapped || g.dirty {
					r.fresh()
					g = newKernelGen(g.rng, pages) // a new instance: a new model
				}
			}
			t.Logf("%d programs, %d trapped", runs, traps)
		})
	}
}

// FuzzKernel is TestKernelMatchesExtism with programs drawn from the
// fuzzer's input.
//
//	go test -run='^$' -fuzz='^FuzzKernel$' -fuzztime=30s ./internal/plugin
func FuzzKernel(f *testing.F) {
	f.Add([]byte("a"), uint8(16))
	f.Add([]byte("allocations"), uint8(17))
	f.Add([]byte{0, 1, 2, 3}, uint8(64))
	r := newKernelRig(f, 64)
	f.Fuzz(func(t *testing.T, seed []byte, n uint8) {
		s := sha256.Sum256(seed)
		g := newKernelGen(rand.New(rand.NewChaCha8(s)), r.pages)
		r.t = t
		r.fresh() // the model starts with a new instance too
		for range 1 + int(n)%4 {
			prog := g.program(1 + int(n))
			h, e := r.run(prog)
			if d := same(h, e); d != "" {
				t.Fatalf("program %x:\n%s", prog, d)
			}
			if h.trapped || g.dirty {
				return
			}
		}
	})
}

// TestHostCallCost: a call makes no garbage per host call. The WAT echo
// plugin makes two host calls for every byte it echoes; a call with a text
// a hundred times longer allocates only its larger input and output.
func TestHostCallCost(t *testing.T) {
	p := loadEcho(t, config.Limits{})
	ctx := context.Background()
	inst, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.pool.put(inst, true)
	perCall := func(n int) (allocs, bytesPerCall float64) {
		text := bytes.Repeat([]byte("x"), n)
		input := fmt.Appendf(nil, `{"params":{"name":"echo","arguments":{"text":"%s"}}}`, text)
		want := fmt.Sprintf(`{"content":[{"type":"text","text":"%s"}]}`, text)
		call := func() {
			res, err := inst.call(ctx, "call", input)
			if err != nil || res.rc != 0 || string(res.out) != want {
				t.Fatalf("call: %+v, %v", res, err)
			}
		}
		call() // the memory grows once
		allocs = testing.AllocsPerRun(20, call)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 20 {
			call()
		}
		runtime.ReadMemStats(&after)
		return allocs, float64(after.TotalAlloc-before.TotalAlloc) / 20
	}
	a1, b1 := perCall(100)
	a2, b2 := perCall(10000)
	t.Logf("per call: %.0f allocations, %.0f bytes with 100 bytes echoed; %.0f, %.0f with 10000 (about 20000 host calls more)", a1, b1, a2, b2)
	if a2 > a1+2 {
		t.Errorf("allocations per call grow with the host calls: %.0f, then %.0f", a1, a2)
	}
	// The input and the output are copied once each (about 10 KB each).
	if extra := b2 - b1; extra > 4*10000+4096 {
		t.Errorf("a call with 19800 more host calls allocates %.0f bytes more", extra)
	}
}

// BenchmarkHostCall measures what one host call costs a guest: the WAT echo
// plugin, which makes two for every byte it echoes, on Hangar's instance
// (as Hangar runs it, fuel counter included), on Extism's Go SDK (each
// call through its kernel module), and on bare wazero with trivial host
// functions over Go slices (the floor).
//
//	go test -run='^$' -bench=HostCall ./internal/plugin
func BenchmarkHostCall(b *testing.B) {
	wasm, err := os.ReadFile(testutil.BuildWAT(b, "echo"))
	if err != nil {
		b.Fatal(err)
	}
	text := bytes.Repeat([]byte("x"), 4000)
	input := fmt.Appendf(nil, `{"params":{"name":"echo","arguments":{"text":"%s"}}}`, text)
	ctx := context.Background()
	hostCalls := bareHostCalls(b, wasm, input)
	// The process's CPU time as well as the wall clock's: on a shared
	// machine, other processes' load counts little in it.
	var cpu time.Duration
	loop := func(b *testing.B, call func()) {
		cpu = selfCPUTime()
		for b.Loop() {
			call()
		}
		cpu = selfCPUTime() - cpu
		n := float64(b.N) * float64(hostCalls)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/hostcall")
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/hostcall")
	}

	b.Run("hangar", func(b *testing.B) {
		p := loadEcho(b, config.Limits{})
		inst, err := p.pool.get(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer p.pool.put(inst, true)
		loop(b, func() {
			if _, err := inst.call(ctx, "call", input); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("extism", func(b *testing.B) {
		ep, err := extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}}, extism.PluginConfig{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ep.Close(ctx)
		loop(b, func() {
			if _, _, err := ep.CallWithContext(ctx, "call", input); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("bare-wazero", func(b *testing.B) {
		run := bareEcho(b, wasm)
		loop(b, func() { run(input) })
	})
	b.Logf("%d host calls per call", hostCalls)
}

// selfCPUTime is the CPU time the process has used.
func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareHostCalls counts the host calls of one echo call.
func bareHostCalls(b *testing.B, wasm, input []byte) int {
	n := 0
	run := bareEchoCounting(b, wasm, &n)
	run(input)
	return n
}

func bareEcho(b *testing.B, wasm []byte) func(input []byte) {
	return bareEchoCounting(b, wasm, nil)
}

// bareEchoCounting runs the echo module on bare wazero, with host functions
// over Go slices, counting the host calls in n when it is not nil.
func bareEchoCounting(b *testing.B, wasm []byte, n *int) func(input []byte) {
	ctx := context.Background()
	var in, out []byte
	count := func() {
		if n != nil {
			*n++
		}
	}
	rt := wazero.NewRuntime(ctx)
	b.Cleanup(func() { rt.Close(ctx) })
	err := instantiateHost(ctx, rt, envModule, []hostFunc{
		{"input_length", nil, []api.ValueType{i64}, func(_ context.Context, s []uint64) { count(); s[0] = uint64(len(in)) }},
		{"input_load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(_ context.Context, s []uint64) { count(); s[0] = uint64(in[s[0]]) }},
		{"alloc", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, s []uint64) {
			count()
			out = make([]byte, s[0])
			s[0] = 1
		}},
		{"store_u8", []api.ValueType{i64, i32}, nil, func(_ context.Context, s []uint64) { count(); out[s[0]-1] = byte(s[1]) }},
		{"output_set", []api.ValueType{i64, i64}, nil, func(_ context.Context, s []uint64) { count() }},
	})
	if err != nil {
		b.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	fn := mod.ExportedFunction("call")
	stack := make([]uint64, 1)
	return func(input []byte) {
		in = input
		if err := fn.CallWithStack(ctx, stack); err != nil {
			b.Fatal(err)
		}
		if len(out) == 0 {
			b.Fatal("no output")
		}
	}
}

// BenchmarkCallTool measures a whole tool call of the Go-PDK and the WAT
// echo plugins through Plugin.CallTool, without MCP: what Hangar's side of
// a call costs, host calls included, in the process's CPU time.
//
//	go test -run='^$' -bench=CallTool ./internal/plugin
func BenchmarkCallTool(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello, benchmark"}`)
	// load loads the plugin at path in an engine of its own, closed when
	// the benchmark ends.
	load := func(b *testing.B, path, name string) *Plugin {
		wasm, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		e, err := NewEngine("")
		if err != nil {
			b.Fatal(err)
		}
		p, err := e.Load(ctx, wasm, Options{Name: name, Logger: discard()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close(ctx) })
		return p
	}
	for _, c := range []struct{ name, path string }{
		{"go-pdk", testutil.BuildPlugin(b, "./bench/plugins/echo")},
		{"wat", testutil.BuildWAT(b, "echo")},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := load(b, c.path, c.name)
			cpu := selfCPUTime()
			for b.Loop() {
				if _, err := p.CallTool(ctx, nil, "echo", args); err != nil {
					b.Fatal(err)
				}
			}
			cpu = selfCPUTime() - cpu
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1000, "cpu-µs/call")
		})
		// The same call after other data filled the CPU's caches, as a
		// server's other work fills them between two calls of a plugin
		// (docs/performance.md, "Where a stdio call's time goes"): 2 MiB,
		// more than a core's L2 on the machines measured, and 16 MiB,
		// half their L3. The time per op is the call's alone (the timer
		// stops while the caches are filled).
		for _, mib := range []int{2, 16} {
			b.Run(fmt.Sprintf("%s/after-%dMiB", c.name, mib), func(b *testing.B) {
				p := load(b, c.path, c.name)
				other := make([]byte, mib<<20)
				for b.Loop() {
					b.StopTimer()
					for i := 0; i < len(other); i += 64 {
						other[i]++
					}
					b.StartTimer()
					if _, err := p.CallTool(ctx, nil, "echo", args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
