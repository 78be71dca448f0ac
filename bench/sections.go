package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// results is everything one run measured.
type results struct {
	Machine   machine     `json:"machine"`
	Command   string      `json:"command"`
	Quick     bool        `json:"quick"`
	Warmup    string      `json:"warmup"`
	Measure   string      `json:"measure"`
	Turns     int         `json:"turns,omitempty"` // throughput measured in rounds of turns (-rounds)
	Levels    []int       `json:"levels"`
	Targets   []target    `json:"targets"`
	Cells     []cell      `json:"cells"`
	Servers   []memUse    `json:"servers,omitempty"`
	Scaling   []cell      `json:"scaling,omitempty"`
	Rounds    int         `json:"spin_rounds,omitempty"`
	Cold      []cold      `json:"cold_start,omitempty"`
	Memory    []memLoad   `json:"memory_10_plugins,omitempty"`
	Guard     []guardCost `json:"termination_check,omitempty"`
	Instances []instCell  `json:"instances,omitempty"`
	// Instructions are callgrind's counts (the instructions section).
	Instructions []instrCost `json:"instructions,omitempty"`
	Elapsed      string      `json:"elapsed"`
}

// memUse is the memory of a one-plugin server in the throughput runs.
type memUse struct {
	Transport string `json:"transport"`
	Target    string `json:"target"`
	Idle      int64  `json:"idle_rss"` // after start and one call
	Peak      int64  `json:"peak_rss"` // VmHWM at the end of the run
}

// cold is one cold start case.
type cold struct {
	Case   string    `json:"case"`
	Runs   []float64 `json:"runs_ms"`
	Median float64   `json:"median_ms"`
	// CPU is the median CPU time (user+system) the server had used when it
	// answered tools/list.
	CPU float64 `json:"median_cpu_ms"`
	// Ready is the median time to the log's line saying every plugin is
	// compiled ("ready", or "plugins ready" before background compilation);
	// 0 when not measured.
	Ready float64 `json:"median_ready_ms,omitempty"`
	// FirstCall is the median time of the first tools/call of one plugin
	// once the server was ready (for a plugin compiled on its first call:
	// reading its machine code and making its instance), NextCall that of
	// the call after it; 0 when not measured.
	FirstCall float64 `json:"median_first_call_ms,omitempty"`
	NextCall  float64 `json:"median_next_call_ms,omitempty"`
}

// memLoad is a server with 10 plugins, idle and under load.
type memLoad struct {
	Target    string `json:"target"`
	Plugins   int    `json:"plugins"`
	Idle      int64  `json:"idle_rss"`
	LoadPeak  int64  `json:"load_peak_rss"` // largest VmRSS sampled under load
	HWM       int64  `json:"hwm"`           // VmHWM at the end of the load
	After     int64  `json:"after_rss,omitempty"`
	AfterWait string `json:"after_wait,omitempty"`
	Load      cell   `json:"load"`
}

func (e *env) byKey(key string) target {
	for _, t := range allTargets {
		if t.Key == key {
			return t
		}
	}
	panic(key)
}

