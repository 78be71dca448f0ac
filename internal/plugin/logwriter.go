package plugin

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
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
	if w.limit.allow() {
		w.log.Log(context.Background(), w.level, string(bytes.ToValidUTF8(w.buf, []byte("\uFFFD"))), "stream", w.stream)
	}
	w.buf = w.buf[:0]
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
}

func newLogLimiter(log *slog.Logger, rate, burst float64, every time.Duration) *logLimiter {
	l := &logLimiter{log: weak.Make(log), rate: rate, burst: burst, every: every, now: time.Now, tokens: burst}
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
