package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
)

// TestMain lets the test binary be the native server too: the benchmark
// starts its own executable with -serve native.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "-serve" {
		os.Exit(serveMode(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the benchmark's code paths end to end with tiny counts:
// builds, servers over HTTP and stdio, the load driver, the report and the
// plot. It checks that they work, not how fast anything is. The Node peer
// takes part when bench/node's npm packages are installed.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts servers")
	}
	progress = io.Discard
	dir := t.TempDir()
	only := map[string]bool{"native": true, "hangar-wat": true}
	_, err := os.Stat(filepath.Join("node", "node_modules", "node", "bin", "node"))
	noNode := err != nil
	if !noNode {
		only["node-wat"] = true
	}
	o := &options{
		warmup:   50 * time.Millisecond,
		duration: time.Second, // long enough for some calls on a busy machine
		levels:   []int{1, 2},
		sections: map[string]bool{"throughput": true},
		only:     only,
		runs:     1,
		noNode:   noNode,
		jsonOut:  filepath.Join(dir, "r.json"),
		pngOut:   filepath.Join(dir, "r.png"),
		mdOut:    filepath.Join(dir, "r.md"),
	}
	res, printed := runFor(t, o, 2*time.Minute)
	want := 2 * len(only) * len(o.levels) // transports × targets × levels
	if len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		if c.Calls == 0 || c.Errors != 0 {
			t.Errorf("%s %s C=%d: %d calls, %d errors (%s)", c.Transport, c.Target, c.C, c.Calls, c.Errors, c.FirstError)
		}
	}
	md, err := os.ReadFile(o.mdOut)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"### Throughput and latency", "| stdio | (b) Hangar, WAT plugin | 2 |", "### Ratios of throughput"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
	if printed != string(md) {
		t.Error("printed report differs from the -md file")
	}
	f, err := os.Open(o.pngOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() < 800 {
		t.Errorf("plot is %v", img.Bounds())
	}
}

// runFor runs the benchmark with o, which must set jsonOut, within d, and
// returns its results as written to o.jsonOut and its report.
func runFor(t *testing.T, o *options, d time.Duration) (results, string) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := run(ctx, o, &out); err != nil {
		t.Fatal(err)
	}
	var res results
	b, err := os.ReadFile(o.jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res, out.String()
}

// TestDistinctCopy checks that the copies used for the 10-plugin runs are
// valid modules that differ from each other.
func TestDistinctCopy(t *testing.T) {
	// The smallest module: magic and version.
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	dir := t.TempDir()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	var prev []byte
	for i := range 2 {
		path := filepath.Join(dir, "m.wasm")
		if err := distinctCopy(wasm, path, i); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b, prev) {
			t.Fatal("copies are identical")
		}
		prev = b
		if _, err := r.CompileModule(ctx, b); err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
}

// TestChecks evaluates the targets on made-up numbers.
func TestChecks(t *testing.T) {
	r := &results{Levels: []int{1, 8, 64}, Machine: machine{Cores: 2}}
	add := func(tr, target string, c int, tput, p50, p99 float64) {
		r.Cells = append(r.Cells, cell{Transport: tr, Target: target, C: c, Throughput: tput, P50: p50, P99: p99})
	}
	for _, tr := range []string{"http", "stdio"} {
		for _, c := range []int{8, 64} {
			add(tr, "native", c, 1000, 1, 2)
			add(tr, "hangar-go", c, 700, 1, 2)
			add(tr, "hangar-wat", c, 900, 1, 2)
			add(tr, "node-go", c, 200, 1, 2)
			add(tr, "node-wat", c, 250, 1, 2)
		}
	}
	r.Scaling = []cell{{Target: "hangar-go", C: 1, Throughput: 100}, {Target: "hangar-go", C: 2, Throughput: 190}}
	r.Cold = []cold{
		{Case: "Hangar (base), 10 Go-PDK plugins, empty cache", Median: 7000, CPU: 14000, Ready: 7000},
		{Case: "Hangar, 10 Go-PDK plugins, empty cache", Median: 1000, CPU: 1900, Ready: 6000},
		{Case: "Hangar (base), 10 Go-PDK plugins, warm cache", Median: 60},
		{Case: "Hangar, 10 Go-PDK plugins, warm cache", Median: 90},
	}
	got := map[string]bool{}
	for _, c := range r.checks() {
		got[c.Name] = c.Pass
	}
	want := map[string]bool{
		"Hangar ≥ 3× the Node peer's throughput at C=8 and C=64":                          true,
		"Hangar ≥ 60% of (a), a go-sdk server with the tool in Go, at C=64":               true,
		"Throughput for one plugin grows with concurrency up to the core count":           true,
		"Warm start, 10 plugins: first tools/list answer < 100 ms":                        true,
		"Empty caches, 10 plugins: first tools/list answer < 2 s":                         true,
		"First tools/list no slower than the base binary: 10 Go-PDK plugins, empty cache": true,
		"First tools/list no slower than the base binary: 10 Go-PDK plugins, warm cache":  false,
		"p99 < 5× p50 at C=64 (Hangar)":                                                   true,
		"Hangar / Node peer at C=64: HTTP ≥ 2×, stdio ≥ 1×":                               true,
	}
	for name, pass := range want {
		if p, ok := got[name]; !ok || p != pass {
			t.Errorf("%s: got %v (present %v), want %v", name, p, ok, pass)
		}
	}
	// A stdio pair under 1× fails the MCP layer's target.
	r.Cells[len(r.Cells)-2].Throughput = 1000 // stdio node-go at C=64
	for _, c := range r.checks() {
		if strings.HasPrefix(c.Name, "Hangar / Node peer") && c.Pass {
			t.Errorf("MCP layer target passes with a 0.7× ratio: %s", c.Detail)
		}
	}
	// One slow pair fails the 3× target.
	r.Cells[3].Throughput = 300 // http node-go at C=8
	for _, c := range r.checks() {
		if strings.HasPrefix(c.Name, "Hangar ≥ 3×") && c.Pass {
			t.Errorf("3× target passes with a 2.3× ratio: %s", c.Detail)
		}
	}
}

