package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The instructions section counts, with valgrind's callgrind, the machine
// instructions a call costs: a count that does not depend on what else
// the machine runs, where the CPU time of a busy shared machine does. It
// counts in two kinds of process, both this binary in a hidden mode:
//
//   - -serve calls: one plugin loaded by Hangar's engine (internal/plugin)
//     and called n times, no MCP: the floor of a Go plugin (an export that
//     returns a constant, bench/plugins/floor), the Go-PDK echo and the
//     WAT echo;
//   - -serve hangar: hangar serve over stdio, driven at C=1 by a go-sdk
//     client in this process: the server's whole cost per call.
//
// The counted window is marked by calls to callgrindMark, which callgrind
// is told to dump its counters at. Instructions in code that no object
// file holds are the guest's machine code, compiled by wazero: callgrind
// names them by address, which the section maps to the module's functions
// where it can (guestFunctions).

// instrCost is what callgrind counted for one case.
type instrCost struct {
	Case  string `json:"case"`
	Calls int    `json:"calls"`
	// PerCall is the instructions of the window per call, in every thread
	// of the process; Guest the part of them in the guest's machine code.
	PerCall float64 `json:"instructions_per_call"`
	Guest   float64 `json:"guest_instructions_per_call"`
	// HostGC is the part in the garbage collector of the host's Go runtime
	// (by function name, roughly): collections come whole, a few per
	// thousand calls, so it is the part that varies between runs.
	HostGC float64 `json:"host_gc_instructions_per_call"`
	// Functions are the guest's functions that cost the most, by name.
	Functions []instrFunc `json:"guest_functions,omitempty"`
}

type instrFunc struct {
	Name    string  `json:"name"`
	PerCall float64 `json:"instructions_per_call"`
}

