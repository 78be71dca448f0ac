package plugin

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"
)

// logWriter turns a plugin's stdout or stderr into log records, one a line.
// A plugin must never write to Hangar's own stdout: with the stdio
// transport, that is the MCP channel.
//
// The lines of both streams of one plugin, all instances together, are
// rate-limited by one token bucket (logLimiter): a plugin that floods its
// output costs Hangar a bounded log volume, and the lines beyond the limit
// are dropped and counted, with a record of the count at most once per
// logReportEvery.
type logWriter struct {
	log    *slog.Logger
	level  slog.Level
	stream string
	limit  *logLimiter

	mu  sync.Mutex
	buf []byte
}

// maxLogLine bounds the bytes kept for one unfinished line.
const maxLogLine = 4096

// The plugin's log budget: logBurst lines at once, then logRate lines a
// second, so at most about logRate*maxLogLine bytes a second in the long
// run.
const (
	logRate        = 100
	logBurst       = 500
	logReportEvery = time.Second
)

// newLogWriter returns the writer of one stream of the plugin whose logger
// is log. The writers made with the same logger share one limiter.
func newLogWriter(log *slog.Logger, level slog.Level, stream string) *logWriter {
	return &logWriter{log: log, level: level, stream: stream, limit: limiterFor(log)}
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLogLine - len(w.buf)
			w.buf = append(w.buf, p[:min(room, len(p))]...)
			break
		}
		w.buf = append(w.buf, p[:min(i, maxLogLine-len(w.buf))]...)
		w.flush()
		p = p[i+1:]
	}
	if len(w.buf) >= maxLogLine {
		w.flush()
	}
	return n, nil
}

func (w *logWriter) flush() {
	line := string(bytes.ToValidUTF8(w.buf, []byte("\uFFFD")))
	w.buf = w.buf[:0]
	level := w.level
	if w.stream == "stderr" && w.limit.crash.observe(line) {
		// The plugin is crashing: its message becomes the call's error
		// (see Plugin.crashError) and the dump that follows is detail.
		level = slog.LevelDebug
	}
	if !w.log.Enabled(context.Background(), level) {
		return
	}
	if w.limit.allow() {
		w.log.Log(context.Background(), level, line, "stream", w.stream)
	}
}

// logLimiter is a token bucket of log lines, with the count of the lines
// it refused.
type logLimiter struct {
	log   weak.Pointer[slog.Logger] // weak: limiters are found by their logger
	rate  float64                   // lines a second
	burst float64
	every time.Duration
	now   func() time.Time

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	dropped  int64
	reporter *time.Timer // armed while lines are dropped and not reported

	// crash is what the plugin's stderr said of its last crash.
	crash crashLog
}

func newLogLimiter(log *slog.Logger, rate, burst float64, every time.Duration) *logLimiter {
	l := &logLimiter{log: weak.Make(log), rate: rate, burst: burst, every: every, now: time.Now, tokens: burst}
	l.crash.now = time.Now
	l.last = l.now()
	return l
}

// allow takes a token for one line, or counts the line as dropped.
func (l *logLimiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if d := now.Sub(l.last); d > 0 {
		l.tokens = min(l.burst, l.tokens+d.Seconds()*l.rate)
	}
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return true
	}
	l.dropped++
	if l.reporter == nil {
		l.reporter = time.AfterFunc(l.every, l.report)
	}
	return false
}

// report logs the count of the lines dropped since the last report.
func (l *logLimiter) report() {
	l.mu.Lock()
	n := l.dropped
	l.dropped = 0
	l.reporter = nil
	l.mu.Unlock()
	if log := l.log.Value(); log != nil && n > 0 {
		log.Warn("plugin output over the log rate limit: lines dropped", "dropped", n, "lines_per_second", l.rate, "burst", l.burst)
	}
}

// limiters holds the limiter of each plugin logger, until the logger is
// garbage. Both streams of a plugin are written with its logger, so they
// share one limiter.
var limiters struct {
	sync.Mutex
	m map[weak.Pointer[slog.Logger]]*logLimiter
}

