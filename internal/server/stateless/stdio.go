package stateless

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Over stdio, the go-sdk serves a 2026-07-28 request in the session of the
// stream it arrives on, which needs no initialize. The fast path shows the
// edge each line first (Line, which package server gives the fast path as
// its Options.Stateless): a request whose _meta names a
// protocol version is checked here (the same checks as over HTTP, but
// for the headers, which stdio has none of), and a tools/call or
// resources/read of a tool or resource some plugin serves is served on the
// fast path. A retry whose state names another replica cannot be
// forwarded: the core's Manager tells the client to start again.

// Line tells what the edge makes of a line of a stdio stream, body
// (without its line end): a request of 2026-07-28 is answered or served
// here, anything else (a zero wire.LineClaim) is left to the stream's
// reader. fast reports whether the reader may serve the line on its fast
// path. body is the stream's buffer: Serve reads a copy.
func (e *Edge) Line(body []byte, fast bool) wire.LineClaim {
	if !bytes.Contains(body, []byte(wire.MetaProtocolVersion)) {
		return wire.LineClaim{}
	}
	// The Serve below runs on a worker, after the stream's next read has
	// reused the bytes of this line.
	body = bytes.Clone(body)
	m, ok := readMessage(body)
	if !ok || !m.id.IsValid() || len(m.meta) == 0 {
		return wire.LineClaim{}
	}
	if rm, ok := scanMeta(m); ok && fast && e.quick(m) {
		// The usual call: the checks below, without a map of the _meta.
		return wire.LineClaim{ID: m.id, Serve: func(ctx context.Context, cancel context.CancelCauseFunc, write func([]byte)) []byte {
			return e.serveLine(ctx, cancel, m, rm, write)
		}}
	}
	meta, jerr := decodeMessageMeta(m)
	if _, named := meta[wire.MetaProtocolVersion]; jerr != nil || !named {
		return wire.LineClaim{} // not a request of 2026-07-28: the go-sdk's
	}
	if m.refused != nil {
		return wire.LineClaim{ID: m.id, Answer: m.refused}
	}
	rm, jerr := checkFields(meta)
	if jerr != nil {
		return wire.LineClaim{ID: m.id, Answer: wire.EncodeError(m.id, jerr)}
	}
	if m.method == "server/discover" {
		// The go-sdk's stdio session would take the probe's _meta as its
		// initialization, and refuse the initialize of a client that falls
		// back to 2025-11-25 (as the revision says a client may when the
		// answer is late): the go-sdk answers it in a session of its own.
		return wire.LineClaim{ID: m.id, Serve: func(ctx context.Context, _ context.CancelCauseFunc, _ func([]byte)) []byte {
			return e.discoverAside(ctx, m.id, body)
		}}
	}
	if m.method == "subscriptions/listen" {
		return wire.LineClaim{ID: m.id, Open: true, Serve: func(ctx context.Context, _ context.CancelCauseFunc, write func([]byte)) []byte {
			return e.listenLine(ctx, m, write)
		}}
	}
	if taskMethod(m.method) && e.tasks != nil {
		return wire.LineClaim{ID: m.id, Serve: func(context.Context, context.CancelCauseFunc, func([]byte)) []byte {
			return e.taskLine(m, rm)
		}}
	}
	if !fast || !e.quick(m) {
		return wire.LineClaim{} // the go-sdk's, through the middleware
	}
	return wire.LineClaim{ID: m.id, Serve: func(ctx context.Context, cancel context.CancelCauseFunc, write func([]byte)) []byte {
		return e.serveLine(ctx, cancel, m, rm, write)
	}}
}

// serveLine serves a tools/call or resources/read over stdio on the fast
// path (serveQuick), and returns its answer as the go-sdk writes it.
func (e *Edge) serveLine(ctx context.Context, cancel context.CancelCauseFunc, m *message, rm *reqMeta, write func([]byte)) []byte {
	sink := &streamSink{line: write, level: rm.logLevel}
	b, jerr, _ := e.serveQuick(ctx, cancel, m, rm, nil, nil, sink)
	if jerr != nil {
		return wire.EncodeError(m.id, jerr)
	}
	return b
}

// discoverAside answers a server/discover that came over stdio as the
// go-sdk answers it over its stateless Streamable HTTP, where each request
// has a session of its own, so that the stdio session stays free to be
// initialized.
func (e *Edge) discoverAside(ctx context.Context, id jsonrpc.ID, body []byte) []byte {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://stdio/", bytes.NewReader(body))
	if err != nil {
		return wire.EncodeError(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", Version)
	r.Header.Set("Mcp-Method", "server/discover")
	w := httptest.NewRecorder()
	e.sdkHTTP.ServeHTTP(w, r)
	out := w.Body.Bytes()
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		out = nil
		for line := range strings.Lines(w.Body.String()) {
			if data, ok := strings.CutPrefix(line, "data:"); ok {
				out = []byte(strings.TrimSpace(data))
			}
		}
	}
	out = bytes.TrimSpace(out)
	if len(out) == 0 || out[0] != '{' {
		return wire.EncodeError(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server/discover: HTTP %d %s", w.Code, bytes.TrimSpace(w.Body.Bytes()))})
	}
	return out
}
