package stateless

import (
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// The answer to almost every 2026-07-28 tools/call is a tool result of
// plain text blocks. encodeResult's general way, a reflective json.Marshal
// of the result with a fresh _meta map for serverInfo, then of the
// JSON-RPC response around it, cost about a tenth of a stdio call's CPU;
// appendPlainAnswer writes such an answer directly, byte for byte as the
// general way does (TestPlainAnswerAsMarshalled), and declines anything
// else.

// plainMeta is the _meta of a result that has none of its own, as
// encodeResult writes it: {"io.modelcontextprotocol/serverInfo": info}.
func (e *calls) plainMeta() []byte {
	e.metaOnce.Do(func() {
		b, err := wire.MarshalPlain(e.withServerInfo(nil))
		if err == nil {
			e.metaJSON = b
		}
	})
	return e.metaJSON
}

// appendPlainAnswer appends to b the answer to the request id whose
// result is r, as encodeResult writes it, and reports true; or reports
// false, and appends nothing, for a result other than plain text blocks
// that need no escaping, without _meta, or an id other than a number or
// such a string.
func (e *calls) appendPlainAnswer(b []byte, id jsonrpc.ID, r *mcp.CallToolResult) ([]byte, bool) {
	meta := e.plainMeta()
	if meta == nil || !wire.TextOnly(r) {
		return b, false
	}
	n := 128 + len(meta)
	for _, c := range r.Content {
		t := c.(*mcp.TextContent).Text
		if !wire.Unescaped(t) {
			return b, false
		}
		n += 32 + len(t)
	}
	b = slices.Grow(b, n) // one allocation, once the answer is known to be plain
	start := len(b)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch v := id.Raw().(type) {
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case string:
		if !wire.Unescaped(v) {
			return b[:start], false
		}
		b = append(append(append(b, '"'), v...), '"')
	default:
		return b[:start], false
	}
	b = append(b, `,"result":{"_meta":`...)
	b = append(b, meta...)
	b = append(b, `,"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":"`...)
		b = append(b, c.(*mcp.TextContent).Text...)
		b = append(b, `"}`...)
	}
	b = append(b, ']')
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, `,"resultType":"complete"}}`...), true
}