func limiterFor(log *slog.Logger) *logLimiter {
	key := weak.Make(log)
	limiters.Lock()
	defer limiters.Unlock()
	if l := limiters.m[key]; l != nil {
		return l
	}
	if limiters.m == nil {
		limiters.m = map[weak.Pointer[slog.Logger]]*logLimiter{}
	}
	l := newLogLimiter(log, logRate, logBurst, logReportEvery)
	limiters.m[key] = l
	runtime.AddCleanup(log, func(key weak.Pointer[slog.Logger]) {
		limiters.Lock()
		delete(limiters.m, key)
		limiters.Unlock()
	}, key)
	return l
}

// Crashes.
//
// A guest whose language runtime gives up writes why to stderr before it
// traps: Go "panic: ..." or "fatal error: ..." (out of memory: "runtime:
// out of memory: ..." and "fatal error: out of memory") followed by a dump
// of every goroutine, Rust "thread '...' panicked at ..." or "memory
// allocation of N bytes failed". That message is the reason the call
// failed, and the trap itself ("wasm error: unreachable") says nothing. The
// stderr writer keeps the message for the call's error (Plugin.crashError)
// and logs the lines of the crash, message and dump, at debug: the error
// reports it once, where a hundred lines of WARN said it again for every
// call.

// crashLog is what a plugin's stderr said of its last crash. Its instances
// share it, as they share their stderr; a crash is taken by the first
// crashed call that looks within crashKept of it.
type crashLog struct {
	now func() time.Time

	mu      sync.Mutex
	state   crashState
	at      time.Time // when the crash's first line came
	message []string  // its message, line by line
	oom     bool      // the runtime ran out of memory

	// Of a Go crash's dump: the lines of its first goroutine (the one
	// that crashed), how many goroutines came, the function of the last
	// frame read, and the file:line of the first frame of the plugin's
	// own code (see pluginFrame).
	stack      []string
	stackBytes int
	goroutines int
	fn         string
	where      string
}

type crashState int

const (
	noCrash   crashState = iota
	inMessage            // reading the message's lines
	inDump               // the message is complete; the rest is the dump
)

const (
	// crashKept is how long a crash's message waits for the call that
	// crashed to take it; the lines of a crash come at most this long
	// after its first.
	crashKept = 5 * time.Second
	// maxCrashLines and maxCrashBytes bound the message kept.
	maxCrashLines = 8
	maxCrashBytes = 2048
	// maxStackLines and maxStackBytes bound the stack kept.
	maxStackLines = 200
	maxStackBytes = 16 << 10
)

// crashStart reports whether line starts a crash, and what it says.
func crashStart(line string) (message string, oom, ok bool) {
	switch {
	case strings.HasPrefix(line, "runtime: out of memory"), strings.HasPrefix(line, "fatal error: out of memory"):
		return line, true, true
	case strings.HasPrefix(line, "panic: "), strings.HasPrefix(line, "fatal error: "):
		return line, false, true
	case strings.HasPrefix(line, "memory allocation of ") && strings.HasSuffix(line, " failed"):
		return line, true, true // Rust's allocation failure
	case strings.HasPrefix(line, "thread '") && strings.Contains(line, "' panicked at "):
		return line, false, true // Rust: the message follows when the line ends with ":"
	}
	return "", false, false
}

// observe reads one line of stderr and reports whether it belongs to a
// crash.
func (c *crashLog) observe(line string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.state != noCrash && now.Sub(c.at) > crashKept {
		c.reset()
	}
	switch c.state {
	case noCrash:
		msg, oom, ok := crashStart(line)
		if !ok {
			return false
		}
		c.state, c.at, c.message, c.oom = inMessage, now, []string{msg}, oom
		if oom {
			c.state = inDump
		}
	case inMessage:
		// Go continues a multi-line message until a blank line or the
		// dump; Rust's message is on the lines after "panicked at ...:",
		// until a note or the backtrace.
		switch {
		case line == "", strings.HasPrefix(line, "goroutine "), strings.HasPrefix(line, "[signal "),
			strings.HasPrefix(line, "runtime stack:"), strings.HasPrefix(line, "note: "),
			strings.HasPrefix(line, "stack backtrace:"):
			c.state = inDump
		case len(c.message) < maxCrashLines && c.size()+len(line) <= maxCrashBytes:
			c.message = append(c.message, line)
		}
		if c.state == inDump {
			c.dump(line)
		}
	case inDump:
		c.dump(line)
	}
	return true
}

