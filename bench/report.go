package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

func (r *results) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (r *results) cell(transport, target string, c int) *cell {
	for i := range r.Cells {
		x := &r.Cells[i]
		if x.Transport == transport && x.Target == target && x.C == c {
			return x
		}
	}
	return nil
}

func (r *results) scaling(target string, c int) *cell {
	for i := range r.Scaling {
		if x := &r.Scaling[i]; x.Target == target && x.C == c {
			return x
		}
	}
	return nil
}

func (r *results) coldCase(prefix string) *cold {
	for i := range r.Cold {
		if strings.HasPrefix(r.Cold[i].Case, prefix) {
			return &r.Cold[i]
		}
	}
	return nil
}

func ratio(a, b *cell) (float64, bool) {
	if a == nil || b == nil || b.Throughput == 0 {
		return 0, false
	}
	return a.Throughput / b.Throughput, true
}

func label(key string) string {
	for _, t := range allTargets {
		if t.Key == key {
			return t.Label
		}
	}
	return key
}

// peers are the pairs of throughput targets that serve the same plugin,
// Hangar's first and the Node peer's: the report compares them. Cells of
// another plugin or another protocol version are a line here (and their
// targets in allTargets).
var peers = []struct{ hangar, node, plugin string }{
	{"hangar-go", "node-go", "Go-PDK echo"},
	{"hangar-wat", "node-wat", "WAT echo"},
}

// peerRow is one measure of Hangar against the Node peer: what the
// server itself spends, per call or in memory.
type peerRow struct {
	Measure      string
	Hangar, Node float64
	Unit         string  // "µs", "MiB", "ms"
	Target       float64 // the most Hangar / Node may be; 0: none
	Kind         string  // the target it counts for: "cpu http", "cpu stdio", "rss", "start"
}

func (p peerRow) ratio() float64 { return p.Hangar / p.Node }

// peerRows are the measures of issue 17, at the top concurrency: server CPU
// per call (the server process's own CPU time over the measured window,
// divided by the calls) and resident memory, Hangar against the Node peer.
func (r *results) peerRows() []peerRow {
	var rows []peerRow
	if len(r.Levels) == 0 {
		return nil
	}
	top := slices.Max(r.Levels)
	for _, tr := range []string{"http", "stdio"} {
		for _, p := range peers {
			h, n := r.cell(tr, p.hangar, top), r.cell(tr, p.node, top)
			if h == nil || n == nil || h.ServerCPU == 0 || n.ServerCPU == 0 {
				continue
			}
			target := map[string]float64{"http": 0.5, "stdio": 1}[tr]
			rows = append(rows, peerRow{fmt.Sprintf("server CPU per call, %s, %s, C=%d", tr, p.plugin, top), h.ServerCPU, n.ServerCPU, "µs", target, "cpu " + tr})
		}
	}
	var hm, nm *memLoad
	for i := range r.Memory {
		switch r.Memory[i].Target {
		case "hangar-go":
			hm = &r.Memory[i]
		case "node-go":
			nm = &r.Memory[i]
		}
	}
	if hm != nil && nm != nil && nm.Idle > 0 && nm.LoadPeak > 0 {
		rows = append(rows,
			peerRow{fmt.Sprintf("RSS, %d plugins idle (every plugin loaded)", hm.Plugins), mibf(hm.Idle), mibf(nm.Idle), "MiB", 1, "rss"},
			peerRow{fmt.Sprintf("RSS, %d plugins, peak under load (C=%d)", hm.Plugins, hm.Load.C), mibf(hm.LoadPeak), mibf(nm.LoadPeak), "MiB", 1, "rss"})
	}
	if h, n := r.coldCase("Hangar, 10 Go-PDK plugins, warm"), r.coldCase("Node peer, 10 Go-PDK plugins"); h != nil && n != nil && n.Median > 0 {
		rows = append(rows, peerRow{"first tools/list, 10 plugins, warm caches", h.Median, n.Median, "ms", 0.2, "start"})
	}
	return rows
}

func mibf(b int64) float64 { return float64(b) / (1 << 20) }