// instructionsTable renders the instructions section.
func instructionsTable(cs []instrCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Instructions per call (callgrind)\n\n")
	fmt.Fprintf(&b, "Counted by valgrind's callgrind over a window of calls, in every thread of the process: the same on a busy machine as on a quiet one. \"Guest\" is the part in the plugin's machine code (compiled by wazero; the Go runtime in the guest included), the rest is Hangar, wazero and the Go runtime of the host. The engine's cases call the tool through internal/plugin (no MCP); the server's are `hangar serve` over stdio, one call at a time.\n\n")
	fmt.Fprintf(&b, "| case | calls | instructions per call | guest | guest share | host GC (varies) |\n|---|---:|---:|---:|---:|---:|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.0f%% | %s |\n", c.Case, c.Calls, thousands(c.PerCall), thousands(c.Guest), 100*c.Guest/max(c.PerCall, 1), thousands(c.HostGC))
	}
	b.WriteString("\n")
	for _, c := range cs {
		if len(c.Functions) == 0 {
			continue
		}
		fmt.Fprintf(&b, "The guest's functions that cost the most, %s (instructions per call):\n\n| function | instructions |\n|---|---:|\n", c.Case)
		for _, f := range c.Functions {
			fmt.Fprintf(&b, "| `%s` | %s |\n", f.Name, thousands(f.PerCall))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// thousands formats x rounded, with commas between thousands.
func thousands(x float64) string {
	s := strconv.FormatInt(int64(x+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// callgrindArgs runs a process under callgrind, dumping at callgrindMark.
func callgrindArgs(out string) []string {
	return []string{"valgrind", "--tool=callgrind", "--dump-before=main.callgrindMark", "--callgrind-out-file=" + out}
}

// callgrindEnv keeps the Go runtime from preempting goroutines by signal,
// which valgrind 3.19's callgrind does not survive.
var callgrindEnv = []string{"GODEBUG=asyncpreemptoff=1"}

func (e *env) runInstructions(ctx context.Context, res *results) error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		logf("instructions: valgrind not found, section skipped (Debian: apt install valgrind)")
		return nil
	}
	o := e.o
	dir := filepath.Join(e.dir, "instructions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// This binary again, with the symbols callgrind needs to find
	// callgrindMark (go run leaves them out), and without cgo.
	self := filepath.Join(dir, "bench")
	if err := runCmd(ctx, e.root, []string{"CGO_ENABLED=0"}, e.gobin, "build", "-o", self, "./bench"); err != nil {
		return err
	}
	floor := filepath.Join(e.dir, "floor.wasm")
	if err := e.goBuild(ctx, []string{"GOOS=wasip1", "GOARCH=wasm"}, "-buildmode=c-shared", "-trimpath", "-o", floor, "./bench/plugins/floor"); err != nil {
		return err
	}
	cache := filepath.Join(dir, "cache")
	n := pick(o.quick, 300, 2000)
	engine := []struct{ name, wasm string }{
		{"Go plugin, an export that returns a constant (floor), Hangar's engine", floor},
		{"Go-PDK echo, Hangar's engine", e.goEcho},
		{"WAT echo, Hangar's engine", e.watEcho},
	}
	serve := []struct{ name, wasm string }{
		{"hangar serve, stdio, Go-PDK echo, one call at a time", e.goEcho},
		{"hangar serve, stdio, WAT echo, one call at a time", e.watEcho},
	}
	if o.baseEcho != "" {
		base, err := filepath.Abs(o.baseEcho)
		if err != nil {
			return err
		}
		engine = slices.Insert(engine, 1, struct{ name, wasm string }{"Go-PDK echo (-base-echo), Hangar's engine", base})
		serve = slices.Insert(serve, 0, struct{ name, wasm string }{"hangar serve, stdio, Go-PDK echo (-base-echo), one call at a time", base})
	}
	for _, c := range engine {
		// Compiled outside callgrind first: the run under it loads the
		// machine code from the cache.
		argv := []string{self, "-serve", "calls", "-cache", cache, "-n", "1", c.wasm}
		if err := runCmd(ctx, e.root, nil, argv[0], argv[1:]...); err != nil {
			return err
		}
		out := filepath.Join(dir, fmt.Sprintf("calls-%d.out", len(res.Instructions)))
		argv = append(callgrindArgs(out), self, "-serve", "calls", "-cache", cache, "-n", strconv.Itoa(n), c.wasm)
		if err := runCmd(ctx, e.root, callgrindEnv, argv[0], argv[1:]...); err != nil {
			return err
		}
		r, err := readCallgrind(out+".2", n)
		if err != nil {
			return err
		}
		r.Case = c.name
		if c.wasm != floor && c.wasm != e.watEcho { // the Go-PDK echoes
			r.Functions = guestFunctions(c.wasm, cache, out+".2", n)
		}
		res.Instructions = append(res.Instructions, r)
		logf("instructions: %-70s %9.0f per call, guest %9.0f", r.Case, r.PerCall, r.Guest)
	}
	for _, c := range serve {
		r, err := e.countServe(ctx, self, dir, cache, c.wasm, n)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		r.Case = c.name
		res.Instructions = append(res.Instructions, r)
		logf("instructions: %-70s %9.0f per call, guest %9.0f (%d calls)", r.Case, r.PerCall, r.Guest, r.Calls)
	}
	return nil
}

// countServe runs hangar serve (this binary's -serve hangar) under
// callgrind and makes calls calls over stdio, one at a time, after a few
// uncounted; the window is marked by the server as it reads the requests
// (-mark-calls: callgrind does not survive the signals of -profile's
// window).
func (e *env) countServe(ctx context.Context, self, dir, cache, wasm string, calls int) (instrCost, error) {
	const before = 10
	out := filepath.Join(dir, fmt.Sprintf("serve-%s.out", strings.TrimSuffix(filepath.Base(wasm), ".wasm")))
	// Under callgrind a call is fifty times slower: no time limit that a
	// loaded machine could reach.
	config := filepath.Join(dir, "hangar.yaml")
	yaml := fmt.Sprintf("plugins:\n  - name: echo\n    path: %s\n    limits:\n      call_timeout: 1h\n", strconv.Quote(wasm))
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		return instrCost{}, err
	}
	argv := append([]string{"env"}, callgrindEnv...)
	argv = append(append(argv, callgrindArgs(out)...), self, "-serve", "hangar", "-mark-calls", fmt.Sprintf("%d,%d", before+1, before+calls+1),
		"--", "serve", "--cache-dir", cache, "--log-level", "info", "--config", config)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	s, err := e.startStdio(ctx, "callgrind-serve", argv)
	if err != nil {
		return instrCost{}, err
	}
	defer s.stop()
	if err := waitLogReady(ctx, s.log, 10*time.Minute); err != nil {
		return instrCost{}, err
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: echoInput}
	for i := range before + calls + 1 {
		res, err := s.session.CallTool(ctx, params)
		if err == nil {
			err = checkResult(res, payload)
		}
		if err != nil {
			return instrCost{}, fmt.Errorf("call %d: %w", i, err)
		}
	}
	return readCallgrind(out+".2", calls)
}

// callgrindFile is what readCallgrindFile reads of a callgrind output file.
type callgrindFile struct {
	total int64
	// byAddress is the self cost of each function callgrind names by
	// address: code outside any object file.
	byAddress map[uint64]int64
	// byName is the self cost of every other function.
	byName map[string]int64
}

// hostGC matches the functions of the Go runtime's garbage collector.
var hostGC = regexp.MustCompile(`^runtime\.(gc|bgsweep|bgscavenge|sweep|scan|mark|greyobject|tryDeferToSpanScan|typePointers|findObject|spanOf|wbBuf|\(\*gcWork\)|\(\*gcBits\)|\(\*spanQueue\)|\(\*spanSPMC\)|\(\*sweepLocked\)|\(\*mspan\)\.(typePointers|mark|heapBits)|\(\*spanInlineMarkBits\))`)

// readCallgrind reads the dump of a window of calls.
func readCallgrind(path string, calls int) (instrCost, error) {
	f, err := readCallgrindFile(path)
	if err != nil {
		return instrCost{}, err
	}
	var guest, gc int64
	for _, c := range f.byAddress {
		guest += c
	}
	for name, c := range f.byName {
		if hostGC.MatchString(name) {
			gc += c
		}
	}
	per := func(x int64) float64 { return float64(x) / float64(calls) }
	return instrCost{Calls: calls, PerCall: per(f.total), Guest: per(guest), HostGC: per(gc)}, nil
}

var callgrindName = regexp.MustCompile(`^c?(fn|ob|fl|fi|fe)=(?:\((\d+)\))?\s*(.*)$`)

// readCallgrindFile reads the total and the self cost of the functions
// named by address (the format: valgrind's docs, "Callgrind Format
// Specification").
func readCallgrindFile(path string) (*callgrindFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := &callgrindFile{byAddress: map[uint64]int64{}, byName: map[string]int64{}}
	names := map[string]string{} // "fn(12)" -> name
	var fn string
	afterCalls := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := callgrindName.FindStringSubmatch(line); m != nil {
			kind, id, name := m[1], m[2], m[3]
			if id != "" {
				if name != "" {
					names[kind+id] = name
				} else {
					name = names[kind+id]
				}
			}
			if kind == "fn" && !strings.HasPrefix(line, "c") {
				fn = name
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "totals:"), strings.HasPrefix(line, "summary:"):
			if out.total == 0 {
				out.total, _ = strconv.ParseInt(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), 10, 64)
			}
		case strings.HasPrefix(line, "calls="):
			afterCalls = true
		case line != "" && (line[0] >= '0' && line[0] <= '9' || line[0] == '+' || line[0] == '-' || line[0] == '*'):
			if afterCalls { // the inclusive cost of a call
				afterCalls = false
				continue
			}
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			cost, _ := strconv.ParseInt(f[1], 10, 64)
			name := strings.SplitN(fn, "'", 2)[0] // without callgrind's recursion depth
			if addr, err := strconv.ParseUint(strings.TrimPrefix(name, "0x"), 16, 64); err == nil && strings.HasPrefix(name, "0x") {
				out.byAddress[addr] += cost
			} else {
				out.byName[name] += cost
			}
		}
	}
	if out.total == 0 {
		return nil, fmt.Errorf("%s: no total", path)
	}
	return out, sc.Err()
}

// guestFunctions names the guest's machine code that cost the most: it
// finds the module's entry in wazero's compilation cache (the function
// count and the code's length are in its header, then each function's
// offset), the address where callgrind saw that code (the offsets fit the
// addresses callgrind names functions by), and the names of the module's
// functions (its "name" section). The cache layout is wazero's own
// (v1.12): when it is not as expected, no names.
func guestFunctions(wasm, cacheDir, dump string, calls int) []instrFunc {
	b, err := os.ReadFile(wasm)
	if err != nil {
		return nil
	}
	imports, locals, names, ok := wasmFunctions(b)
	if !ok {
		return nil
	}
	cg, err := readCallgrindFile(dump)
	if err != nil || len(cg.byAddress) == 0 {
		return nil
	}
	var addrs []uint64
	for a := range cg.byAddress {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	costliest := slices.Clone(addrs)
	slices.SortFunc(costliest, func(a, b uint64) int { return int(cg.byAddress[b] - cg.byAddress[a]) })
	var best struct {
		base    uint64
		score   int
		offsets []uint64
		size    uint64
	}
	filepath.WalkDir(cacheDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		offsets, size, ok := wazeroOffsets(path, locals)
		if !ok {
			return nil
		}
		set := map[uint64]bool{}
		for _, o := range offsets {
			set[o] = true
		}
		// The base is where an address callgrind saw minus the offset of
		// the function that starts there, and the start of a mapping, so
		// a multiple of the page size: try the costliest addresses against
		// every offset, and keep the base most addresses fall on.
		tried := map[uint64]bool{}
		for _, a := range costliest[:min(len(costliest), 30)] {
			for _, o := range offsets {
				base := a - o
				if o > a || base%4096 != 0 || tried[base] {
					continue
				}
				tried[base] = true
				score := 0
				for _, x := range addrs {
					if x >= base && set[x-base] {
						score++
					}
				}
				if score > best.score {
					best.base, best.score, best.offsets, best.size = base, score, offsets, size
				}
			}
		}
		return nil
	})
	if best.score < len(addrs)/2 {
		return nil
	}
	per := map[string]int64{}
	for a, c := range cg.byAddress {
		if a < best.base || a-best.base >= best.size {
			per["(wazero's trampolines)"] += c
			continue
		}
		i, found := slices.BinarySearch(best.offsets, a-best.base)
		if !found {
			i--
		}
		name := names[imports+uint32(i)]
		if name == "" {
			name = fmt.Sprintf("function %d", imports+uint32(i))
		}
		per[name] += c
	}
	var out []instrFunc
	for name, c := range per {
		out = append(out, instrFunc{name, float64(c) / float64(calls)})
	}
	slices.SortFunc(out, func(a, b instrFunc) int {
		if a.PerCall != b.PerCall {
			if a.PerCall > b.PerCall {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out[:min(len(out), 15)]
}

// wazeroOffsets reads the header of a wazero (v1.12) compilation cache
// entry: "WAZEVO", the version, the number of functions, the offset of
// each in the code, the code's length. It reports false for anything else,
// or another number of functions.
func wazeroOffsets(path string, functions uint32) (offsets []uint64, size uint64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false
	}
	defer f.Close()
	r := bufio.NewReader(f)
	head := make([]byte, 7)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:6]) != "WAZEVO" {
		return nil, 0, false
	}
	if _, err := r.Discard(int(head[6])); err != nil {
		return nil, 0, false
	}
	var n uint32
	if binary.Read(r, binary.LittleEndian, &n) != nil || n != functions {
		return nil, 0, false
	}
	offsets = make([]uint64, n)
	if binary.Read(r, binary.LittleEndian, offsets) != nil || binary.Read(r, binary.LittleEndian, &size) != nil {
		return nil, 0, false
	}
	return offsets, size, slices.IsSorted(offsets)
}

// wasmFunctions reads a module's number of imported functions, of
// functions it defines, and the names of its "name" section.
func wasmFunctions(b []byte) (imports, locals uint32, names map[uint32]string, ok bool) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return 0, 0, nil, false
	}
	names = map[uint32]string{}
	ok = true
	i := 8
	uleb := func() int {
		var v uint64
		for shift := 0; shift < 35; shift += 7 {
			if i >= len(b) {
				break
			}
			c := b[i]
			i++
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return int(v)
			}
		}
		ok = false
		return 0
	}
	limits := func() {
		if flags := uleb(); flags&1 != 0 {
			uleb()
		}
		uleb()
	}
	for i < len(b) && ok {
		id := b[i]
		i++
		size := uleb()
		end := i + size
		if !ok || end > len(b) {
			return 0, 0, nil, false
		}
		switch id {
		case 2: // imports
			for n := uleb(); n > 0 && ok; n-- {
				i += uleb() // module
				i += uleb() // name
				if i >= end {
					return 0, 0, nil, false
				}
				kind := b[i]
				i++
				switch kind {
				case 0: // function
					uleb()
					imports++
				case 1: // table
					i++
					limits()
				case 2: // memory
					limits()
				case 3: // global
					i += 2
				default:
					return 0, 0, nil, false
				}
			}
		case 3: // functions
			locals = uint32(uleb())
		case 0: // custom
			l := uleb()
			if i+l > end || string(b[i:i+l]) != "name" {
				break
			}
			i += l
			for i < end && ok {
				sub := b[i]
				i++
				l := uleb()
				subEnd := i + l
				if sub == 1 { // function names
					for n := uleb(); n > 0 && ok && i < subEnd; n-- {
						idx := uint32(uleb())
						l := uleb()
						if i+l > subEnd {
							return 0, 0, nil, false
						}
						names[idx] = string(b[i : i+l])
						i += l
					}
				}
				i = subEnd
			}
		}
		i = end
	}
	return imports, locals, names, ok && locals > 0
}
