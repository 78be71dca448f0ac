package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// loadFile loads the module at path with opts, closed at the end of the
// test.
func loadFile(t *testing.T, path string, opts Options) *Plugin {
	t.Helper()
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := stateEngine(t)
	if opts.Name == "" {
		opts.Name = "test"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := e.Load(context.Background(), wasm, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

var (
	stateEngineOnce sync.Once
	stateEng        *Engine
	stateEngErr     error
)

// stateEngine is one engine for the tests of this file, so that each
// module is compiled once.
func stateEngine(t *testing.T) *Engine {
	stateEngineOnce.Do(func() { stateEng, stateEngErr = NewEngine(testutil.CacheDir()) })
	if stateEngErr != nil {
		t.Fatal(stateEngErr)
	}
	return stateEng
}

func registerPlugin(t *testing.T) string {
	return testutil.BuildPlugin(t, "./internal/testplugins/register")
}

// listsRecorder is an Events receiver that keeps what it gets.
type listsRecorder struct {
	mu    sync.Mutex
	lists []*Lists
}

func (r *listsRecorder) ListsChanged(l *Lists) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, l)
}

func (r *listsRecorder) ResourceUpdated(string) {}

func (r *listsRecorder) take() []*Lists {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lists
	r.lists = nil
	return l
}

func toolNames(l *Lists) []string {
	var names []string
	for _, t := range l.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// staticTools are the tools of the register plugin before any is added.
var staticTools = []string{"count", "flood", "get_var", "register", "register_crash", "register_fail", "register_panic", "set_var", "set_var_bytes"}

// withDyn is staticTools plus dyn_1..dyn_n.
func withDyn(n int) []string {
	names := slices.Clone(staticTools)
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("dyn_%d", i))
	}
	slices.Sort(names)
	return names
}

func callText(t *testing.T, p *Plugin, tool, args string) string {
	t.Helper()
	res, err := p.CallTool(context.Background(), nil, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", tool, len(res.Content))
	}
	b, _ := json.Marshal(res.Content[0])
	var c struct{ Text string }
	json.Unmarshal(b, &c)
	return c.Text
}

// TestInstancesFollowTheMarker: a module that exports hangar_stateless (WAT,
// or Go through pdk/stateless) gets one instance per core; one that does
// not gets one; limits.max_instances overrides both.
func TestInstancesFollowTheMarker(t *testing.T) {
	auto := max(2, runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name      string
		path      string
		max       int
		stateless bool
		want      int
	}{
		{"wat echo (marker)", testutil.BuildWAT(t, "echo"), 0, true, auto},
		{"go echo (pdk/stateless)", testutil.BuildPlugin(t, "./bench/plugins/echo"), 0, true, auto},
		{"register (no marker)", registerPlugin(t), 0, false, 1},
		{"legacy (no marker)", testutil.BuildPlugin(t, "./internal/testplugins/legacy"), 0, false, 1},
		{"register, max_instances 3", registerPlugin(t), 3, false, 3},
		{"wat echo, max_instances 1", testutil.BuildWAT(t, "echo"), 1, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadFile(t, tc.path, Options{Limits: config.Limits{MaxInstances: tc.max}})
			if p.Stateless() != tc.stateless || p.MaxInstances() != tc.want || p.pool.max != tc.want {
				t.Errorf("stateless %v, max instances %d (pool %d); want %v, %d", p.Stateless(), p.MaxInstances(), p.pool.max, tc.stateless, tc.want)
			}
		})
	}

	// The pool really runs that many at once, and no more.
	p := loadFile(t, testutil.BuildWAT(t, "echo"), Options{})
	var held []*instance
	for range auto {
		inst, err := p.pool.get(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, inst)
	}
	if _, err := p.pool.get(context.Background(), 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Errorf("instance %d of %d: err = %v, want ErrBusy", auto+1, auto, err)
	}
	for _, inst := range held {
		p.pool.put(inst, true)
	}
}

// TestStateIsKeptByDefault: a plugin that registers tools at run time, with
// default limits, sees its own state on every call, and each call that
// reports a change delivers exactly the new list.
func TestStateIsKeptByDefault(t *testing.T) {
	p := loadFile(t, registerPlugin(t), Options{})
	var rec listsRecorder
	p.SetEvents(&rec)
	for i := 1; i <= 3; i++ {
		if got := callText(t, p, "register", `{}`); got != fmt.Sprintf("dyn_%d", i) {
			t.Fatalf("register #%d = %q", i, got)
		}
		got := rec.take()
		if len(got) != 1 || got[0].Read != ToolList.Set() || !slices.Equal(toolNames(got[0]), withDyn(i)) {
			t.Fatalf("after register #%d: delivered %d readings, first %v", i, len(got), describe(got))
		}
		if got := callText(t, p, fmt.Sprintf("dyn_%d", i), `{}`); got != fmt.Sprint(i) {
			t.Errorf("dyn_%d = %q", i, got)
		}
	}
	if got := callText(t, p, "count", `{}`); got != "3" {
		t.Errorf("count = %q, want 3", got)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("calls that reported nothing delivered %v", describe(got))
	}
}

