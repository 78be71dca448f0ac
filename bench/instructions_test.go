package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestMarkingReader: the marks fall on reading the A-th and B-th
// tools/call request, however the reads split the stream.
func TestMarkingReader(t *testing.T) {
	var in strings.Builder
	for i := range 5 {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`+"\n", i)
	}
	m := &markingReader{r: iotest.OneByteReader(strings.NewReader(in.String())), at: [2]int{2, 4}}
	before := markCount
	var out bytes.Buffer
	buf := make([]byte, 1)
	var at []int
	for {
		n, err := m.Read(buf)
		out.Write(buf[:n])
		if markCount != before+len(at) {
			at = append(at, strings.Count(out.String(), "\n"))
		}
		if err == io.EOF {
			break
		}
	}
	if out.String() != in.String() {
		t.Fatal("the stream changed")
	}
	// Marked while reading the second and the fourth line.
	if fmt.Sprint(at) != "[1 3]" {
		t.Errorf("marked after %v whole lines, want [1 3]", at)
	}
}

// TestReadCallgrind reads a made-up dump: the total, the guest's code
// (functions named by address) and the host's collector.
func TestReadCallgrind(t *testing.T) {
	dump := `# callgrind format
version: 1
creator: callgrind-3.19.0
events: Ir
summary: 10000

ob=(1) /bench
fl=(1) proc.go
fn=(1) runtime.scanObject
1 1000
fn=(2) main.callLoop
2 500
cfn=(3) 0x000000004c000100
calls=10 0
2 4000
ob=(2) ???
fl=(2) ???
fn=(3)
0 3000
fn=(4) 0x000000004c000200'2
0 1000
ob=(1)
fl=(1)
fn=(5) runtime.mallocgc
3 500

totals: 10000
`
	path := filepath.Join(t.TempDir(), "cg.out")
	if err := os.WriteFile(path, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readCallgrind(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r.PerCall != 1000 || r.Guest != 400 || r.HostGC != 100 {
		t.Errorf("per call %v, guest %v, GC %v; want 1000, 400, 100", r.PerCall, r.Guest, r.HostGC)
	}
}

// TestGuestFunctions names the guest's code from a made-up cache entry
// and module.
func TestGuestFunctions(t *testing.T) {
	dir := t.TempDir()
	// A module importing one function and defining two, named.
	names := []byte{}
	names = append(names, 2)                   // two names
	names = append(names, 1, 3, 'o', 'n', 'e') // function 1
	names = append(names, 2, 3, 't', 'w', 'o') // function 2
	nameSec := append([]byte{4, 'n', 'a', 'm', 'e', 1, byte(len(names))}, names...)
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	wasm = append(wasm, 1, 4, 1, 0x60, 0, 0)           // type section: () -> ()
	wasm = append(wasm, 2, 7, 1, 1, 'm', 1, 'f', 0, 0) // import m.f
	wasm = append(wasm, 3, 3, 2, 0, 0)                 // two functions
	wasm = append(wasm, 0, byte(len(nameSec)))         // custom section
	wasm = append(wasm, nameSec...)
	wasmPath := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(wasmPath, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	imports, locals, got, ok := wasmFunctions(wasm)
	if !ok || imports != 1 || locals != 2 || got[1] != "one" || got[2] != "two" {
		t.Fatalf("wasmFunctions = %d, %d, %v, %v", imports, locals, got, ok)
	}
	// The cache entry: code of 0x300 bytes, functions at 0 and 0x100.
	var entry bytes.Buffer
	entry.WriteString("WAZEVO")
	entry.WriteByte(7)
	entry.WriteString("v1.12.0")
	binary.Write(&entry, binary.LittleEndian, uint32(2))
	binary.Write(&entry, binary.LittleEndian, []uint64{0, 0x100, 0x300})
	if err := os.MkdirAll(filepath.Join(dir, "cache", "wazero"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache", "wazero", "key"), entry.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Callgrind saw the code at 0x4c000000: both functions' starts, a
	// block inside the second, and a trampoline outside.
	dump := "events: Ir\nfn=(1) 0x000000004c000000\n0 600\nfn=(2) 0x000000004c000100\n0 300\nfn=(3) 0x000000004c000180\n0 100\nfn=(4) 0x000000005c000000\n0 50\ntotals: 1050\n"
	dumpPath := filepath.Join(dir, "cg.out")
	if err := os.WriteFile(dumpPath, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	fns := guestFunctions(wasmPath, filepath.Join(dir, "cache"), dumpPath, 1)
	if fmt.Sprint(fns) != "[{one 600} {two 400} {(wazero's trampolines) 50}]" {
		t.Errorf("guestFunctions = %v", fns)
	}
}

// TestProfileWindow: the profiles cover the window the signals mark.
func TestProfileWindow(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "allocs.pprof")
	stop, err := startProfiles(cpu, mem)
	if err != nil {
		t.Fatal(err)
	}
	signalWindow(os.Getpid())(true)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(cpu); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no profile started")
		}
	}
	if _, err := os.Stat(mem + ".base"); err != nil {
		t.Error(err)
	}
	signalWindow(os.Getpid())(false)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
