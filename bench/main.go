// Command bench measures Hangar against a Node peer and a go-sdk server.
//
// Run it from the repository root:
//
//	go run ./bench                  # the full run, about 8 minutes on 2 cores
//	go run ./bench -quick           # a short run, about a minute
//	go run ./bench -png docs/performance.png -json /tmp/bench.json
//	go run ./bench -sections throughput -transports http \
//	    -targets hangar-go,hangar-wat,hangar-go-2026,hangar-wat-2026 -rounds 6
//
// It builds the hangar command, the Go-PDK echo plugin (bench/plugins/echo)
// and the WAT echo plugin (internal/testplugins/wat/echo.wat, with
// wat2wasm) into a temporary directory, installs the Node peer's npm
// packages (bench/node) if they are missing and the run uses the Node
// peer, and then, with servers on 127.0.0.1 only:
//
//   - drives tools/call with C = 1, 8 and 64 concurrent callers over
//     Streamable HTTP (one MCP session per caller) and over stdio (one
//     session, C requests in flight) against (a) a go-sdk server whose
//     echo tool is Go code, (b) hangar serve with the Go-PDK and the WAT echo
//     plugin, and (c) the Node peer (bench/node/server.mjs: MCP TypeScript
//     SDK + Extism JS SDK) hosting the same .wasm files, and reports
//     throughput and p50/p99 latency with the ratios b/a and b/c;
//   - also drives the same hangar serve processes at MCP 2026-07-28,
//     stateless (targets hangar-go-2026 and hangar-wat-2026: over HTTP
//     tools/call POSTs carrying the revision's _meta and headers, no
//     initialize, no session, keep-alive connections; over stdio
//     tools/call lines carrying the revision's _meta; every answer
//     checked), in turn with the 2025-11-25 session cells, and reports
//     the ratio 2026/2025 for each plugin, transport and C; (a) and (c)
//     do not speak 2026-07-28 and have no such cells;
//   - checks that calls to one plugin run in parallel, with a CPU-bound tool;
//   - times cold start (process start to the first tools/list answer, 10
//     plugins, and to the log's "ready" once every plugin is compiled)
//     with empty and with warm caches (with -base BIN, also for another
//     hangar binary, case by case in the same run);
//   - reads the resident set size of servers with 10 plugins, idle and
//     under load.
//
// With -profile DIR it instead runs Hangar inside this binary, drives load,
// profiles the measured window (CPU and allocations) and writes the
// profiles to DIR.
//
// The servers run as separate processes; server (a) is this same binary in
// a hidden mode (-serve native), and so is the profiled Hangar (-serve
// hangar).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

type options struct {
	quick    bool
	warmup   time.Duration
	duration time.Duration
	levels   []int
	rounds   int // throughput: rounds of cells in which the targets take turns
	sections map[string]bool
	runs     int // cold start runs
	settle   time.Duration
	jsonOut  string
	pngOut   string
	mdOut    string
	keep     bool
	workDir  string
	noNode   bool // skip the Node peer (tests without npm)
	hangar   string
	base     string          // a second hangar binary for the cold start cases
	baseEcho string          // a second Go-PDK echo plugin for the instructions section
	only     map[string]bool // targets to run; empty: all
	// transports of the throughput section: http, stdio or both (nil).
	transports []string

	profileDir       string
	profileTarget    string
	profileTransport string
	profileC         int
	profileModern    bool
}

var allSections = []string{"throughput", "scaling", "coldstart", "rss", "instances", "guard", "instructions"}