func describe(ls []*Lists) string {
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "[%s seq %d: %v] ", l.Read, l.Seq, toolNames(l))
	}
	return b.String()
}

// TestFloodIsOneRefresh: 100,000 notifications in one call make one reading
// of the list, with no goroutine per notification and no memory kept per
// notification.
func TestFloodIsOneRefresh(t *testing.T) {
	p := loadFile(t, registerPlugin(t), Options{})
	var rec listsRecorder
	p.SetEvents(&rec)
	callText(t, p, "count", `{}`) // warm up

	const n = 100_000
	var peak int
	stop := make(chan struct{})
	sampled := make(chan struct{})
	base := runtime.NumGoroutine()
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, runtime.NumGoroutine()-base)
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	got := callText(t, p, "flood", fmt.Sprintf(`{"count":%d}`, n))
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	close(stop)
	<-sampled

	if got != "dyn_1" {
		t.Fatalf("flood = %q", got)
	}
	ls := rec.take()
	if len(ls) != 1 || !slices.Equal(toolNames(ls[0]), withDyn(1)) {
		t.Fatalf("%d notifications delivered %d readings: %v; want one", n, len(ls), describe(ls))
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d notifications: %v, %d bytes allocated on the Go heap, at most %d more goroutines", n, elapsed, allocated, peak)
	// The call and its reading allocate a few hundred kilobytes whatever the
	// count; one byte per notification would already be 100kB.
	if allocated > 4<<20 {
		t.Errorf("%d notifications allocated %d bytes", n, allocated)
	}
	if peak > 100 { // one per notification would be 100,000
		t.Errorf("%d more goroutines during the call", peak)
	}
}

// TestNotificationsOfFailedCalls: a call that fails but leaves its instance
// usable (a tool error, or an export error) still has its lists read again,
// on its instance; a call that leaves its instance unusable has them read
// from the instance that replaces it, whose state is the plugin's from then
// on.
func TestNotificationsOfFailedCalls(t *testing.T) {
	p := loadFile(t, registerPlugin(t), Options{})
	var rec listsRecorder
	p.SetEvents(&rec)

	res, err := p.CallTool(context.Background(), nil, "register_fail", nil)
	if err != nil || !res.IsError {
		t.Fatalf("register_fail = %+v, %v; want a tool error", res, err)
	}
	if ls := rec.take(); len(ls) != 1 || !slices.Equal(toolNames(ls[0]), withDyn(1)) {
		t.Fatalf("after a tool error: %v", describe(ls))
	}
	_, err = p.CallTool(context.Background(), nil, "register_panic", nil)
	var pe *PluginError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "dyn_2") {
		t.Fatalf("register_panic: err = %v, want the plugin's error", err)
	}
	if ls := rec.take(); len(ls) != 1 || !slices.Equal(toolNames(ls[0]), withDyn(2)) {
		t.Fatalf("after an export error: %v", describe(ls))
	}

	_, err = p.CallTool(context.Background(), nil, "register_crash", nil)
	if !errors.Is(err, ErrTrap) {
		t.Fatalf("register_crash: err = %v, want ErrTrap", err)
	}
	if ls := rec.take(); len(ls) != 1 || !slices.Equal(toolNames(ls[0]), withDyn(0)) {
		t.Fatalf("after a crash: %v; want the fresh instance's tools", describe(ls))
	}
	if got := callText(t, p, "count", `{}`); got != "0" {
		t.Errorf("count after the crash = %q, want 0 (a fresh instance)", got)
	}
	if got := callText(t, p, "register", `{}`); got != "dyn_1" {
		t.Errorf("register after the crash = %q", got)
	}
	if ls := rec.take(); len(ls) != 1 || !slices.Equal(toolNames(ls[0]), withDyn(1)) {
		t.Fatalf("register after the crash: %v", describe(ls))
	}
}

// callOn runs the register plugin's tool on inst, as a call does but
// without borrowing an instance or syncing variables.
func callOn(t *testing.T, p *Plugin, inst *instance, tool, args string) {
	t.Helper()
	in, _ := json.Marshal(v1Request{Request: map[string]any{"name": tool, "arguments": json.RawMessage(args)}, Context: (*Call)(nil).v1()})
	_, _, healthy, _, err := p.runOn(context.Background(), inst, &Call{}, "call_tool", in, time.Minute, false)
	if err != nil || !healthy {
		t.Fatalf("%s on an instance: %v (healthy %v)", tool, err, healthy)
	}
}

