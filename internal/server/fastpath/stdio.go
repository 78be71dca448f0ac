package fastpath

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/rawjson"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
)

// The fast path over stdio (and any other stream of newline-delimited
// JSON-RPC) sits between the stream and the go-sdk's own mcp.IOTransport.
// It reads the stream a line at a time: a line that is one whole message
// the fast path takes is served here, and never reaches the go-sdk; every
// other byte is passed on to the go-sdk's reader unchanged, so that the
// go-sdk decodes, answers and refuses everything else exactly as it would
// have. Both write to the stream under one lock, the fast path several of
// its answers at a time.

// maxFastLine bounds the lines the fast path reads whole; longer lines go
// to the go-sdk as they come (it refuses frames over 16 MiB).
const maxFastLine = 4 << 20

// ConnectIO connects one MCP session served over r and w: newline-delimited
// JSON-RPC, as the go-sdk's mcp.IOTransport speaks it, with the fast path
// in front (unless it is disabled, when it passes every line on). The
// session closes r and w when it ends.
func (p *Path) ConnectIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, error) {
	st := &ioStream{p: p, fs: newFastSession(p), base: context.WithoutCancel(ctx)}
	st.in = &lineReader{st: st, src: r, br: bufio.NewReaderSize(r, 64<<10)}
	st.out = &lineWriter{st: st, dst: w}
	ss, err := p.sdk.Connect(ctx, st)
	if err != nil {
		return nil, err
	}
	st.fs.ss.Store(ss)
	return ss, nil
}

// ioStream is one session over a stream, as an mcp.Transport.
type ioStream struct {
	p    *Path
	fs   *fastSession
	base context.Context // of the fast path's calls
	in   *lineReader
	out  *lineWriter
}

// Connect connects the go-sdk to the stream, through the fast path.
func (st *ioStream) Connect(ctx context.Context) (mcp.Connection, error) {
	return (&mcp.IOTransport{Reader: st.in, Writer: st.out}).Connect(ctx)
}

// lineReader is the go-sdk's reader of the stream.
type lineReader struct {
	st        *ioStream
	src       io.ReadCloser
	br        *bufio.Reader
	pending   []byte // bytes for the go-sdk
	err       error  // for the go-sdk once pending is read
	failed    bool   // err was returned
	long      []byte // a line longer than br's buffer, gathered
	streaming bool   // passing on a line too long to gather
	scan      jsonScan
}

func (r *lineReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			if !r.failed {
				// The go-sdk's connection ends here and cancels its calls
				// with this error; so do the fast path's.
				r.failed = true
				r.st.fs.cancelAll(r.err)
			}
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (r *lineReader) Close() error { return r.src.Close() }

// next reads the next line (or part of a line too long to gather) from
// the stream, and serves it or passes it on.
func (r *lineReader) next() {
	chunk, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		if r.streaming {
			r.pass(chunk)
			return
		}
		r.long = append(r.long, chunk...)
		if len(r.long) > maxFastLine {
			r.streaming = true
			r.pass(r.long)
			r.long = r.long[:0]
		}
		return
	}
	line := chunk
	if len(r.long) > 0 {
		r.long = append(r.long, chunk...)
		line = r.long
		r.long = r.long[:0]
	}
	switch {
	case r.streaming:
		r.streaming = false
		r.pass(line)
	case err == nil:
		r.route(line)
	default:
		r.pass(line) // the last line, without a newline: the go-sdk's
	}
	if err != nil {
		r.err = err
	}
}

// pass passes line on to the go-sdk.
func (r *lineReader) pass(line []byte) {
	r.scan.feed(line)
	r.pending = line
}