func main() {
	// Hidden modes: this binary is also server (a), the profiled Hangar and
	// the instructions section's processes.
	if len(os.Args) > 2 && os.Args[1] == "-serve" {
		os.Exit(serveMode(os.Args[2], os.Args[3:]))
	}
	var o options
	var levels, sections string
	flag.BoolVar(&o.quick, "quick", false, "short run (about a minute): shorter cells, one cold start run each")
	flag.DurationVar(&o.warmup, "warmup", 0, "warm-up per cell, excluded from the numbers (default 2s, -quick 250ms)")
	flag.DurationVar(&o.duration, "duration", 0, "measured time per cell (default 8s, -quick 1s)")
	flag.StringVar(&levels, "c", "1,8,64", "concurrency levels")
	flag.IntVar(&o.rounds, "rounds", 1, "throughput: measure each level in this many rounds in which the targets take turns, all servers running (for a busy machine; each round is -warmup plus -duration per target)")
	var targets, transports string
	flag.StringVar(&targets, "targets", "", "throughput targets to run (default all): native,hangar-go,hangar-wat,hangar-go-2026,hangar-wat-2026 (the servers of hangar-go and hangar-wat called at MCP 2026-07-28 without a session),hangar-go-sdk,hangar-wat-sdk (Hangar with --no-fast-path),node-go,node-wat")
	flag.StringVar(&transports, "transports", "http,stdio", "throughput: the transports to run, http, stdio or both")
	flag.StringVar(&sections, "sections", strings.Join(allSections, ","), "what to run: "+strings.Join(allSections, ","))
	flag.IntVar(&o.runs, "runs", 0, "cold start runs per case (default 3, -quick 1)")
	flag.DurationVar(&o.settle, "settle", -1, "after the 10-plugin load, wait this long and read Hangar's RSS again, to see idle instances closed (default 80s, -quick: skip)")
	flag.StringVar(&o.jsonOut, "json", "", "write the results as JSON to this file")
	flag.StringVar(&o.pngOut, "png", "", "write the throughput plot (PNG) to this file")
	flag.StringVar(&o.mdOut, "md", "", "write the results as Markdown to this file (also printed)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (builds, configs, server logs)")
	flag.StringVar(&o.hangar, "hangar", "", "use this hangar binary instead of building ./cmd/hangar (to compare builds)")
	flag.StringVar(&o.base, "base", "", "also time the cold start cases with this hangar binary, in the same run (before and after a change)")
	flag.StringVar(&o.baseEcho, "base-echo", "", "instructions section: also count this build of bench/plugins/echo (from another tree: before and after a change to the PDK)")
	flag.StringVar(&o.profileDir, "profile", "", "profile Hangar under load instead of benchmarking; write cpu.pprof and allocs.pprof here")
	flag.StringVar(&o.profileTarget, "profile-plugin", "go", "what to profile: go or wat (Hangar with that plugin) or native (server (a), the go-sdk with the tool in Go)")
	flag.StringVar(&o.profileTransport, "profile-transport", "http", "transport to profile: http or stdio")
	flag.IntVar(&o.profileC, "profile-c", 64, "concurrency while profiling")
	flag.BoolVar(&o.profileModern, "profile-2026", false, "profile calls at MCP 2026-07-28, without a session, as the stateless targets make them (go or wat only)")
	var report string
	flag.StringVar(&report, "report", "", "run nothing: read the results of an earlier run from this JSON file and write -md and -png from them")
	flag.Parse()

	if report != "" {
		if err := rewrite(report, &o, os.Stdout); err != nil {
			fatalf("%v", err)
		}
		return
	}

	if o.warmup == 0 {
		o.warmup = pick(o.quick, 250*time.Millisecond, 2*time.Second)
	}
	if o.duration == 0 {
		o.duration = pick(o.quick, time.Second, 8*time.Second)
	}
	if o.runs == 0 {
		o.runs = pick(o.quick, 1, 3)
	}
	if o.settle < 0 {
		o.settle = pick(o.quick, 0, 80*time.Second)
	}
	var err error
	if o.levels, err = parseLevels(levels); err != nil {
		fatalf("-c: %v", err)
	}
	for _, tr := range strings.Split(transports, ",") {
		if tr = strings.TrimSpace(tr); tr == "" {
			continue
		}
		if tr != "http" && tr != "stdio" {
			fatalf("-transports: unknown transport %q (want http, stdio or both)", tr)
		}
		o.transports = append(o.transports, tr)
	}
	o.only = map[string]bool{}
	for _, t := range strings.Split(targets, ",") {
		if t = strings.TrimSpace(t); t != "" {
			o.only[t] = true
		}
	}
	o.sections = map[string]bool{}
	for _, s := range strings.Split(sections, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !contains(allSections, s) {
			fatalf("-sections: unknown section %q (want %s)", s, strings.Join(allSections, ","))
		}
		o.sections[s] = true
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &o, os.Stdout); err != nil {
		fatalf("%v", err)
	}
}

func run(ctx context.Context, o *options, stdout io.Writer) error {
	env, err := setup(ctx, o)
	if err != nil {
		return err
	}
	defer env.cleanup()
	if o.profileDir != "" {
		return runProfile(ctx, env)
	}
	res, err := runAll(ctx, env)
	if err != nil {
		return err
	}
	return write(res, o, stdout)
}

// rewrite writes the report of the results in the JSON file path.
func rewrite(path string, o *options, stdout io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	o.jsonOut = "" // it is the input
	return write(&res, o, stdout)
}

// write prints the Markdown report and writes the files o asks for.
func write(res *results, o *options, stdout io.Writer) error {
	md := res.markdown()
	fmt.Fprint(stdout, md)
	if o.mdOut != "" {
		if err := os.WriteFile(o.mdOut, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if o.jsonOut != "" {
		if err := res.writeJSON(o.jsonOut); err != nil {
			return err
		}
	}
	if o.pngOut != "" {
		if err := writePlot(o.pngOut, res); err != nil {
			return err
		}
		logf("wrote %s", o.pngOut)
	}
	return nil
}

// transportList is the throughput section's transports, in order.
func (o *options) transportList() []string {
	if len(o.transports) == 0 {
		return []string{"http", "stdio"}
	}
	var out []string
	for _, tr := range []string{"http", "stdio"} {
		if slices.Contains(o.transports, tr) {
			out = append(out, tr)
		}
	}
	return out
}

func pick[T any](quick bool, q, full T) T {
	if quick {
		return q
	}
	return full
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 {
			return nil, fmt.Errorf("bad level %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var progress io.Writer = os.Stderr

func logf(format string, args ...any) {
	fmt.Fprintf(progress, "bench: "+format+"\n", args...)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}
