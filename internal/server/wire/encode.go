package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/rawjson"
)

// IDString is a JSON-RPC id as plugins see it.
func IDString(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	default:
		return fmt.Sprint(v)
	}
}

// ParseID reads a request's or response's id, v (its JSON), as the go-sdk
// would: an
// integer that a float64 holds exactly, or a string without escapes. It
// reports false for other ids, which only the go-sdk's reader reads.
func ParseID(v []byte) (jsonrpc.ID, bool) {
	if s, ok := rawjson.String(v); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	if bytes.ContainsAny(v, ".eE") {
		return jsonrpc.ID{}, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}

// EncodeError encodes the error answer to the request id, as the go-sdk
// does.
func EncodeError(id jsonrpc.ID, err error) []byte {
	b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: err})
	return b
}

// EncodeNotification encodes a notification as the go-sdk does.
func EncodeNotification(method string, params any) ([]byte, error) {
	raw, err := MarshalPlain(params)
	if err != nil {
		return nil, err
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Request{Method: method, Params: raw})
}

// MarshalPlain marshals v without HTML escaping, as the go-sdk marshals
// messages.
func MarshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// TextOnly reports whether r is a tool result of text blocks and nothing
// else that its JSON would carry: no _meta on it or on a block, no
// annotations, no structured content, input requests or request state.
// The edges write such a result directly, without json.Marshal.
func TextOnly(r *mcp.CallToolResult) bool {
	if len(r.Meta) != 0 || r.StructuredContent != nil || r.InputRequests != nil || r.RequestState != "" || r.NeedsInput() {
		return false
	}
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); !ok || t == nil || len(t.Meta) != 0 || t.Annotations != nil {
			return false
		}
	}
	return true
}

// Unescaped reports whether encoding/json writes s between quotes as it
// is, with or without HTML escaping: printable ASCII but for the quote,
// the backslash and <, > and &.
func Unescaped(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// fastServed counts the calls the edges served in front of the go-sdk.
var fastServed atomic.Int64

// ServedFast counts one call an edge served in front of the go-sdk.
func ServedFast() { fastServed.Add(1) }

// FastServed returns how many calls the edges have served in front of the
// go-sdk in this process (for tests).
func FastServed() int64 { return fastServed.Load() }
