package fastpath

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/rawjson"
	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/internal/workers"
)

// The fast path over stdio (and any other stream of newline-delimited
// JSON-RPC) sits between the stream and the go-sdk's own mcp.IOTransport.
// It reads the stream a message at a time, a line each (a line that is
// not a whole message is refused with a parse error): a message the fast path takes is served
// here, and never reaches the go-sdk; every other message is screened
// (screen.go) and passed on to the go-sdk's reader, or answered here with
// a JSON-RPC error if the go-sdk would have ended the session on it. Both
// write to the stream under one lock, the fast path several of its answers
// at a time.

// maxFastLine bounds the lines the fast path serves; longer messages go to
// the go-sdk.
const maxFastLine = 4 << 20

// maxMessage bounds a message read from the stream: the go-sdk's bound on
// a frame (over it, it ends the session). A longer one is refused, and the
// rest of its line skipped.
const maxMessage = mcp.DefaultMaxLineLength

// ConnectIO connects one MCP session served over r and w: newline-delimited
// JSON-RPC, as the go-sdk's mcp.IOTransport speaks it, with the fast path
// in front (unless it is disabled, when it only screens what it passes
// on). The session closes r and w when it ends.
func (p *Path) ConnectIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, error) {
	st := &ioStream{p: p, fs: newFastSession(p), base: context.WithoutCancel(ctx), batched: map[jsonrpc.ID]bool{}}
	st.in = &lineReader{st: st, src: r, br: bufio.NewReaderSize(r, 64<<10)}
	st.out = &lineWriter{st: st, dst: w}
	st.write = st.out.writeMessage
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
	// write is out.writeMessage, bound once: a method value made for each
	// call would be an allocation a call.
	write func([]byte)

	// batched holds the ids of the requests of batches the go-sdk has not
	// answered yet: it ends the session on a batch that reuses one.
	bmu     sync.Mutex
	batched map[jsonrpc.ID]bool
}

// Connect connects the go-sdk to the stream, through the fast path.
func (st *ioStream) Connect(ctx context.Context) (mcp.Connection, error) {
	return (&mcp.IOTransport{Reader: st.in, Writer: st.out}).Connect(ctx)
}

// lineReader is the go-sdk's reader of the stream.
type lineReader struct {
	st      *ioStream
	src     io.ReadCloser
	br      *bufio.Reader
	pending []byte // bytes for the go-sdk
	queue   [][]byte
	err     error  // for the go-sdk once pending is read
	failed  bool   // err was returned
	msg     []byte // a line read so far, longer than br's buffer
	skip    bool   // skipping the rest of a line too long to read
	scan    jsonScan
}

func (r *lineReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if len(r.queue) > 0 {
			r.pending, r.queue = r.queue[0], r.queue[1:]
			continue
		}
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

// next reads the next line (or part of a line too long for br's buffer)
// from the stream, and, once it has a whole message, serves it, passes it
// on or answers it.
func (r *lineReader) next() {
	chunk, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		if !r.skip {
			r.scan.feed(chunk)
			r.msg = append(r.msg, chunk...)
			if len(r.msg) > maxMessage {
				r.answer(refuse(nil, CodeInvalidRequest, "Invalid Request: the message is longer than %d bytes", maxMessage))
				r.reset()
				r.skip = true
			}
		}
		return
	}
	if err != nil {
		r.err = err
	}
	if r.skip {
		r.skip = false // the end of the line skipped
		return
	}
	r.scan.feed(chunk)
	line := chunk
	if len(r.msg) > 0 {
		r.msg = append(r.msg, chunk...)
		line = r.msg
	}
	switch {
	case !r.scan.atTop() && err == nil:
		// MCP's stdio transport: a line is a message, and no message holds
		// a line break. A line that ends inside an object, an array or a
		// string is not a whole message: it is refused at once, and the
		// next line is the next message (reading on for the rest of it
		// would leave every later request unanswered).
		r.answer(refuse(nil, CodeParseError, "Parse error: the line is not a whole JSON message (it ends inside an object, an array or a string); over stdio, send each message on one line"))
		r.reset()
	default:
		r.route(line, err == nil && len(line) <= maxFastLine)
		r.reset()
	}
}

// reset starts a new message.
func (r *lineReader) reset() {
	r.scan = jsonScan{}
	if cap(r.msg) > 1<<20 {
		r.msg = nil // do not keep a large buffer for small messages
	} else {
		r.msg = r.msg[:0]
	}
}

// answer writes the fast path's answer to a message it refused.
func (r *lineReader) answer(ref *refusal) {
	r.st.out.writeMessage(ref.encode())
}

// pass passes a message on to the go-sdk: its bytes, without the white
// space around them (the go-sdk ends the session on white space after a
// value on its line), and a newline. What is queued is read before the
// next read from the stream, which may reuse the bytes.
func (r *lineReader) pass(body []byte) {
	if cap(body) > len(body) && len(body) > 0 {
		// The byte after the message, in the line already read, becomes
		// its newline.
		body = body[:len(body)+1]
		body[len(body)-1] = '\n'
	} else {
		body = append(bytes.Clone(body), '\n')
	}
	r.queue = append(r.queue, body)
}