func runAll(ctx context.Context, e *env) (*results, error) {
	o := e.o
	began := time.Now()
	res := &results{
		Machine: e.machine,
		Command: "go run ./bench " + strings.Join(os.Args[1:], " "),
		Quick:   o.quick,
		Warmup:  o.warmup.String(),
		Measure: o.duration.String(),
		Turns:   max(o.rounds, 1),
		Levels:  o.levels,
		Targets: e.targets(),
	}
	res.Command = strings.TrimSpace(res.Command)
	steps := []struct {
		name string
		run  func(context.Context, *results) error
	}{
		{"throughput", e.runThroughput},
		{"scaling", e.runScaling},
		{"coldstart", e.runColdStart},
		{"rss", e.runMemory},
		{"instances", e.runInstances},
		{"guard", e.runGuard},
		{"instructions", e.runInstructions},
	}
	for _, s := range steps {
		if !o.sections[s.name] {
			continue
		}
		if err := s.run(ctx, res); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	res.Elapsed = time.Since(began).Round(time.Second).String()
	res.Machine.LoadEnd = loadAvg()
	return res, nil
}

// runThroughput drives every target at every level, over HTTP and stdio
// (those of o.transports). A stateless target calls the server of its
// 2025 target, right after it at each level. With -rounds, the targets
// take turns (runInterleaved).
func (e *env) runThroughput(ctx context.Context, res *results) error {
	o := e.o
	if o.rounds > 1 {
		return e.runInterleaved(ctx, res)
	}
	for _, tr := range o.transportList() {
		for _, g := range e.serverGroups(tr) {
			name := g.server.Key + "-" + tr
			sv, err := e.serveTarget(ctx, g.server, tr)
			if err != nil {
				return err
			}
			mem := memUse{Transport: tr, Target: g.server.Key}
			err = func() error {
				if mem.Idle, err = sv.idle(ctx); err != nil {
					return err
				}
				for _, c := range o.levels {
					for _, t := range g.targets {
						callers, done, err := sv.callers(t, c, echoSpec("echo"))
						if err != nil {
							return fmt.Errorf("%s: connecting %d sessions: %w", name, c, err)
						}
						r := driveCalls(ctx, sv.pid, c, echoSpec("echo"), o.warmup, o.duration, callers)
						done()
						r.Transport, r.Target = tr, t.Key
						res.Cells = append(res.Cells, r)
						logCell(r)
						if ctx.Err() != nil {
							return ctx.Err()
						}
					}
				}
				_, mem.Peak = memStatus(sv.pid)
				return nil
			}()
			sv.stop()
			if err != nil {
				return err
			}
			res.Servers = append(res.Servers, mem)
		}
	}
	return nil
}

// serverGroup is a server of the throughput section and the targets that
// call it: its own, and a stateless target.
type serverGroup struct {
	server  target
	targets []target
}

// serverGroups groups the targets to run over tr by the server they call,
// in the order of e.targets().
func (e *env) serverGroups(tr string) []serverGroup {
	var gs []serverGroup
	for _, t := range e.targets() {
		i := slices.IndexFunc(gs, func(g serverGroup) bool { return g.server.Key == t.server().Key })
		if i < 0 {
			gs = append(gs, serverGroup{server: t.server()})
			i = len(gs) - 1
		}
		gs[i].targets = append(gs[i].targets, t)
	}
	return gs
}

func logCell(r cell) {
	logf("%-6s %-15s C=%-3d %8.0f calls/s  p50 %6.2f ms  p99 %7.2f ms  CPU/call server %5.0f µs client %5.0f µs  errors %d %s",
		r.Transport, r.Target, r.C, r.Throughput, r.P50, r.P99, r.ServerCPU, r.ClientCPU, r.Errors, r.FirstError)
}

// served is a target's server, started for the throughput section.
type served struct {
	name     string
	pid      int
	url      string // over HTTP
	stop     func()
	sessions func(c int) ([]*mcp.ClientSession, func(), error)
}

// callers returns how c callers of target t call sv: through go-sdk
// sessions, or for a stateless target with 2026-07-28 requests (raw POSTs
// over HTTP, lines with the revision's _meta over stdio).
func (sv *served) callers(t target, c int, spec callSpec) (func(i int) callFunc, func(), error) {
	if t.stateless() && sv.url != "" {
		return modernCallers(sv.url, spec), func() {}, nil
	}
	ss, done, err := sv.sessions(c)
	if err != nil {
		return nil, nil, err
	}
	if t.stateless() {
		return modernLineCallers(ss, spec), done, nil
	}
	return sessionCallers(ss, spec), done, nil
}

// serveTarget starts t's server over the transport tr.
func (e *env) serveTarget(ctx context.Context, t target, tr string) (*served, error) {
	sv := &served{name: t.Key + "-" + tr}
	if tr == "http" {
		p, err := e.startHTTP(ctx, sv.name, e.argv(t, nil, e.cache, "127.0.0.1:0"))
		if err != nil {
			return nil, err
		}
		sv.pid, sv.url, sv.stop = p.pid(), p.url, p.stop
		sv.sessions = func(c int) ([]*mcp.ClientSession, func(), error) {
			ss, err := openSessions(ctx, p.url, c)
			return ss, func() { closeSessions(ss) }, err
		}
		return sv, nil
	}
	s, err := e.startStdio(ctx, sv.name, e.argv(t, nil, e.cache, ""))
	if err != nil {
		return nil, err
	}
	sv.pid, sv.stop = s.pid(), s.stop
	sv.sessions = func(int) ([]*mcp.ClientSession, func(), error) {
		return []*mcp.ClientSession{s.session}, func() {}, nil
	}
	return sv, nil
}

// idle makes one call, so that the figure includes a ready instance, and
// returns the server's resident set size.
func (sv *served) idle(ctx context.Context) (int64, error) {
	ss, done, err := sv.sessions(1)
	if err != nil {
		return 0, err
	}
	_, err = ss[0].CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoInput})
	done()
	if err != nil {
		return 0, fmt.Errorf("%s: first call: %w", sv.name, err)
	}
	time.Sleep(200 * time.Millisecond)
	rss, _ := memStatus(sv.pid)
	return rss, nil
}

