package fastpath

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call the fast path serves over Streamable HTTP is answered on an event
// stream of its own, as the go-sdk answers a POST: what the call sends the
// client goes there too (Send), and the client's answers to the
// server's requests come back in later POSTs (deliver).

// eventStreamHeaders sets the headers of the go-sdk's answer to a POST.
func eventStreamHeaders(h http.Header) {
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
}

// streamKey marks the context of a call the fast path serves over HTTP:
// what the call sends the client goes on its stream (Send).
type streamKey struct{}

// eventStream is the event stream that answers a POST.
type eventStream struct {
	hs    *httpSession
	w     http.ResponseWriter
	rc    http.ResponseController // a value: one allocation less a call
	store mcp.EventStore
	id    string

	mu       sync.Mutex
	last     int         // index of the last event
	done     bool        // the answer is sent, or the handler returns
	unsent   bool        // an event is written but not flushed
	primeDue *time.Timer // flushes the priming event
}

var errStreamDone = fmt.Errorf("%w: write to closed stream", &jsonrpc.Error{Code: -32005, Message: "rejected by transport"})

// primeDelay is how long the priming event may wait for the first message
// of the stream, to leave with it.
const primeDelay = 100 * time.Millisecond

// prime writes the priming event (2025-11-25), which lets a client resume
// the stream before any message is sent on it. The go-sdk flushes it at
// once, which costs a write (on each side) more per call; here it leaves
// with the first message, or after primeDelay if the call takes longer.
// A stream that breaks earlier could not be resumed anyway: its call is
// cancelled (bounded).
func (st *eventStream) prime(ctx context.Context) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.store.Append(ctx, st.hs.id, st.id, nil)
	st.last++
	st.event("prime", nil, false)
	st.primeDue = time.AfterFunc(primeDelay, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if !st.done && st.unsent {
			st.rc.Flush()
			st.unsent = false
		}
	})
}

// finish ends the stream's use of the response, before the handler
// returns.
func (st *eventStream) finish() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done = true
	if st.primeDue != nil {
		st.primeDue.Stop()
	}
}

// send sends a message on the stream; final is the answer, after which
// the stream takes nothing more.
func (st *eventStream) send(ctx context.Context, data []byte, final bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return errStreamDone
	}
	select {
	case <-st.hs.closed:
		return errors.New("session is closed")
	default:
	}
	st.done = final
	stored := false
	if st.store != nil {
		stored = st.store.Append(ctx, st.hs.id, st.id, data) == nil
	}
	st.last++
	// The answer is not flushed: the handler returns at once, and the
	// server writes it with the end of the response, in one write.
	if err := st.event("message", data, !final); err != nil && !stored {
		return fmt.Errorf("%w: undelivered message: %v", errStreamDone, err)
	}
	return nil
}

// event writes an event as the go-sdk does, and flushes it if flush is
// set. st.mu must be held.
func (st *eventStream) event(name string, data []byte, flush bool) error {
	b := bufs.Get().(*bytes.Buffer)
	defer bufs.Put(b)
	b.Reset()
	b.WriteString("event: ")
	b.WriteString(name)
	if st.store != nil {
		b.WriteString("\nid: ")
		b.WriteString(st.id)
		b.WriteByte('_')
		b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(st.last), 10))
	}
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, err := st.w.Write(b.Bytes())
	st.unsent = !flush
	if flush {
		st.rc.Flush()
	}
	return err
}

// Send is sending middleware: what a call the fast path serves over HTTP
// sends the client goes on the call's event stream, where the go-sdk would
// put it for its own calls. It must be the go-sdk server's innermost
// (package sessions: Options.Send): the go-sdk's session and Hangar's middleware
// have already made their checks (capabilities, log level, the version
// adaptations) and will make those on the result.
func Send(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		st, _ := ctx.Value(streamKey{}).(*eventStream)
		if ss, _ := req.GetSession().(*mcp.ServerSession); st == nil || st.hs.ss.Load() != ss {
			return next(ctx, method, req)
		}
		var params any
		if p := req.GetParams(); p != nil {
			params = p
		}
		if strings.HasPrefix(method, "notifications/") {
			data, err := encodeRequest(jsonrpc.ID{}, method, params)
			if err != nil {
				return nil, err
			}
			return nil, st.send(ctx, data, false)
		}
		res := newResult(method)
		if res == nil {
			return next(ctx, method, req)
		}
		return res, st.call(ctx, method, params, res)
	}
}

// newResult is what a server request's result is decoded into, as the
// go-sdk's session methods expect it; nil for requests the fast path
// leaves to the go-sdk.
func newResult(method string) mcp.Result {
	switch method {
	case "sampling/createMessage":
		return &mcp.CreateMessageWithToolsResult{}
	case "elicitation/create":
		return &mcp.ElicitResult{}
	case "roots/list":
		return &mcp.ListRootsResult{}
	}
	return nil
}

// call sends a server request on the stream and waits for the client's
// answer, which a later POST brings (deliver).
func (st *eventStream) call(ctx context.Context, method string, params any, res mcp.Result) error {
	hs := st.hs
	ch := make(chan *jsonrpc.Response, 1)
	hs.mu.Lock()
	hs.seq++
	id, _ := jsonrpc.MakeID(float64(hs.seq))
	hs.pending[id] = ch
	hs.mu.Unlock()
	defer func() {
		hs.mu.Lock()
		delete(hs.pending, id)
		hs.mu.Unlock()
	}()
	data, err := encodeRequest(id, method, params)
	if err == nil {
		err = st.send(ctx, data, false)
	}
	if err != nil {
		return fmt.Errorf("calling %q: %w", method, err)
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return fmt.Errorf("calling %q: %w", method, resp.Error)
		}
		if err := json.Unmarshal(resp.Result, res); err != nil {
			return fmt.Errorf("calling %q: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		// As the go-sdk: tell the client, and give up.
		if data, err := encodeRequest(jsonrpc.ID{}, "notifications/cancelled", &mcp.CancelledParams{Reason: ctx.Err().Error(), RequestID: id.Raw()}); err == nil {
			st.send(context.WithoutCancel(ctx), data, false)
		}
		return ctx.Err()
	case <-hs.closed:
		return fmt.Errorf("%w: calling %q: the session ended", mcp.ErrConnectionClosed, method)
	}
}

// deliver hands the client's answer to a server request of the fast path
// to the call waiting for it, and reports whether one was.
func (hs *httpSession) deliver(id jsonrpc.ID, body []byte) bool {
	hs.mu.Lock()
	ch := hs.pending[id]
	delete(hs.pending, id)
	hs.mu.Unlock()
	if ch == nil {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok {
		resp = &jsonrpc.Response{ID: id, Error: fmt.Errorf("decoding the answer: %v", err)}
	}
	ch <- resp
	return true
}

// encodeRequest encodes a request or notification (id not valid) as the
// go-sdk does.
func encodeRequest(id jsonrpc.ID, method string, params any) ([]byte, error) {
	var raw json.RawMessage
	if params != nil {
		b := new(bytes.Buffer)
		if err := marshalTo(b, params); err != nil {
			return nil, err
		}
		raw = b.Bytes()
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: raw})
}
