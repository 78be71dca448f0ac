package plugin

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// logWriter turns a plugin's stdout or stderr into log records, one a line.
// A plugin must never write to Hangar's own stdout: with the stdio
// transport, that is the MCP channel.
type logWriter struct {
	log    *slog.Logger
	level  slog.Level
	stream string

	mu  sync.Mutex
	buf []byte
}

// maxLogLine bounds the bytes kept for one unfinished line.
const maxLogLine = 4096

func newLogWriter(log *slog.Logger, level slog.Level, stream string) *logWriter {
	return &logWriter{log: log, level: level, stream: stream}
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
	w.log.Log(context.Background(), w.level, string(bytes.ToValidUTF8(w.buf, []byte("\uFFFD"))), "stream", w.stream)
	w.buf = w.buf[:0]
}
