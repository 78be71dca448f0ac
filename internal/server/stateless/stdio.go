package stateless

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/fastpath"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
)

// Over stdio, the go-sdk serves a 2026-07-28 request in the session of the
// stream it arrives on, which needs no initialize. The fast path shows the
// edge each line first (fastpath.Modern): a request whose _meta names a
// protocol version is checked here (the same checks as over HTTP, but
// for the headers, which stdio has none of), and a tools/call or
// resources/read of a tool or resource some plugin serves is served on the
// fast path. A retry whose state names another replica cannot be
// forwarded: the Manager tells the client to start again.

// Line implements fastpath.Modern.
func (e *Edge) Line(body []byte, fast bool) fastpath.ModernLine {
	if !bytes.Contains(body, []byte(sessions.MetaProtocolVersion)) {
		return fastpath.ModernLine{}
	}
	// The Serve below runs on a worker, after the stream's next read has
	// reused the bytes of this line.
	body = bytes.Clone(body)
	m, ok := readMessage(body)
	if !ok || !m.id.IsValid() || len(m.meta) == 0 {
		return fastpath.ModernLine{}
	}
	meta, jerr := decodeMeta(m.meta)
	if _, named := meta[sessions.MetaProtocolVersion]; jerr != nil || !named {
		return fastpath.ModernLine{} // not a request of 2026-07-28: the go-sdk's
	}
	if m.refused != nil {
		return fastpath.ModernLine{ID: m.id, Answer: m.refused}
	}
	rm, jerr := checkFields(meta)
	if jerr != nil {
		return fastpath.ModernLine{ID: m.id, Answer: encodeError(m.id, jerr)}
	}
	if m.method == "server/discover" {
		// The go-sdk's stdio session would take the probe's _meta as its
		// initialization, and refuse the initialize of a client that falls
		// back to 2025-11-25 (as the revision says a client may when the
		// answer is late): the go-sdk answers it in a session of its own.
		return fastpath.ModernLine{ID: m.id, Serve: func(ctx context.Context, _ func([]byte)) []byte {
			return e.discoverAside(ctx, m.id, body)
		}}
	}
	if m.method == "subscriptions/listen" {
		return fastpath.ModernLine{ID: m.id, Open: true, Serve: func(ctx context.Context, write func([]byte)) []byte {
			return e.listenLine(ctx, m, write)
		}}
	}
	if !fast || !m.plain || !(m.method == "tools/call" && e.core.HasTool(m.key) || m.method == "resources/read" && e.core.HasResource(m.key)) {
		return fastpath.ModernLine{} // the go-sdk's, through the middleware
	}
	return fastpath.ModernLine{ID: m.id, Serve: func(ctx context.Context, write func([]byte)) []byte {
		return e.serveLine(ctx, m, rm, write)
	}}
}

// serveLine serves a tools/call or resources/read over stdio on the fast
// path, and returns its answer as the go-sdk writes it.
func (e *Edge) serveLine(ctx context.Context, m *message, rm *reqMeta, write func([]byte)) []byte {
	fastServed.Add(1)
	meta := rm.meta
	c := &call{
		method: m.method,
		key:    m.key,
		params: m.params,
		retry:  m.state,
		rq:     core.Request{ID: sessions.IDString(m.id), Meta: meta, Version: Version, Capabilities: rm.caps},
		sink:   &streamSink{emit: func(b []byte) error { write(b); return nil }, level: rm.logLevel},
	}
	target := ""
	if m.method == "tools/call" {
		target = m.key
	}
	ctx, span := e.core.StartRequest(ctx, m.method, target, meta, nil, "", c.rq.ID)
	res, input, err := e.serve(ctx, c, func(ctx context.Context, rq core.Request) (mcp.Result, error) {
		if m.method == "tools/call" {
			return e.core.CallTool(ctx, rq, m.key, m.args)
		}
		return e.core.ReadResource(ctx, rq, m.key)
	})
	e.core.EndRequest(span, m.method, res, err)
	var b []byte
	switch {
	case err != nil:
		return encodeError(m.id, rpcError(err))
	case input != nil:
		b, err = e.encodeInput(m.id, input)
	default:
		b, err = e.encodeResult(m.id, res)
	}
	if err != nil {
		return encodeError(m.id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("encoding the result of %s: %v", m.method, err)})
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
		return encodeError(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
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
		return encodeError(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server/discover: HTTP %d %s", w.Code, bytes.TrimSpace(w.Body.Bytes()))})
	}
	return out
}