// route serves a line, which ends in a newline, or passes it on.
func (r *lineReader) route(line []byte) {
	if !r.scan.atTop() {
		r.pass(line) // the middle of a message that spans lines
		return
	}
	body := bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
	fs := r.st.fs
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		// mcp.IOTransport refuses batches in sessions of 2025-06-18 and
		// later by ending the connection; it learns the session's version
		// from a hook idConn hides, so the check is made here.
		if v := sessions.Version(fs.ss.Load()); v >= core.Version20250618 {
			r.err = fmt.Errorf("JSON-RPC batching is not supported in %s and later (request version: %s)", core.Version20250618, v)
			return
		}
		r.pass(line)
		return
	}
	if r.st.p.modern != nil && r.modern(body) {
		return
	}
	if r.st.p.disabled {
		r.pass(line)
		return
	}
	m := parseMessage(body)
	switch m.kind {
	case msgCall, msgRequest:
		if fs.busy(m.id) {
			// The go-sdk drops a request whose id is in use, without an
			// answer.
			return
		}
		if ss := fs.ready(); ss != nil && r.st.out.ok() && r.st.p.takes(&m) {
			if ctx, ok := fs.start(r.st.base, m.id); ok {
				m.args, m.meta = bytes.Clone(m.args), bytes.Clone(m.meta)
				callWorkers.run(func() { r.st.serve(ctx, ss, m) })
				return
			}
		}
		fs.sdkStarted(m.id)
	case msgCancel:
		fs.cancel(m.id, nil)
	}
	r.pass(line)
}

// modern shows a line to the edge of MCP 2026-07-28 first, and reports
// whether it took the line: answered it, or serves it as one of the fast
// path's calls.
func (r *lineReader) modern(body []byte) bool {
	ml := r.st.p.modern.Line(body, !r.st.p.disabled)
	fs := r.st.fs
	switch {
	case ml.Answer != nil:
		if !fs.inUse(ml.ID) { // the go-sdk drops a request whose id is in use
			r.st.out.writeMessage(ml.Answer)
		}
		return true
	case ml.Serve != nil && r.st.out.ok():
		if fs.busy(ml.ID) {
			return true // dropped, as the go-sdk does
		}
		ctx, ok := fs.startCall(r.st.base, ml.ID, ml.Open)
		if !ok {
			return false // the go-sdk has a request with its id: it drops this one
		}
		callWorkers.run(func() {
			defer fs.running.Done()
			resp := ml.Serve(ctx, r.st.out.writeMessage)
			fs.release(ml.ID) // as the go-sdk, before the answer is written
			if resp != nil {
				r.st.out.writeMessage(resp)
			}
		})
		return true
	}
	return false
}

// callWorkers runs the fast path's stdio calls.
var callWorkers = &workers{calls: make(chan func())}

// workers runs functions on goroutines it keeps for a while after they
// finish one. A call's stack grows to tens of kilobytes (schema
// validation, the plugin's engine); on a new goroutine it would grow, and
// be copied, on every call (about 15% of the CPU time of a stdio call).
type workers struct {
	calls chan func() // to an idle worker
}

// workerIdle is how long an idle worker waits for another call.
const workerIdle = 10 * time.Second

func (w *workers) run(f func()) {
	select {
	case w.calls <- f:
	default:
		go w.work(f)
	}
}

func (w *workers) work(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-w.calls:
		case <-idle.C:
			return
		}
	}
}

// serve runs a call the fast path took, and writes its answer.
func (st *ioStream) serve(ctx context.Context, ss *mcp.ServerSession, m message) {
	defer st.fs.running.Done()
	resp := st.fs.serve(ctx, ss, &m, nil, nil)
	// As the go-sdk, free the id before the answer is written.
	st.fs.release(m.id)
	if resp != nil {
		st.out.writeMessage(resp)
	}
}

// lineWriter is the stream's writer, shared by the go-sdk and the fast
// path. The fast path's answers are written by whichever call is writing
// already, several at a time (a call that finds none writing writes its
// own, and those queued meanwhile).
type lineWriter struct {
	st  *ioStream
	dst io.WriteCloser

	wmu sync.Mutex // held while writing to dst

	mu      sync.Mutex // guards what follows
	queue   []byte     // the fast path's answers, waiting
	spare   []byte     // a buffer for the queue
	writing bool       // a call is writing the queue
	broken  error      // a write failed
	closed  bool
}

