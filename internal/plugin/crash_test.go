package plugin

import (
	"strings"
	"testing"
	"time"
)

// TestCrashLog: what the stderr of crashing guests says, line by line, and
// the message a crashed call takes from it.
func TestCrashLog(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		lines   []string
		message string
		stack   string
		oom     bool
		crash   []bool // which lines belong to the crash (logged at debug)
	}{
		{"go panic", []string{"working", "panic: boom", "", "goroutine 1 [running]:", "main.main()"},
			"panic: boom", "goroutine 1 [running]:\nmain.main()", false, []bool{false, true, true, true, true}},
		{"go panic with a message of two lines", []string{"panic: first line", "second line", "", "goroutine 1 [running]:"},
			"panic: first line\nsecond line", "goroutine 1 [running]:", false, []bool{true, true, true, true}},
		{"go panic placed at the plugin's first frame", []string{
			"panic: assignment to entry in nil map", "",
			"goroutine 1 [running]:",
			"runtime.mapassign_faststr(0x1, {0x2, 0x3})", "\truntime/map_faststr.go:223 +0x4",
			"strings.Repeat({0x1, 0x1}, 0xffffffffffffffff)", "\tstrings/strings.go:626 +0x2f",
			"github.com/hangar-mcp/hangar/pdk/typed.handler[...].func1(0x1, 0x2)", "\tgithub.com/hangar-mcp/hangar/pdk/typed/typed.go:140 +0x9",
			"example.com/calc/tools.(*T).add(...)", "\texample.com/calc/tools/add.go:12",
			"main.init.0.func1(0x1)", "\texample.com/calc/main.go:30 +0x2",
			"", "goroutine 2 [chan receive]:", "main.other()", "\texample.com/calc/main.go:40 +0x2"},
			"panic: assignment to entry in nil map at example.com/calc/tools/add.go:12",
			"goroutine 1 [running]:\nruntime.mapassign_faststr(0x1, {0x2, 0x3})\n\truntime/map_faststr.go:223 +0x4\n" +
				"strings.Repeat({0x1, 0x1}, 0xffffffffffffffff)\n\tstrings/strings.go:626 +0x2f\n" +
				"github.com/hangar-mcp/hangar/pdk/typed.handler[...].func1(0x1, 0x2)\n\tgithub.com/hangar-mcp/hangar/pdk/typed/typed.go:140 +0x9\n" +
				"example.com/calc/tools.(*T).add(...)\n\texample.com/calc/tools/add.go:12\n" +
				"main.init.0.func1(0x1)\n\texample.com/calc/main.go:30 +0x2",
			false, []bool{true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true}},
		{"go runtime out of memory", []string{"runtime: out of memory: cannot allocate 1048576-byte block (62783488 in use)", "fatal error: out of memory", "", "goroutine 1 gp=0x2821c0 m=0 mp=0x1dffc0 [running]:"},
			"runtime: out of memory: cannot allocate 1048576-byte block (62783488 in use)", "", true, []bool{true, true, true, true}},
		{"go fatal error", []string{"fatal error: all goroutines are asleep - deadlock!", "", "goroutine 1 [chan receive]:"},
			"fatal error: all goroutines are asleep - deadlock!", "", false, []bool{true, true, true}},
		{"rust panic", []string{"thread 'main' panicked at src/lib.rs:12:5:", "index out of bounds: the len is 0 but the index is 3", "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"},
			"panic: index out of bounds: the len is 0 but the index is 3 at src/lib.rs:12:5", "", false, []bool{true, true, true}},
		{"rust panic, before 1.73", []string{"thread '<unnamed>' panicked at 'called `Option::unwrap()` on a `None` value', src/lib.rs:3:9"},
			"panic: called `Option::unwrap()` on a `None` value at src/lib.rs:3:9", "", false, []bool{true}},
		{"rust allocation failure", []string{"memory allocation of 1073741824 bytes failed"},
			"memory allocation of 1073741824 bytes failed", "", true, []bool{true}},
		{"no crash", []string{"a panic: in the middle is not one", "thread 'x' is fine"}, "", "", false, []bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &crashLog{now: func() time.Time { return now }}
			for i, l := range tc.lines {
				if got := c.observe(l); got != tc.crash[i] {
					t.Errorf("line %q: crash %v, want %v", l, got, tc.crash[i])
				}
			}
			msg, stack, oom := c.take()
			if msg != tc.message || oom != tc.oom || stack != tc.stack {
				t.Errorf("take = %q, %q, %v; want %q, %q, %v", msg, stack, oom, tc.message, tc.stack, tc.oom)
			}
			if msg, _, _ := c.take(); msg != "" {
				t.Errorf("taken twice: %q", msg)
			}
			if c.observe("an ordinary line") {
				t.Error("after the crash was taken, lines are still the crash's")
			}
		})
	}

	// A crash no call took is forgotten after crashKept, and the lines
	// after it are no longer the crash's.
	c := &crashLog{now: func() time.Time { return now }}
	c.observe("panic: boom")
	now = now.Add(crashKept + time.Second)
	if c.observe("later output") {
		t.Error("a line long after a crash is the crash's")
	}
	if msg, _, _ := c.take(); msg != "" {
		t.Errorf("a stale crash was taken: %q", msg)
	}
}