// runInterleaved is runThroughput for a busy machine: every target's
// server runs at once, and each level is measured in o.rounds rounds of
// short cells in which the targets take turns, in an order that rotates,
// so that load coming and going on the machine falls on all of them
// alike. A stateless target takes its turn like the others, against the
// server of its 2025 target. A target's cell adds up its rounds: its
// throughput is its calls over its measured time, its CPU per call over
// all its calls, and its p50 and p99 are the medians of its rounds'.
func (e *env) runInterleaved(ctx context.Context, res *results) error {
	o := e.o
	for _, tr := range o.transportList() {
		gs := e.serverGroups(tr)
		var svs []*served
		err := func() error {
			for _, g := range gs {
				sv, err := e.serveTarget(ctx, g.server, tr)
				if err != nil {
					return err
				}
				svs = append(svs, sv)
				idle, err := sv.idle(ctx)
				if err != nil {
					return err
				}
				res.Servers = append(res.Servers, memUse{Transport: tr, Target: g.server.Key, Idle: idle})
			}
			var ts []target
			var tsv []*served
			for i, g := range gs {
				for _, t := range g.targets {
					ts, tsv = append(ts, t), append(tsv, svs[i])
				}
			}
			for _, c := range o.levels {
				if err := e.interleave(ctx, res, tr, ts, tsv, c); err != nil {
					return err
				}
			}
			return nil
		}()
		for i, sv := range svs {
			_, peak := memStatus(sv.pid)
			for j := range res.Servers {
				if m := &res.Servers[j]; m.Transport == tr && m.Target == gs[i].server.Key {
					m.Peak = peak
				}
			}
			sv.stop()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// interleave measures one level of runInterleaved: target ts[i] calls the
// server svs[i].
func (e *env) interleave(ctx context.Context, res *results, tr string, ts []target, svs []*served, c int) error {
	spec := echoSpec("echo")
	callers := make([]func(int) callFunc, len(ts))
	for i, sv := range svs {
		cs, done, err := sv.callers(ts[i], c, spec)
		if err != nil {
			return fmt.Errorf("%s: connecting %d sessions: %w", sv.name, c, err)
		}
		defer done()
		callers[i] = cs
	}
	rounds := make([][]cell, len(ts))
	for r := range e.o.rounds {
		for k := range ts {
			i := (k + r) % len(ts)
			rounds[i] = append(rounds[i], driveCalls(ctx, svs[i].pid, c, spec, e.o.warmup, e.o.duration, callers[i]))
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	for i, t := range ts {
		x := mergeRounds(rounds[i])
		x.Transport, x.Target = tr, t.Key
		res.Cells = append(res.Cells, x)
		logCell(x)
	}
	return nil
}

// mergeRounds adds up the rounds of one target at one level.
func mergeRounds(rounds []cell) cell {
	out := cell{C: rounds[0].C}
	var srv, cli float64
	var p50, p99 []float64
	for _, r := range rounds {
		out.Calls += r.Calls
		out.Errors += r.Errors
		out.Seconds += r.Seconds
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		srv += r.ServerCPU * float64(r.Calls)
		cli += r.ClientCPU * float64(r.Calls)
		out.Max = max(out.Max, r.Max)
		out.Mean += r.Mean * float64(r.Calls)
		p50, p99 = append(p50, r.P50), append(p99, r.P99)
	}
	if out.Seconds > 0 {
		out.Throughput = float64(out.Calls) / out.Seconds
	}
	if out.Calls > 0 {
		out.ServerCPU, out.ClientCPU, out.Mean = srv/float64(out.Calls), cli/float64(out.Calls), out.Mean/float64(out.Calls)
	}
	out.P50, out.P99 = median(p50), median(p99)
	return out
}

// runScaling checks that calls to one plugin run in parallel: the spin
// tool burns a few milliseconds of CPU in the guest per call, so the MCP
// overhead is small and throughput can only grow with concurrency if
// several instances of the plugin run at once.
func (e *env) runScaling(ctx context.Context, res *results) error {
	o := e.o
	levels := []int{1}
	for _, c := range []int{runtime.NumCPU(), 2 * runtime.NumCPU()} {
		if !slices.Contains(levels, c) {
			levels = append(levels, c)
		}
	}
	ts := []target{tHangarGo}
	if e.node != "" {
		ts = append(ts, tNodeGo)
	}
	for _, t := range ts {
		p, err := e.startHTTP(ctx, t.Key+"-spin", e.argv(t, nil, e.cache, "127.0.0.1:0"))
		if err != nil {
			return err
		}
		err = func() error {
			if res.Rounds == 0 {
				if res.Rounds, err = calibrateSpin(ctx, p.url, 5*time.Millisecond); err != nil {
					return err
				}
				logf("spin: %d rounds per call", res.Rounds)
			}
			spec := callSpec{
				tool: func(int) string { return "spin" },
				args: json.RawMessage(fmt.Sprintf(`{"rounds":%d}`, res.Rounds)),
			}
			for _, c := range levels {
				ss, err := openSessions(ctx, p.url, c)
				if err != nil {
					return err
				}
				r := drive(ctx, p.pid(), ss, c, spec, o.warmup, o.duration)
				closeSessions(ss)
				r.Transport, r.Target = "http", t.Key
				res.Scaling = append(res.Scaling, r)
				logf("spin   %-11s C=%-3d %8.1f calls/s  p50 %6.2f ms  p99 %7.2f ms  errors %d %s",
					t.Key, c, r.Throughput, r.P50, r.P99, r.Errors, r.FirstError)
			}
			return nil
		}()
		p.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// calibrateSpin finds the rounds that make one spin call cost about want
// more than an echo call, on Hangar at concurrency 1.
func calibrateSpin(ctx context.Context, url string, want time.Duration) (int, error) {
	cs, err := connectHTTP(ctx, url)
	if err != nil {
		return 0, err
	}
	defer cs.Close()
	median := func(name string, args json.RawMessage, n int) (time.Duration, error) {
		var ds []time.Duration
		for range n {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err == nil && res.IsError {
				err = fmt.Errorf("%s: %s", name, resultText(res))
			}
			if err != nil {
				return 0, err
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds[len(ds)/2], nil
	}
	base, err := median("echo", echoInput, 50)
	if err != nil {
		return 0, err
	}
	const probe = 1_000_000
	d, err := median("spin", json.RawMessage(fmt.Sprintf(`{"rounds":%d}`, probe)), 9)
	if err != nil {
		return 0, err
	}
	per := float64(max(d-base, time.Microsecond)) / probe
	return max(1000, int(float64(want)/per)), nil
}

// tenPlugins writes 10 distinct copies of the Go-PDK echo plugin (see
// distinctCopy) and returns them mounted as echo0..echo9 with prefixes
// p0..p9 (tools p0_echo, p0_spin, ...).
func (e *env) tenPlugins() ([]mounted, error) {
	wasm, err := os.ReadFile(e.goEcho)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(e.dir, "ten")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var ms []mounted
	for i := range 10 {
		path := filepath.Join(dir, fmt.Sprintf("echo%d.wasm", i))
		if _, err := os.Stat(path); err != nil {
			if err := distinctCopy(wasm, path, i); err != nil {
				return nil, err
			}
		}
		ms = append(ms, mounted{path: path, name: fmt.Sprintf("echo%d", i), prefix: fmt.Sprintf("p%d", i)})
	}
	return ms, nil
}

// timeFirstList starts argv as a stdio server and returns the time from
// just before the process starts to the answer to the first tools/list
// (initialize comes first, as every client does it).
func (e *env) timeFirstList(ctx context.Context, name string, argv []string, wantTools int) (wall, cpu time.Duration, err error) {
	st, err := e.timeStart(ctx, name, argv, wantTools, false, "")
	return st.wall, st.cpu, err
}

// started is what timeStart measured.
type started struct {
	wall, cpu, ready time.Duration
	first, next      time.Duration // the calls of the tool asked for
}

// readyLine is what Hangar logs once every plugin is compiled: "ready"
// since plugins compile in the background, "plugins ready" before.
var readyLine = regexp.MustCompile(`msg=(ready|"plugins ready")( |$)`)

// timeStart is timeFirstList that, with waitReady, also waits for the
// server to log readyLine and returns the time to it; then, if call is
// not "", it times two calls of that tool (the echo's input).
func (e *env) timeStart(ctx context.Context, name string, argv []string, wantTools int, waitReady bool, call string) (st started, err error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	s, err := e.startStdio(ctx, name, argv)
	if err != nil {
		return st, err
	}
	defer s.stop()
	lt, err := s.session.ListTools(ctx, nil)
	st.wall = time.Since(t0)
	st.cpu = procCPU(s.pid())
	if err != nil {
		return st, fmt.Errorf("%s: tools/list: %w", name, err)
	}
	if len(lt.Tools) != wantTools {
		return st, fmt.Errorf("%s: tools/list returned %d tools, want %d", name, len(lt.Tools), wantTools)
	}
	for waitReady {
		if b, _ := os.ReadFile(s.log); readyLine.Match(b) {
			st.ready = time.Since(t0)
			break
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("%s: never logged that it was ready", name)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if call == "" {
		return st, nil
	}
	for _, d := range []*time.Duration{&st.first, &st.next} {
		t := time.Now()
		r, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: call, Arguments: echoInput})
		*d = time.Since(t)
		if err != nil {
			return st, fmt.Errorf("%s: tools/call %s: %w", name, call, err)
		}
		if r.IsError || len(r.Content) != 1 {
			return st, fmt.Errorf("%s: tools/call %s: unexpected result %+v", name, call, r)
		}
	}
	return st, nil
}

func (e *env) cache10() string { return filepath.Join(e.dir, "cache10") }

// runColdStart times the first tools/list answer of servers with 10
// plugins, with an empty and with a warm compilation cache.
func (e *env) runColdStart(ctx context.Context, res *results) error {
	o := e.o
	ten, err := e.tenPlugins()
	if err != nil {
		return err
	}
	fresh := 0
	freshCache := func() string {
		fresh++
		return filepath.Join(e.dir, fmt.Sprintf("cold-cache-%d", fresh))
	}
	warmRuns := max(o.runs, pick(o.quick, 3, 5))
	type coldCase struct {
		name  string
		runs  int
		argv  func() []string
		tools int
		ready bool   // also time until every plugin is compiled
		call  string // then time two calls of this tool, if not ""
	}
	// binary runs argv with the hangar binary bin instead.
	binary := func(bin string, argv func() []string) func() []string {
		return func() []string { a := argv(); a[0] = bin; return a }
	}
	hangarCases := func(label, bin, warm string) []coldCase {
		return []coldCase{
			{"Hangar" + label + ", 1 Go-PDK plugin, empty cache", o.runs, binary(bin, func() []string { return e.argv(tHangarGo, ten[:1], freshCache(), "") }), 2, true, "p0_echo"},
			{"Hangar" + label + ", 10 Go-PDK plugins, empty cache", o.runs, binary(bin, func() []string { return e.argv(tHangarGo, ten, freshCache(), "") }), 20, true, "p0_echo"},
			{"Hangar" + label + ", 10 Go-PDK plugins, warm cache", warmRuns, binary(bin, func() []string { return e.argv(tHangarGo, ten, warm, "") }), 20, true, "p0_echo"},
		}
	}
	cases := []coldCase{{"native go-sdk server, no plugins (process start)", warmRuns, func() []string { return e.argv(tNative, nil, "", "") }, 1, false, ""}}
	this := hangarCases("", e.hangar, e.cache10())
	if o.base != "" {
		// Case by case, the base binary right before this one, so that both
		// see the same load on the machine.
		base := hangarCases(" (base)", o.base, filepath.Join(e.dir, "cache10-base"))
		for i := range this {
			cases = append(cases, base[i], this[i])
		}
		if _, err := e.timeStart(ctx, "warm-fill-base", base[2].argv(), 20, true, ""); err != nil {
			return err
		}
	} else {
		cases = append(cases, this...)
	}
	if e.node != "" {
		cases = append(cases, coldCase{"Node peer, 10 Go-PDK plugins (no cache)", warmRuns, func() []string { return e.argv(tNodeGo, ten, "", "") }, 20, false, "p0_echo"})
	}
	// Fill the warm caches first, and let every plugin compile (they do in
	// the background): this start is not counted.
	if _, err := e.timeStart(ctx, "warm-fill", e.argv(tHangarGo, ten, e.cache10(), ""), 20, true, ""); err != nil {
		return err
	}
	for _, c := range cases {
		r := cold{Case: c.name}
		var cpus, readies, firsts, nexts []float64
		for range c.runs {
			st, err := e.timeStart(ctx, "cold", c.argv(), c.tools, c.ready, c.call)
			if err != nil {
				return err
			}
			r.Runs = append(r.Runs, ms(st.wall))
			cpus = append(cpus, ms(st.cpu))
			readies = append(readies, ms(st.ready))
			firsts = append(firsts, ms(st.first))
			nexts = append(nexts, ms(st.next))
		}
		r.Median = median(r.Runs)
		r.CPU = median(cpus)
		if c.ready {
			r.Ready = median(readies)
		}
		if c.call != "" {
			r.FirstCall, r.NextCall = median(firsts), median(nexts)
		}
		res.Cold = append(res.Cold, r)
		logf("cold start: %-58s median %7.0f ms (CPU %7.0f ms, ready %7.0f ms, first call %6.1f ms, next %5.1f ms)  runs %v", c.name, r.Median, r.CPU, r.Ready, r.FirstCall, r.NextCall, roundAll(r.Runs))
	}
	return nil
}

func median(xs []float64) float64 {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

func roundAll(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

// runMemory reads the RSS of Hangar and the Node peer serving 10 plugins:
// idle after start, and under load at the highest concurrency with calls
// spread over the 10 plugins.
func (e *env) runMemory(ctx context.Context, res *results) error {
	o := e.o
	ten, err := e.tenPlugins()
	if err != nil {
		return err
	}
	c := slices.Max(o.levels)
	ts := []target{tHangarGo}
	if e.node != "" {
		ts = append(ts, tNodeGo)
	}
	for _, t := range ts {
		p, err := e.startHTTP(ctx, t.Key+"-ten", e.argv(t, ten, e.cache10(), "127.0.0.1:0"))
		if err != nil {
			return err
		}
		m := memLoad{Target: t.Key, Plugins: len(ten)}
		err = func() error {
			cs, err := connectHTTP(ctx, p.url)
			if err != nil {
				return err
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				return err
			}
			cs.Close()
			// Idle means every plugin loaded (Hangar compiles in the
			// background after the first lists, into the cache when it
			// compiles on first calls; the Node peer loads them all
			// before it listens), and a second to settle.
			if t.Class == "b" {
				if err := p.waitCompiled(ctx); err != nil {
					return err
				}
			}
			time.Sleep(time.Second)
			m.Idle, _ = memStatus(p.pid())
			ss, err := openSessions(ctx, p.url, c)
			if err != nil {
				return err
			}
			sampler := sampleRSS(p.pid())
			spec := callSpec{
				tool:   func(i int) string { return fmt.Sprintf("p%d_echo", i%len(ten)) },
				args:   echoInput,
				expect: payload,
			}
			m.Load = drive(ctx, p.pid(), ss, c, spec, o.warmup, o.duration)
			m.Load.Transport, m.Load.Target = "http", t.Key
			closeSessions(ss)
			m.LoadPeak = sampler.finish()
			_, m.HWM = memStatus(p.pid())
			if o.settle > 0 && t.Class == "b" {
				logf("waiting %s for idle instances to be closed", o.settle)
				select {
				case <-time.After(o.settle):
				case <-ctx.Done():
					return ctx.Err()
				}
				m.After, _ = memStatus(p.pid())
				m.AfterWait = o.settle.String()
			}
			return nil
		}()
		p.stop()
		if err != nil {
			return err
		}
		res.Memory = append(res.Memory, m)
		logf("memory: %-10s 10 plugins idle %s, under load (C=%d, %.0f calls/s) peak %s, HWM %s",
			t.Key, mib(m.Idle), c, m.Load.Throughput, mib(m.LoadPeak), mib(m.HWM))
	}
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// instCell is Hangar under load with a given limits.max_instances.
type instCell struct {
	MaxInstances int  `json:"max_instances"`
	Cell         cell `json:"cell"`
}

// runInstances drives Hangar's Go-PDK echo over HTTP at the highest
// concurrency with different numbers of instances: as many as cores (the
// default), twice that, and eight times that. It is how the default was
// chosen: the throughput is the same, the tail is not.
func (e *env) runInstances(ctx context.Context, res *results) error {
	o := e.o
	c := slices.Max(o.levels)
	cores := runtime.GOMAXPROCS(0)
	for _, m := range []int{cores, 2 * cores, 8 * cores} {
		t := e.byKey("hangar-go")
		name := fmt.Sprintf("instances-%d", m)
		p, err := e.startHTTP(ctx, name, e.argv(t, []mounted{{path: e.goEcho, name: "echo", maxInstances: m}}, e.cache, "127.0.0.1:0"))
		if err != nil {
			return err
		}
		r, err := func() (cell, error) {
			ss, err := openSessions(ctx, p.url, c)
			if err != nil {
				return cell{}, fmt.Errorf("%s: connecting %d sessions: %w", name, c, err)
			}
			defer closeSessions(ss)
			return drive(ctx, p.pid(), ss, c, echoSpec("echo"), o.warmup, o.duration), nil
		}()
		p.stop()
		if err != nil {
			return err
		}
		r.Transport, r.Target = "http", t.Key
		logf("instances: max_instances %-3d C=%d  %8.0f calls/s  p50 %6.2f ms  p99 %7.2f ms  p99/p50 %.1f", m, c, r.Throughput, r.P50, r.P99, r.P99/max(r.P50, 1e-9))
		res.Instances = append(res.Instances, instCell{MaxInstances: m, Cell: r})
	}
	return nil
}