// dump reads one line of a Go crash's goroutine dump: the first
// goroutine's lines are kept, and the first of its frames that is the
// plugin's own code is the crash's place.
//
//	goroutine 1 [running]:
//	main.init.0()
//		example.com/hello/main.go:21 +0x5
func (c *crashLog) dump(line string) {
	if strings.HasPrefix(line, "goroutine ") {
		c.goroutines++
	}
	if c.goroutines != 1 || len(c.stack) >= maxStackLines || c.stackBytes+len(line) > maxStackBytes {
		return
	}
	c.stack = append(c.stack, line)
	c.stackBytes += len(line) + 1
	switch {
	case strings.HasPrefix(line, "\t"):
		if c.where == "" && c.fn != "" && pluginFunc(c.fn) {
			file, _, _ := strings.Cut(line[1:], " +0x")
			c.where = file
		}
		c.fn = ""
	case strings.HasPrefix(line, "goroutine "):
		c.fn = ""
	default:
		fn := strings.TrimPrefix(line, "created by ")
		fn, _, _ = strings.Cut(fn, " in goroutine ")
		if i := strings.LastIndexByte(fn, '('); i > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:i]
		}
		c.fn = fn
	}
}

// pdkPath is the import path of Hangar's Go PDK, whose frames are not the
// plugin's own code.
const pdkPath = "github.com/hangar-mcp/hangar/pdk"

// pluginFunc reports whether the function fn of a Go stack
// ("example.com/m/pkg.(*T).Method", "main.init.0") is the plugin's own
// code: not the Go runtime's, the standard library's or the PDK's. The
// standard library's packages are those whose first element has no dot
// (package main aside), as the Go PDK tells them (pdk/panic.go).
func pluginFunc(fn string) bool {
	slash := strings.LastIndexByte(fn, '/')
	pkg := fn
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		pkg = fn[:slash+1+dot]
	}
	if pkg == pdkPath || strings.HasPrefix(pkg, pdkPath+"/") {
		return false
	}
	first, _, _ := strings.Cut(pkg, "/")
	return pkg == "main" || strings.Contains(first, ".")
}

func (c *crashLog) size() int {
	n := 0
	for _, l := range c.message {
		n += len(l) + 1
	}
	return n
}

func (c *crashLog) reset() {
	c.state, c.message, c.oom = noCrash, nil, false
	c.stack, c.stackBytes, c.goroutines, c.fn, c.where = nil, 0, 0, "", ""
}

// take returns what stderr said of the crash that just happened, if it
// said anything in the last crashKept, and forgets it: its message, in the
// form of the Go PDK's recovered panics ("panic: <message> at
// <file>:<line>", Go's and Rust's alike), and the stack of the goroutine
// that crashed, if it was a Go panic.
func (c *crashLog) take() (message, stack string, oom bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == noCrash || c.now().Sub(c.at) > crashKept {
		c.reset()
		return "", "", false
	}
	message, oom = strings.Join(c.message, "\n"), c.oom
	first := c.message[0]
	switch {
	case strings.HasPrefix(first, "thread '") && strings.HasSuffix(first, ":") && len(c.message) > 1:
		// Rust: "thread 'main' panicked at src/lib.rs:3:5:" and the
		// message on the next lines.
		_, where, _ := strings.Cut(strings.TrimSuffix(first, ":"), "' panicked at ")
		message = "panic: " + strings.Join(c.message[1:], "\n") + " at " + where
	case strings.HasPrefix(first, "thread '") && strings.Contains(first, "' panicked at '"):
		// Rust before 1.73: "thread 'main' panicked at 'message',
		// src/lib.rs:3:5".
		_, rest, _ := strings.Cut(first, "' panicked at '")
		if i := strings.LastIndex(rest, "', "); i >= 0 {
			message = "panic: " + rest[:i] + " at " + rest[i+3:]
		}
	case strings.HasPrefix(first, "panic: ") && c.where != "":
		message += " at " + c.where
	}
	if !oom && strings.HasPrefix(first, "panic: ") {
		stack = strings.TrimRight(strings.Join(c.stack, "\n"), "\n")
	}
	c.reset()
	return message, stack, oom
}