// check is one target of the issue, evaluated on the numbers.
type check struct {
	Name   string
	Pass   bool
	Detail string
}

func (r *results) checks() []check {
	var out []check
	top := slices.Max(r.Levels)
	var pairs [][2]string
	for _, p := range peers {
		pairs = append(pairs, [2]string{p.hangar, p.node})
	}

	// What the server spends, Hangar / Node peer: issue 17's targets (the
	// rows' own), and issue 27's tighter bounds on the CPU per call.
	for _, kind := range []struct {
		kind, name string
		most       float64 // 0: the row's Target
	}{
		{"cpu http", "Server CPU per call, Hangar / Node peer, HTTP ≤ 0.5", 0},
		{"cpu stdio", "Server CPU per call, Hangar / Node peer, stdio ≤ 1.0", 0},
		{"rss", "RSS with 10 plugins, Hangar / Node peer, idle and peak under load ≤ 1.0", 0},
		{"start", "First tools/list with 10 plugins, warm caches, Hangar / Node peer ≤ 0.2", 0},
		{"cpu http", "Server CPU per call, Hangar / Node peer, HTTP ≤ 0.45", 0.45},
		{"cpu stdio", "Server CPU per call, Hangar / Node peer, stdio ≤ 0.9", 0.9},
	} {
		var parts []string
		pass, any := true, false
		for _, row := range r.peerRows() {
			if row.Kind != kind.kind {
				continue
			}
			any = true
			most := row.Target
			if kind.most != 0 {
				most = kind.most
			}
			if row.ratio() > most {
				pass = false
			}
			parts = append(parts, fmt.Sprintf("%s: %.2f", row.Measure, row.ratio()))
		}
		if any {
			out = append(out, check{kind.name, pass, strings.Join(parts, "; ")})
		}
	}
	// Issue 27: a call at MCP 2026-07-28 costs the server at most 1.1 times
	// what the same call in a 2025-11-25 session costs, for both plugins,
	// over both transports, at every level.
	{
		var parts []string
		pass, any := true, false
		for _, tr := range []string{"http", "stdio"} {
			for _, p := range peers {
				for _, c := range r.Levels {
					old, now := r.cell(tr, p.hangar, c), r.cell(tr, p.hangar+statelessSuffix, c)
					if old == nil || now == nil || old.ServerCPU == 0 || now.ServerCPU == 0 {
						continue
					}
					any = true
					x := now.ServerCPU / old.ServerCPU
					if x > 1.1 {
						pass = false
					}
					parts = append(parts, fmt.Sprintf("%s %s C=%d: %.2f", tr, short(p.hangar), c, x))
				}
			}
		}
		if any {
			out = append(out, check{"Server CPU per call, 2026-07-28 / 2025-11-25 session, every level ≤ 1.1", pass, strings.Join(parts, "; ")})
		}
	}
	// b >= 3x c at C=8 and C=64.
	{
		var parts []string
		pass, any := true, false
		for _, c := range []int{8, 64} {
			for _, tr := range []string{"http", "stdio"} {
				for _, p := range pairs {
					x, ok := ratio(r.cell(tr, p[0], c), r.cell(tr, p[1], c))
					if !ok {
						continue
					}
					any = true
					if x < 3 {
						pass = false
					}
					parts = append(parts, fmt.Sprintf("%s %s C=%d: %.1f×", tr, short(p[0]), c, x))
				}
			}
		}
		if any {
			out = append(out, check{"Hangar ≥ 3× the Node peer's throughput at C=8 and C=64", pass, strings.Join(parts, "; ")})
		}
	}
	// The MCP layer (issue 10): b / c at the top level, HTTP >= 2x and
	// stdio >= 1x.
	{
		var parts []string
		pass, any := true, false
		for _, tr := range []string{"http", "stdio"} {
			want := map[string]float64{"http": 2, "stdio": 1}[tr]
			for _, p := range pairs {
				x, ok := ratio(r.cell(tr, p[0], top), r.cell(tr, p[1], top))
				if !ok {
					continue
				}
				any = true
				if x < want {
					pass = false
				}
				parts = append(parts, fmt.Sprintf("%s %s: %.1f×", tr, short(p[0]), x))
			}
		}
		if any {
			out = append(out, check{fmt.Sprintf("Hangar / Node peer at C=%d: HTTP ≥ 2×, stdio ≥ 1×", top), pass, strings.Join(parts, "; ")})
		}
	}
	// b >= 60% of a at the top level.
	{
		var parts []string
		pass, any := true, false
		for _, tr := range []string{"http", "stdio"} {
			for _, b := range []string{"hangar-go", "hangar-wat"} {
				x, ok := ratio(r.cell(tr, b, top), r.cell(tr, "native", top))
				if !ok {
					continue
				}
				any = true
				if x < 0.6 {
					pass = false
				}
				parts = append(parts, fmt.Sprintf("%s %s: %.0f%%", tr, short(b), 100*x))
			}
		}
		if any {
			out = append(out, check{fmt.Sprintf("Hangar ≥ 60%% of (a), a go-sdk server with the tool in Go, at C=%d", top), pass, strings.Join(parts, "; ")})
		}
	}
	// One plugin scales with concurrency up to the cores.
	if one, cores := r.scaling("hangar-go", 1), r.Machine.Cores; one != nil {
		if n := r.scaling("hangar-go", cores); n != nil && one.Throughput > 0 {
			x := n.Throughput / one.Throughput
			detail := fmt.Sprintf("CPU-bound tool (spin), Hangar: C=%d/C=1 = %.2f× on %d cores", cores, x, cores)
			if a, b := r.scaling("node-go", 1), r.scaling("node-go", cores); a != nil && b != nil && a.Throughput > 0 {
				detail += fmt.Sprintf(" (Node peer: %.2f×)", b.Throughput/a.Throughput)
			}
			out = append(out, check{"Throughput for one plugin grows with concurrency up to the core count", x >= 0.75*float64(cores), detail})
		}
	}
	// Warm start.
	if w := r.coldCase("Hangar, 10 Go-PDK plugins, warm"); w != nil {
		out = append(out, check{"Warm start, 10 plugins: first tools/list answer < 100 ms", w.Median < 100, fmt.Sprintf("median %.0f ms", w.Median)})
	}
	if c := r.coldCase("Hangar, 10 Go-PDK plugins, empty"); c != nil {
		out = append(out, check{"Empty caches, 10 plugins: first tools/list answer < 2 s", c.Median < 2000, fmt.Sprintf("median %.0f ms; every plugin compiled at %.0f ms", c.Median, c.Ready)})
	}
	// Against the base binary of the same run (-base), case by case.
	for _, c := range r.Cold {
		if !strings.HasPrefix(c.Case, "Hangar (base)") || c.Median <= 0 {
			continue
		}
		now := r.coldCase("Hangar" + strings.TrimPrefix(c.Case, "Hangar (base)"))
		if now == nil || now.Median <= 0 {
			continue
		}
		out = append(out, check{"First tools/list no slower than the base binary:" + strings.TrimPrefix(c.Case, "Hangar (base),"), now.Median <= c.Median,
			fmt.Sprintf("%.0f ms against %.0f ms: %.1f× faster", now.Median, c.Median, c.Median/now.Median)})
	}
	// Tail latency.
	{
		var parts []string
		pass, any := true, false
		for _, tr := range []string{"http", "stdio"} {
			for _, b := range []string{"hangar-go", "hangar-wat"} {
				x := r.cell(tr, b, top)
				if x == nil || x.P50 == 0 {
					continue
				}
				any = true
				q := x.P99 / x.P50
				if q >= 5 {
					pass = false
				}
				parts = append(parts, fmt.Sprintf("%s %s: %.1f×", tr, short(b), q))
			}
		}
		if any {
			out = append(out, check{fmt.Sprintf("p99 < 5× p50 at C=%d (Hangar)", top), pass, strings.Join(parts, "; ")})
		}
	}
	return out
}