// addCPU adds a made-up cell of the given server CPU per call.
func (r *results) addCPU(tr, target string, c int, cpu float64) {
	r.Cells = append(r.Cells, cell{Transport: tr, Target: target, C: c, Throughput: 1, ServerCPU: cpu})
}

// TestPeerRows: the measures of issue 17 and their targets, on made-up
// numbers.
func TestPeerRows(t *testing.T) {
	r := &results{Levels: []int{1, 64}}
	add := r.addCPU
	add("http", "hangar-go", 64, 40)
	add("http", "node-go", 64, 100)
	add("http", "hangar-go", 1, 1000) // not the top level: ignored
	add("stdio", "hangar-go", 64, 90)
	add("stdio", "node-go", 64, 100)
	add("stdio", "hangar-wat", 64, 120)
	add("stdio", "node-wat", 64, 100)
	r.Memory = []memLoad{
		{Target: "hangar-go", Plugins: 10, Idle: 200 << 20, LoadPeak: 300 << 20, Load: cell{C: 64}},
		{Target: "node-go", Plugins: 10, Idle: 220 << 20, LoadPeak: 290 << 20},
	}
	r.Cold = []cold{{Case: "Hangar, 10 Go-PDK plugins, warm cache", Median: 90}, {Case: "Node peer, 10 Go-PDK plugins (no cache)", Median: 500}}
	rows := r.peerRows()
	if len(rows) != 6 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	if rows[0].Measure != "server CPU per call, http, Go-PDK echo, C=64" || rows[0].ratio() != 0.4 {
		t.Errorf("first row %+v", rows[0])
	}
	got := map[string]bool{}
	for _, c := range r.checks() {
		got[c.Name] = c.Pass
	}
	for name, pass := range map[string]bool{
		"Server CPU per call, Hangar / Node peer, HTTP ≤ 0.5":                     true,
		"Server CPU per call, Hangar / Node peer, stdio ≤ 1.0":                    false, // WAT 1.2
		"RSS with 10 plugins, Hangar / Node peer, idle and peak under load ≤ 1.0": false, // peak 1.03
		"First tools/list with 10 plugins, warm caches, Hangar / Node peer ≤ 0.2": true,
	} {
		if p, ok := got[name]; !ok || p != pass {
			t.Errorf("%s: got %v (present %v), want %v", name, p, ok, pass)
		}
	}
	md := r.markdown()
	for _, s := range []string{"### What the server spends, Hangar / Node peer", "| server CPU per call, stdio, WAT echo, C=64 | 120 µs | 100 µs | 1.20 | ≤ 1.0 |", "| RSS, 10 plugins idle (every plugin loaded) | 200 MiB | 220 MiB | 0.91 | ≤ 1.0 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}

// TestIssue27Checks: issue 27's targets, on made-up numbers: the Node
// peer at the tighter bounds, and 2026-07-28 against 2025-11-25 at every
// level, where one cell over 1.1 fails the target.
func TestIssue27Checks(t *testing.T) {
	r := &results{Levels: []int{1, 64}}
	add := r.addCPU
	add("http", "hangar-go", 64, 44)
	add("http", "node-go", 64, 100)
	add("stdio", "hangar-go", 64, 92)
	add("stdio", "node-go", 64, 100)
	for _, c := range r.Levels {
		add("http", "hangar-go-2026", c, 40)
		add("stdio", "hangar-go-2026", c, 100)
		add("http", "hangar-go", c, 44)
	}
	add("stdio", "hangar-go", 1, 95) // 100/95 = 1.05; at C=64, 100/92 = 1.09
	check := func(want map[string]bool, detail string) {
		t.Helper()
		got := map[string]check{}
		for _, c := range r.checks() {
			got[c.Name] = c
		}
		for name, pass := range want {
			if c, ok := got[name]; !ok || c.Pass != pass {
				t.Errorf("%s: got %+v (present %v), want pass %v", name, c, ok, pass)
			}
		}
		if c := got["Server CPU per call, 2026-07-28 / 2025-11-25 session, every level ≤ 1.1"]; !strings.Contains(c.Detail, detail) {
			t.Errorf("2026 detail %q lacks %q", c.Detail, detail)
		}
	}
	check(map[string]bool{
		"Server CPU per call, Hangar / Node peer, HTTP ≤ 0.45":                    true,
		"Server CPU per call, Hangar / Node peer, stdio ≤ 0.9":                    false, // 0.92
		"Server CPU per call, 2026-07-28 / 2025-11-25 session, every level ≤ 1.1": true,
	}, "stdio Go-PDK C=64: 1.09")
	add("stdio", "hangar-go-2026", 8, 120)
	add("stdio", "hangar-go", 8, 100)
	r.Levels = []int{1, 8, 64}
	check(map[string]bool{"Server CPU per call, 2026-07-28 / 2025-11-25 session, every level ≤ 1.1": false}, "stdio Go-PDK C=8: 1.20")
}

// TestStateless2026 runs the throughput section with the stateless target
// beside its 2025 target, in rounds in which they take turns, against a
// real hangar serve over HTTP and over stdio: every 2026-07-28 call
// succeeds (the echo back, and resultType "complete" over HTTP, the
// serverInfo of a 2026-07-28 result over stdio), and the report compares
// the two.
func TestStateless2026(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts servers")
	}
	progress = io.Discard
	for _, tc := range []struct{ transport, title string }{
		{"http", "### Streamable HTTP: 2026-07-28 stateless beside 2025-11-25 sessions (Hangar)"},
		{"stdio", "### stdio: 2026-07-28 stateless beside 2025-11-25 sessions (Hangar)"},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			dir := t.TempDir()
			o := &options{
				warmup:     50 * time.Millisecond,
				duration:   time.Second,
				levels:     []int{1, 4},
				rounds:     2,
				transports: []string{tc.transport},
				sections:   map[string]bool{"throughput": true},
				only:       map[string]bool{"hangar-wat": true, "hangar-wat-2026": true},
				runs:       1,
				noNode:     true,
				jsonOut:    filepath.Join(dir, "r.json"),
			}
			res, md := runFor(t, o, 3*time.Minute)
			if len(res.Cells) != 4 {
				t.Fatalf("%d cells, want 4 (2 targets × 2 levels, %s only): %+v", len(res.Cells), tc.transport, res.Cells)
			}
			for _, c := range res.Cells {
				if c.Transport != tc.transport || c.Calls == 0 || c.Errors != 0 || c.Seconds != 2 {
					t.Errorf("%s %s C=%d: %d calls in %gs, %d errors (%s)", c.Transport, c.Target, c.C, c.Calls, c.Seconds, c.Errors, c.FirstError)
				}
			}
			// One server for both targets.
			if len(res.Servers) != 1 || res.Servers[0].Target != "hangar-wat" {
				t.Errorf("servers %+v, want hangar-wat's only", res.Servers)
			}
			for _, s := range []string{tc.title, "| WAT echo | 4 | ", "| " + tc.transport + " | (b) Hangar, WAT plugin, 2026-07-28 stateless | 4 |"} {
				if !strings.Contains(md, s) {
					t.Errorf("report lacks %q:\n%s", s, md)
				}
			}
			if strings.Contains(md, "### Ratios of throughput") {
				t.Errorf("report has a table of ratios without the targets to compare:\n%s", md)
			}
		})
	}
}