// TestVarsAreShared: Extism variables set on one instance are seen by the
// others; two instances that ran at once keep each other's keys, the last
// to return wins on a key both set, and the plugin's variables stay under
// their size limit whoever sets them.
func TestVarsAreShared(t *testing.T) {
	ctx := context.Background()
	p := loadFile(t, registerPlugin(t), Options{Limits: config.Limits{MaxInstances: 2}})
	a, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.pool.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("one instance twice")
	}

	// Set on a, read on b: hold a, so the call runs on b.
	p.pool.put(b, true)
	callText(t, p, "set_var", `{"name":"k","value":"from b"}`)
	b, _ = p.pool.get(ctx, 0) // the newest idle: b again
	p.pool.put(a, true)
	if got := callText(t, p, "get_var", `{"name":"k"}`); got != "from b" {
		t.Fatalf("instance a reads k = %q, want the value b set", got)
	}
	a, _ = p.pool.get(ctx, 0)

	// Both start, both set, a returns first.
	p.vars.load(a)
	p.vars.load(b)
	callOn(t, p, a, "set_var", `{"name":"k","value":"a"}`)
	callOn(t, p, a, "set_var", `{"name":"only_a","value":"a"}`)
	callOn(t, p, b, "set_var", `{"name":"k","value":"b"}`)
	callOn(t, p, b, "set_var", `{"name":"only_b","value":"b"}`)
	if err := p.vars.save(a); err != nil {
		t.Fatal(err)
	}
	if err := p.vars.save(b); err != nil {
		t.Fatal(err)
	}
	p.pool.put(a, true)
	p.pool.put(b, true)
	for k, want := range map[string]string{"k": "b", "only_a": "a", "only_b": "b"} {
		for range 2 { // whichever instance
			if got := callText(t, p, "get_var", fmt.Sprintf(`{"name":%q}`, k)); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	}

	// Each instance stays under the limit, together they would not: the
	// one that returns second fails and keeps nothing.
	a, _ = p.pool.get(ctx, 0)
	b, _ = p.pool.get(ctx, 0)
	p.vars.load(a)
	p.vars.load(b)
	const big = 600 << 10
	callOn(t, p, a, "set_var_bytes", fmt.Sprintf(`{"name":"big_a","bytes":%d}`, big))
	callOn(t, p, b, "set_var_bytes", fmt.Sprintf(`{"name":"big_b","bytes":%d}`, big))
	callOn(t, p, b, "set_var", `{"name":"k","value":"lost"}`)
	if err := p.vars.save(a); err != nil {
		t.Fatal(err)
	}
	if err := p.vars.save(b); !errors.Is(err, ErrVarsFull) {
		t.Errorf("saving past the limit: err = %v, want ErrVarsFull", err)
	}
	p.pool.put(a, true)
	p.pool.put(b, true)
	for range 2 {
		if got := callText(t, p, "get_var", `{"name":"big_a"}`); len(got) != big {
			t.Errorf("big_a has %d bytes, want %d", len(got), big)
		}
		if got := callText(t, p, "get_var", `{"name":"big_b"}`); got != "<unset>" {
			t.Errorf("big_b has %d bytes, want none", len(got))
		}
		if got := callText(t, p, "get_var", `{"name":"k"}`); got != "b" {
			t.Errorf("k = %q, want b", got)
		}
	}

	// Through calls: the second big value fails the call that sets it,
	// with the reason (on whichever instance; each instance also refuses
	// on its own, which crashes the call).
	_, err = p.CallTool(ctx, nil, "set_var_bytes", json.RawMessage(fmt.Sprintf(`{"name":"big_c","bytes":%d}`, big)))
	if !errors.Is(err, ErrVarsFull) && !errors.Is(err, ErrTrap) {
		t.Errorf("setting past the limit: err = %v, want ErrVarsFull or ErrTrap", err)
	}
	if got := callText(t, p, "get_var", `{"name":"big_c"}`); got != "<unset>" {
		t.Errorf("big_c has %d bytes, want none", len(got))
	}
	if got := callText(t, p, "get_var", `{"name":"big_a"}`); len(got) != big {
		t.Errorf("big_a has %d bytes, want %d", len(got), big)
	}
}

// TestNotificationsDuringInitialization: a notification a module sends
// while it initializes (in _initialize, as a Go plugin's init function
// might) belongs to the instance's first call, whose return has the lists
// read again, once.
func TestNotificationsDuringInitialization(t *testing.T) {
	p := loadFile(t, testutil.BuildWAT(t, "initnotify"), Options{})
	var rec listsRecorder
	p.SetEvents(&rec)
	if got := callText(t, p, "ping", `{}`); got != "pong" {
		t.Fatalf("ping = %q", got)
	}
	if ls := rec.take(); len(ls) != 1 || ls[0].Read != ToolList.Set() || !slices.Equal(toolNames(ls[0]), []string{"ping"}) {
		t.Fatalf("first call: %v; want one reading of the tools", describe(ls))
	}
	callText(t, p, "ping", `{}`)
	if ls := rec.take(); len(ls) != 0 {
		t.Fatalf("second call: %v; want none", describe(ls))
	}
	// Replace the instance: the new one notifies as it initializes.
	inst, err := p.pool.get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	p.pool.put(inst, false)
	callText(t, p, "ping", `{}`)
	if ls := rec.take(); len(ls) != 1 {
		t.Fatalf("first call on a new instance: %v; want one reading", describe(ls))
	}
}