// Write writes a message of the go-sdk's.
func (w *lineWriter) Write(p []byte) (int, error) {
	if !w.st.p.disabled {
		if id, ok := responseID(p); ok {
			w.st.fs.sdkDone(id)
		}
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.dst.Write(p)
}

// writeMessage writes a message of the fast path's. If the stream is
// broken, the fast path's calls are cancelled, as the go-sdk cancels its
// own when a write fails, and the fast path takes no more.
func (w *lineWriter) writeMessage(b []byte) {
	w.mu.Lock()
	w.queue = append(append(w.queue, b...), '\n')
	if w.writing {
		w.mu.Unlock()
		return
	}
	w.writing = true
	for len(w.queue) > 0 && !w.closed {
		buf := w.queue
		w.queue = w.spare[:0]
		w.mu.Unlock()
		w.wmu.Lock()
		_, err := w.dst.Write(buf)
		w.wmu.Unlock()
		w.mu.Lock()
		w.spare = buf
		if err != nil && w.broken == nil {
			w.broken = err
			go w.st.fs.cancelAll(fmt.Errorf("%w: %v", errServerClosing, err))
		}
	}
	w.writing = false
	w.mu.Unlock()
}

// ok reports whether the stream takes writes.
func (w *lineWriter) ok() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.broken == nil
}

// errServerClosing stands for the go-sdk's error of a closing connection.
var errServerClosing = &jsonrpc.Error{Code: -32004, Message: "server is closing"}

// Close closes the stream once the fast path's calls are answered: the
// go-sdk closes it when its own are.
func (w *lineWriter) Close() error {
	w.st.fs.close()
	w.st.fs.running.Wait()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	queued := w.queue
	w.queue, w.closed = nil, true
	w.mu.Unlock()
	if len(queued) > 0 {
		w.dst.Write(queued)
	}
	return w.dst.Close()
}

// responseID returns the id of a response the go-sdk writes: it writes
// {"jsonrpc":"2.0","id":ID,"result"...} or ...,"error"...}.
func responseID(p []byte) (jsonrpc.ID, bool) {
	const prefix = `{"jsonrpc":"2.0","id":`
	if !bytes.HasPrefix(p, []byte(prefix)) {
		return jsonrpc.ID{}, false
	}
	rest := p[len(prefix):]
	if len(rest) == 0 {
		return jsonrpc.ID{}, false
	}
	end := bytes.IndexByte(rest, ',')
	if rest[0] == '"' {
		end = rawjson.SkipString(rest, 0)
	}
	if end <= 0 || end >= len(rest) {
		return jsonrpc.ID{}, false
	}
	if after := rest[end:]; !bytes.HasPrefix(after, []byte(`,"result"`)) && !bytes.HasPrefix(after, []byte(`,"error"`)) {
		return jsonrpc.ID{}, false
	}
	return parseID(rest[:end])
}

// jsonScan follows a stream of JSON text, to know when it is between two
// values (where the go-sdk's decoder starts a new message).
type jsonScan struct {
	depth   int
	str     bool // in a string
	escaped bool // after a backslash in a string
}

func (s *jsonScan) atTop() bool { return s.depth == 0 && !s.str }

func (s *jsonScan) feed(b []byte) {
	for _, c := range b {
		switch {
		case s.escaped:
			s.escaped = false
		case s.str:
			switch c {
			case '\\':
				s.escaped = true
			case '"':
				s.str = false
			}
		case c == '"':
			s.str = true
		case c == '{' || c == '[':
			s.depth++
		case c == '}' || c == ']':
			if s.depth > 0 {
				s.depth--
			}
		}
	}
}