// TestStateless2026WrongAnswer: a 2026-07-28 answer that is not the
// expected one, or not an answer at all, counts as an error and not as
// throughput, against a real hangar serve, over HTTP and over stdio.
func TestStateless2026WrongAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts servers")
	}
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) { stateless2026WrongAnswer(t, transport) })
	}
}

func stateless2026WrongAnswer(t *testing.T, transport string) {
	progress = io.Discard
	o := &options{
		warmup:     50 * time.Millisecond,
		duration:   500 * time.Millisecond,
		transports: []string{transport},
		sections:   map[string]bool{"throughput": true},
		only:       map[string]bool{"hangar-wat-2026": true},
		noNode:     true,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := setup(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.cleanup()
	sv, err := e.serveTarget(ctx, tHangarWAT2026.server(), transport)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.stop()

	// Count the connections the callers open: they keep theirs alive.
	tr := httpClient.Transport.(*http.Transport)
	var dials atomic.Int64
	dialer := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	defer func() { tr.DialContext = nil }()

	right := echoSpec("echo")
	wrongText := right
	wrongText.expect = "not what the plugin echoes"
	noTool := echoSpec("no_such_tool")
	for _, tc := range []struct {
		name    string
		spec    callSpec
		wantErr string // "" for success
	}{
		{"right", right, ""},
		{"wrong text", wrongText, "unexpected result"},
		{"no such tool", noTool, "unknown tool"},
	} {
		callers, done, err := sv.callers(tHangarWAT2026, 2, tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		r := driveCalls(ctx, sv.pid, 2, tc.spec, o.warmup, o.duration, callers)
		// A call counts only if it starts in the window. On a busy
		// machine (CI at a load of 20) the first calls can outlast the
		// whole window, which then holds neither a call nor an error:
		// that says nothing about the answers, so measure again, longer.
		for d := 2 * o.duration; r.Calls == 0 && r.Errors == 0 && d <= 16*o.duration; d *= 2 {
			r = driveCalls(ctx, sv.pid, 2, tc.spec, o.warmup, d, callers)
		}
		done()
		if tc.wantErr == "" {
			if r.Calls == 0 || r.Errors != 0 {
				t.Errorf("%s: %d calls, %d errors (%s)", tc.name, r.Calls, r.Errors, r.FirstError)
			}
			if n := dials.Load(); transport == "http" && n > 4 {
				t.Errorf("%s: 2 callers opened %d connections for %d calls, want about one each (keep-alive)", tc.name, n, r.Calls)
			}
			continue
		}
		if r.Calls != 0 || r.Errors == 0 || !strings.Contains(r.FirstError, tc.wantErr) {
			t.Errorf("%s: %d calls, %d errors (%q), want no calls and errors %q", tc.name, r.Calls, r.Errors, r.FirstError, tc.wantErr)
		}
	}
}

// TestCheckModernAnswer: what counts as a successful 2026-07-28 answer.
func TestCheckModernAnswer(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}}`
	for _, tc := range []struct {
		name, ctype, body, wantErr string
	}{
		{"json", "application/json", ok, ""},
		{"sse", "text/event-stream", "event: message\ndata: " + ok + "\n\n", ""},
		{"sse after a notification", "text/event-stream; charset=utf-8", `data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n\nevent: message\ndata: " + ok + "\n\n", ""},
		{"another id", "application/json", strings.Replace(ok, `"id":3`, `"id":4`, 1), "no response"},
		{"input required", "application/json", strings.Replace(ok, `"complete"`, `"input_required"`, 1), `resultType "input_required"`},
		{"no resultType", "application/json", strings.Replace(ok, `,"resultType":"complete"`, "", 1), `resultType ""`},
		{"wrong text", "application/json", strings.Replace(ok, `"hi"`, `"ho"`, 1), "unexpected result"},
		{"tool error", "application/json", strings.Replace(ok, `"resultType"`, `"isError":true,"resultType"`, 1), "tool error"},
		{"JSON-RPC error", "application/json", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool"}}`, "-32602"},
		{"no result", "application/json", `{"jsonrpc":"2.0","id":3}`, "without a result"},
		{"not JSON", "application/json", `<html>`, "decoding"},
		{"other type", "text/html", ok, "answer of type"},
	} {
		err := checkModernAnswer(tc.ctype, []byte(tc.body), 3, "hi")
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestCheckModernResult: what counts as a successful 2026-07-28 answer
// over stdio, where the go-sdk client of a 2025-11-25 session decodes it.
func TestCheckModernResult(t *testing.T) {
	info := mcp.Meta{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "hangar"}}
	text := []mcp.Content{&mcp.TextContent{Text: payload}}
	for _, tc := range []struct {
		name    string
		res     *mcp.CallToolResult
		wantErr string
	}{
		{"2026-07-28", &mcp.CallToolResult{Meta: info, Content: text}, ""},
		{"no serverInfo", &mcp.CallToolResult{Content: text}, "not served at 2026-07-28"},
		{"wrong text", &mcp.CallToolResult{Meta: info, Content: []mcp.Content{&mcp.TextContent{Text: "ho"}}}, "unexpected result"},
	} {
		err := checkModernResult(tc.res, payload)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