func short(key string) string {
	switch key {
	case "hangar-go", "node-go":
		return "Go-PDK"
	case "hangar-wat", "node-wat":
		return "WAT"
	}
	return key
}

// markdown renders the results as the tables of docs/performance.md.
func (r *results) markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "## Results\n\n")
	fmt.Fprintf(&b, "Command: `%s` (warm-up %s, measured %s per cell; run took %s)\n\n", r.Command, r.Warmup, r.Measure, r.Elapsed)
	if r.Turns > 1 {
		fmt.Fprintf(&b, "Throughput measured in %d rounds in which the targets took turns, all servers running: a cell adds up its rounds (calls over measured time; p50 and p99 are the medians of the rounds').\n\n", r.Turns)
	}
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s, %s; %s; Node %s; Hangar %s; load average %s at the start, %s at the end\n\n",
		m.CPU, m.Cores, m.Memory, m.Kernel, m.Go, orDash(m.Node), orDash(m.Commit), orDash(m.LoadStart), orDash(m.LoadEnd))

	if len(r.Cells) > 0 {
		fmt.Fprintf(&b, "### Throughput and latency (echo, one plugin)\n\n")
		fmt.Fprintf(&b, "| transport | server | C | calls/s | p50 ms | p99 ms | p99/p50 | server CPU µs/call | client CPU µs/call | errors |\n")
		fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, tr := range []string{"http", "stdio"} {
			for _, t := range r.Targets {
				for _, c := range r.Levels {
					x := r.cell(tr, t.Key, c)
					if x == nil {
						continue
					}
					q := 0.0
					if x.P50 > 0 {
						q = x.P99 / x.P50
					}
					fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.2f | %.2f | %.1f | %.0f | %.0f | %d |\n", tr, t.Label, c, x.Throughput, x.P50, x.P99, q, x.ServerCPU, x.ClientCPU, x.Errors)
				}
			}
		}
		b.WriteString("\n")
		var rows []string
		for _, tr := range []string{"http", "stdio"} {
			for _, c := range r.Levels {
				cols, any := []string{}, false
				for _, p := range [][2]string{{"hangar-go", "native"}, {"hangar-wat", "native"}, {"hangar-go", "node-go"}, {"hangar-wat", "node-wat"},
					{"hangar-go-sdk", "node-go"}, {"hangar-wat-sdk", "node-wat"}, {"hangar-go", "hangar-go-sdk"}, {"hangar-wat", "hangar-wat-sdk"}} {
					if x, ok := ratio(r.cell(tr, p[0], c), r.cell(tr, p[1], c)); ok {
						any = true
						if p[1] == "native" {
							cols = append(cols, fmt.Sprintf("%.0f%%", 100*x))
						} else {
							cols = append(cols, fmt.Sprintf("%.1f×", x))
						}
					} else {
						cols = append(cols, "–")
					}
				}
				if any {
					rows = append(rows, fmt.Sprintf("| %s | %d | %s |\n", tr, c, strings.Join(cols, " | ")))
				}
			}
		}
		if len(rows) > 0 {
			fmt.Fprintf(&b, "### Ratios of throughput\n\n")
			fmt.Fprintf(&b, "(b') is Hangar with `--no-fast-path`, every request through the go-sdk. (a) is a go-sdk server whose tool is Go code: no ceiling for Hangar, whose fast path answers `tools/call` in front of the go-sdk.\n\n")
			fmt.Fprintf(&b, "| transport | C | Hangar Go-PDK / (a) | Hangar WAT / (a) | Hangar Go-PDK / Node Go-PDK | Hangar WAT / Node WAT | (b') Go-PDK / Node | (b') WAT / Node | Go-PDK: (b) / (b') | WAT: (b) / (b') |\n")
			fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			b.WriteString(strings.Join(rows, ""))
			b.WriteString("\n")
		}
		b.WriteString(r.modernTable())
	}

	if rows := r.peerRows(); len(rows) > 0 {
		fmt.Fprintf(&b, "### What the server spends, Hangar / Node peer\n\n")
		fmt.Fprintf(&b, "Server CPU per call is the server process's own CPU time (user and system, /proc/PID/stat) over the measured window, divided by the calls completed in it; RSS with 10 plugins is read once every plugin is loaded, and sampled under load (see the memory table).\n\n")
		fmt.Fprintf(&b, "| measure | Hangar | Node peer | Hangar / Node peer | target |\n|---|---:|---:|---:|---:|\n")
		for _, row := range rows {
			target := "–"
			if row.Target > 0 {
				target = fmt.Sprintf("≤ %.1f", row.Target)
			}
			fmt.Fprintf(&b, "| %s | %.0f %s | %.0f %s | %.2f | %s |\n", row.Measure, row.Hangar, row.Unit, row.Node, row.Unit, row.ratio(), target)
		}
		b.WriteString("\n")
	}

	if len(r.Scaling) > 0 {
		fmt.Fprintf(&b, "### One plugin, CPU-bound tool (spin, %d rounds per call), HTTP\n\n", r.Rounds)
		fmt.Fprintf(&b, "| server | C | calls/s | × C=1 | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|\n")
		for _, x := range r.Scaling {
			one := r.scaling(x.Target, 1)
			f := 0.0
			if one != nil && one.Throughput > 0 {
				f = x.Throughput / one.Throughput
			}
			fmt.Fprintf(&b, "| %s | %d | %.1f | %.2f | %.2f | %.2f |\n", label(x.Target), x.C, x.Throughput, f, x.P50, x.P99)
		}
		b.WriteString("\n")
	}

	if len(r.Cold) > 0 {
		fmt.Fprintf(&b, "### Start: process start to the first tools/list answer (stdio)\n\n")
		fmt.Fprintf(&b, "| case | median ms | server CPU ms (median) | every plugin compiled, ms (median) | first tools/call then, ms (median) | the next, ms | runs ms |\n|---|---:|---:|---:|---:|---:|---|\n")
		for _, c := range r.Cold {
			ready, first, next := "–", "–", "–"
			if c.Ready > 0 {
				ready = fmt.Sprintf("%.0f", c.Ready)
			}
			if c.FirstCall > 0 {
				first, next = fmt.Sprintf("%.0f", c.FirstCall), fmt.Sprintf("%.1f", c.NextCall)
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.0f | %s | %s | %s | %s |\n", c.Case, c.Median, c.CPU, ready, first, next, strings.Trim(fmt.Sprint(roundAll(c.Runs)), "[]"))
		}
		b.WriteString("\nThe first tools/call is one plugin's (`p0_echo`), once the server logged that it was ready: for Hangar, whose plugins compile on their first call, it reads the plugin's machine code from the cache and makes its instance; the Node peer compiled every plugin before it listened.\n\n")
	}

	if len(r.Memory) > 0 || len(r.Servers) > 0 {
		fmt.Fprintf(&b, "### Memory (RSS)\n\n")
	}
	if len(r.Memory) > 0 {
		fmt.Fprintf(&b, "| server, 10 plugins, HTTP | idle (every plugin loaded) | under load: peak sampled | VmHWM | load | after load |\n|---|---:|---:|---:|---|---:|\n")
		for _, x := range r.Memory {
			after := "–"
			if x.AfterWait != "" {
				after = fmt.Sprintf("%s (%s later)", mib(x.After), x.AfterWait)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | C=%d over %d plugins, %.0f calls/s, p99 %.1f ms | %s |\n",
				label(x.Target), mib(x.Idle), mib(x.LoadPeak), mib(x.HWM), x.Load.C, x.Plugins, x.Load.Throughput, x.Load.P99, after)
		}
		b.WriteString("\n")
	}
	if len(r.Servers) > 0 {
		fmt.Fprintf(&b, "| server, 1 plugin | transport | idle | peak (VmHWM) after all levels |\n|---|---|---:|---:|\n")
		for _, x := range r.Servers {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", label(x.Target), x.Transport, mib(x.Idle), mib(x.Peak))
		}
		b.WriteString("\n")
	}

	if len(r.Instances) > 0 {
		fmt.Fprintf(&b, "### Instances per plugin (Hangar, Go-PDK echo, HTTP)\n\n")
		fmt.Fprintf(&b, "| max_instances | C | calls/s | p50 ms | p99 ms | p99/p50 |\n|---:|---:|---:|---:|---:|---:|\n")
		for _, x := range r.Instances {
			fmt.Fprintf(&b, "| %d | %d | %.0f | %.2f | %.2f | %.1f |\n", x.MaxInstances, x.Cell.C, x.Cell.Throughput, x.Cell.P50, x.Cell.P99, x.Cell.P99/max(x.Cell.P50, 1e-9))
		}
		b.WriteString("\n")
	}

	if len(r.Guard) > 0 {
		b.WriteString(guardTable(r.Guard))
	}

	if len(r.Instructions) > 0 {
		b.WriteString(instructionsTable(r.Instructions))
	}

	if cs := r.checks(); len(cs) > 0 {
		fmt.Fprintf(&b, "### Targets\n\n| target | met | measured |\n|---|---|---|\n")
		for _, c := range cs {
			met := "no"
			if c.Pass {
				met = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, met, c.Detail)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// modernTable compares the stateless cells (MCP 2026-07-28, no session)
// with the session cells (2025-11-25) of the same server and plugin, over
// each transport: "" when the run has none.
func (r *results) modernTable() string {
	var b strings.Builder
	for _, tr := range []struct{ key, title, how string }{
		{"http", "Streamable HTTP", "at 2025-11-25 through go-sdk client sessions (one per caller, after `initialize`), at 2026-07-28 with `tools/call` POSTs that carry the revision's `_meta` and headers, no `initialize` and no session, over keep-alive connections. Every answer is checked (the echoed text; at 2026-07-28 also `resultType` \"complete\")"},
		{"stdio", "stdio", "at 2025-11-25 through the go-sdk client session of the process's stdin and stdout (C requests in flight on it), at 2026-07-28 with `tools/call` requests that carry the revision's `_meta` on the same stream, which Hangar serves without a session whatever came before them, as it serves a 2026-07-28 client that sends no `initialize`. Every answer is checked (the echoed text; at 2026-07-28 also the `serverInfo` only that revision's results carry)"},
	} {
		var t strings.Builder
		for _, p := range []struct{ old, new, plugin string }{
			{tHangarGo.Key, tHangarGo2026.Key, "Go-PDK echo"},
			{tHangarWAT.Key, tHangarWAT2026.Key, "WAT echo"},
		} {
			for _, c := range r.Levels {
				o, n := r.cell(tr.key, p.old, c), r.cell(tr.key, p.new, c)
				if o == nil || n == nil {
					continue
				}
				if t.Len() == 0 {
					fmt.Fprintf(&t, "### %s: 2026-07-28 stateless beside 2025-11-25 sessions (Hangar)\n\n", tr.title)
					fmt.Fprintf(&t, "The same `hangar serve` process and plugin, called in turn: %s: a wrong one counts as an error. (a) and the Node peer do not speak 2026-07-28 and have no such cells.\n\n", tr.how)
					fmt.Fprintf(&t, "| plugin | C | calls/s 2025 | calls/s 2026 | 2026 / 2025 | p50 ms 2025 | p50 ms 2026 | p99 ms 2025 | p99 ms 2026 | server CPU µs/call 2025 | server CPU µs/call 2026 | server CPU 2026 / 2025 | errors 2025 / 2026 |\n")
					fmt.Fprintf(&t, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
				}
				x, _ := ratio(n, o)
				cpu := "–"
				if o.ServerCPU > 0 && n.ServerCPU > 0 {
					cpu = fmt.Sprintf("%.2f", n.ServerCPU/o.ServerCPU)
				}
				fmt.Fprintf(&t, "| %s | %d | %.0f | %.0f | %.2f× | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %s | %d / %d |\n",
					p.plugin, c, o.Throughput, n.Throughput, x, o.P50, n.P50, o.P99, n.P99, o.ServerCPU, n.ServerCPU, cpu, o.Errors, n.Errors)
			}
		}
		if t.Len() > 0 {
			b.WriteString(t.String())
			b.WriteString("\n")
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