// route serves a whole message (a line, ending in a newline unless it
// is the last bytes of the stream), or screens it and passes it on. fast is
// false for a message the fast path must not take: too long, or the last
// bytes of the stream.
func (r *lineReader) route(line []byte, fast bool) {
	body := bytes.TrimSpace(line)
	if len(body) == 0 {
		return // white space only
	}
	fs := r.st.fs
	if body[0] == '[' {
		r.routeBatch(body)
		return
	}
	if r.st.p.stateless != nil && r.claimed(body, fast) {
		return
	}
	if fast && !r.st.p.disabled {
		// As before the screen: the fast path takes a call on a line of
		// its own, with no white space before it.
		m := parseMessage(bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")))
		switch m.kind {
		case msgCall, msgRequest:
			if fs.busy(m.id) {
				// The go-sdk drops a request whose id is in use, without an
				// answer.
				return
			}
			if ss := fs.ready(); ss != nil && r.st.out.ok() && r.st.p.takes(&m) {
				if ctx, cancel, ok := fs.start(r.st.base, m.id); ok {
					m.args, m.meta = bytes.Clone(m.args), bytes.Clone(m.meta)
					callWorkers.Run(func() { r.st.serve(ctx, cancel, ss, m) })
					return
				}
			}
			fs.sdkStarted(m.id)
			r.pass(body)
			return
		case msgCancel:
			fs.cancel(m.id, nil)
			r.pass(body)
			return
		case msgNotification:
			if m.bare && m.method == "notifications/roots/list_changed" {
				if ss := fs.ready(); ss != nil {
					// As the go-sdk's handler would (sessions), without
					// its decoding: a client may send these in a loop.
					var meta mcp.Meta
					if m.meta != nil {
						json.Unmarshal(m.meta, &meta) // a valid object (parseMessage)
					}
					r.st.p.core.RootsListChanged(r.st.base, fs.state(ss).Notification(meta, nil))
					return
				}
			}
			r.pass(body)
			return
		case msgResponse:
			r.pass(body)
			return
		}
		// parseMessage read every kind above as the go-sdk does
		// (FuzzParseMessage): only what it did not read is screened.
	}
	if ref := screenMessage(body); ref != nil {
		r.answer(ref)
		return
	}
	r.pass(body)
}

// routeBatch screens a batch and passes it on. mcp.IOTransport refuses
// batches in sessions of 2025-06-18 and later by ending the session, as it
// does a batch that reuses the id of a request it has not answered, or
// holds two notifications; and it never answers a batch that holds a
// notification (it waits for an answer to it). So a batch of notifications
// only is passed on one message at a time, one that mixes notifications
// and requests is refused, and the rest as screenBatch says.
func (r *lineReader) routeBatch(body []byte) {
	st := r.st
	bt, ref := screenBatch(body, wire.SessionVersion(st.fs.ss.Load()))
	if ref != nil {
		r.answer(ref)
		return
	}
	switch {
	case bt.requests == 0:
		for _, e := range bt.elems {
			r.pass(bytes.TrimSpace(e))
		}
		return
	case bt.notifications > 0:
		r.answer(refuse(nil, CodeInvalidRequest, "Invalid Request: over stdio, a batch holds requests or notifications, not both; send the notifications apart"))
		return
	}
	st.bmu.Lock()
	for _, id := range bt.ids {
		if st.batched[id] {
			st.bmu.Unlock()
			r.answer(refuse(nil, CodeInvalidRequest, "Invalid Request: the batch reuses id %v of a request not answered yet", id.Raw()))
			return
		}
	}
	for _, id := range bt.ids {
		st.batched[id] = true
	}
	st.bmu.Unlock()
	r.pass(body)
}

// batchAnswered forgets the ids of a batch the go-sdk answered (p, a JSON
// array of responses).
func (st *ioStream) batchAnswered(p []byte) {
	var resps []struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(p, &resps) != nil {
		return
	}
	st.bmu.Lock()
	defer st.bmu.Unlock()
	for _, r := range resps {
		if id, err := jsonrpc.MakeID(r.ID); err == nil {
			delete(st.batched, id)
		}
	}
}

// claimed shows a message to the edge of MCP 2026-07-28 first, and reports
// whether it took it: answered it, or serves it as one of the fast path's
// calls. fast is route's: false, the edge leaves calls to the go-sdk.
func (r *lineReader) claimed(body []byte, fast bool) bool {
	ml := r.st.p.stateless.Line(body, fast && !r.st.p.disabled)
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
		ctx, cancel, ok := fs.startCall(r.st.base, ml.ID, ml.Open)
		if !ok {
			return false // the go-sdk has a request with its id: it drops this one
		}
		callWorkers.Run(func() {
			defer fs.running.Done()
			resp := ml.Serve(ctx, cancel, r.st.write)
			fs.release(ml.ID) // as the go-sdk, before the answer is written
			if resp != nil {
				r.st.out.writeMessage(resp)
			}
		})
		return true
	}
	return false
}

// callWorkers runs the fast path's stdio calls: on goroutines whose
// stacks have grown for a call already (package workers).
var callWorkers = workers.New()

// serve runs a call the fast path took, and writes its answer.
func (st *ioStream) serve(ctx context.Context, cancel context.CancelCauseFunc, ss *mcp.ServerSession, m message) {
	defer st.fs.running.Done()
	resp := st.fs.serve(ctx, cancel, ss, &m, nil, nil)
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
	if len(p) > 0 && p[0] == '[' {
		w.st.batchAnswered(p)
	} else if !w.st.p.disabled {
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
	return wire.ParseID(rest[:end])
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
