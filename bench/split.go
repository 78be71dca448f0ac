package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The parts of a call, in the order a sample's frames are matched against
// them: a sample belongs to the first part any of whose markers is among
// its frames.
var parts = []struct{ name, markers string }{
	{"guest (the plugin's machine code)", "runtime._ExternalCode"},
	{"GC (background work)", "runtime.gcBgMarkWorker runtime.bgsweep runtime.bgscavenge"},
	{"start-up (loading plugins)", "cli.loadPlugins plugin.(*Engine).Load"},
	{"Extism and wazero (calling the guest)", "extism/go-sdk. tetratelabs/wazero"},
	{"Hangar: plugin package (envelope, pool, budget, output)", "hangar/internal/plugin."},
	{"Hangar: dispatch (lookup, arguments, call bookkeeping)", "core.(*Core).CallTool core.(*Core).ReadResource core.(*Core).begin"},
	{"I/O system calls (read, write)", "syscall.Syscall syscall.RawSyscall internal/poll."},
	{"MCP layer: Hangar's fast path", "hangar/internal/server"},
	{"MCP layer: net/http", "net/http."},
	{"MCP layer: go-sdk", "modelcontextprotocol/go-sdk"},
	{"other (runtime, scheduler)", ""},
}

// splitProfile divides the CPU time of a profile among the parts, by the
// frames of each sample (go tool pprof -raw), and returns each part's
// share.
func splitProfile(ctx context.Context, gobin, file string) (map[string]float64, error) {
	out, err := exec.CommandContext(ctx, gobin, "tool", "pprof", "-raw", file).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -raw: %v", err)
	}
	type sample struct {
		value int64
		locs  []int
	}
	var (
		samples []sample
		frames  = map[int][]string{} // location -> function names
		section string
		loc     int
	)
	sampleLine := regexp.MustCompile(`^\s*\d+\s+(\d+):\s*(.*)$`)
	locLine := regexp.MustCompile(`^\s*(\d+):\s*0x[0-9a-f]+\s*(?:M=\d+\s*)?(.*)$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Samples:"), strings.HasPrefix(line, "Locations"), strings.HasPrefix(line, "Mappings"):
			section = line[:1]
			continue
		}
		switch section {
		case "S":
			if m := sampleLine.FindStringSubmatch(line); m != nil {
				v, _ := strconv.ParseInt(m[1], 10, 64)
				s := sample{value: v}
				for _, f := range strings.Fields(m[2]) {
					n, _ := strconv.Atoi(f)
					s.locs = append(s.locs, n)
				}
				samples = append(samples, s)
			}
		case "L":
			if m := locLine.FindStringSubmatch(line); m != nil {
				loc, _ = strconv.Atoi(m[1])
				line = m[2]
			}
			if f := strings.Fields(line); len(f) > 0 {
				frames[loc] = append(frames[loc], f[0])
			}
		}
	}
	byPart := map[string]int64{}
	var total int64
	for _, s := range samples {
		var fns []string
		for _, l := range s.locs {
			fns = append(fns, frames[l]...)
		}
		stack := strings.Join(fns, " ")
		for _, p := range parts {
			if p.markers == "" || slices.ContainsFunc(strings.Fields(p.markers), func(m string) bool { return strings.Contains(stack, m) }) {
				byPart[p.name] += s.value
				break
			}
		}
		total += s.value
	}
	shares := map[string]float64{}
	for name, v := range byPart {
		shares[name] = float64(v) / float64(max(total, 1))
	}
	return shares, nil
}

// splitText renders a split, with each part's CPU time per call given the
// server's CPU time per call.
func splitText(shares map[string]float64, perCall float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server CPU per call: %.1f µs\n", perCall)
	for _, p := range parts {
		if s := shares[p.name]; s > 0 {
			fmt.Fprintf(&b, "%-58s %5.1f%%  %6.1f µs/call\n", p.name, 100*s, s*perCall)
		}
	}
	return b.String()
}