// TestCrashErrorText: what the errors of crashes say.
func TestCrashErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  *CrashError
		want string
	}{
		{&CrashError{Plugin: "p", Export: "call_tool", Reason: "panic: boom"}, "plugin p: call_tool: plugin crashed: panic: boom"},
		{&CrashError{Plugin: "p", Export: "list_tools", Starting: true, Reason: "panic: boom"}, "plugin p crashed while starting: panic: boom"},
		{&CrashError{Plugin: "p", Export: "call_tool", OutOfMemory: true, Memory: 64 << 20, Reason: "x"},
			"plugin p: call_tool: plugin crashed: plugin ran out of memory (limits.memory 64MiB); raise limits.memory of plugin p if it needs more"},
		{&CrashError{Plugin: "p", Export: "call", ExitCode: 2}, "plugin p: call: plugin crashed: exited with code 2"},
		{&CrashError{Plugin: "p", Export: "call_tool", Tool: "lookup", Reason: "panic: boom at src/lib.rs:3:5"},
			"plugin p: tool lookup: plugin crashed: panic: boom at src/lib.rs:3:5"},
		{&CrashError{Plugin: "p", Export: "read_resource", Reason: "panic: boom", Denied: "file access denied: ..."},
			"plugin p: read_resource: plugin crashed: panic: boom (file access denied: ...)"},
		{&CrashError{Plugin: "p", Export: "call", Memory: 1<<20 + 1, OutOfMemory: true}, "plugin p: call: plugin crashed: plugin ran out of memory (limits.memory 1048577 bytes); raise limits.memory of plugin p if it needs more"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestPanicStackWithinLogBudget: the stack a plugin's error carries is the
// plugin's text, logged within its log budget as its stderr is: a plugin
// that answers every call with one cannot flood the log.
func TestPanicStackWithinLogBudget(t *testing.T) {
	var logs logBuffer
	p := &Plugin{name: "p", log: logs.logger()}
	msg := "tool: panic: boom at example.com/p/main.go:3\n\ngoroutine 1 [running]:\nmain.f()\n\texample.com/p/main.go:3 +0x1"
	for range logBurst + 100 {
		if err := p.pluginError(nil, "call_tool", msg); err.Message != "tool: panic: boom at example.com/p/main.go:3" {
			t.Fatalf("error %q", err.Message)
		}
	}
	// The budget refills at logRate lines a second while the loop runs.
	if n := strings.Count(logs.String(), `msg="plugin handler panicked"`); n < logBurst || n >= logBurst+100 {
		t.Errorf("%d stacks logged for %d panics, want the budget's %d (and the few it refilled meanwhile)", n, logBurst+100, logBurst)
	}
}
