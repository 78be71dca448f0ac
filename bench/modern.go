package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernVersion is the MCP revision of the stateless cells: no initialize,
// no session, every request carrying its version and the client's
// capabilities in params._meta (docs/mcp-2026.md).
const modernVersion = "2026-07-28"

// statelessSuffix ends the key of a target that calls a server of another
// target (the key without it) at modernVersion.
const statelessSuffix = "-2026"

// modernMeta is the _meta of every request of the stateless cells, over
// either transport: what a 2026-07-28 client that declares no capability
// sends (docs/mcp-2026.md).
func modernMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modernVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "hangar-bench", "version": "1"},
	}
}

// stateless reports whether t is a 2026-07-28 target.
func (t target) stateless() bool { return strings.HasSuffix(t.Key, statelessSuffix) }

// server is the target whose server t calls: t itself, or for a stateless
// target the target of the same plugin at 2025-11-25, so that both are
// measured against the same process.
func (t target) server() target {
	if !t.stateless() {
		return t
	}
	key := strings.TrimSuffix(t.Key, statelessSuffix)
	for _, x := range allTargets {
		if x.Key == key {
			return x
		}
	}
	panic("no server target for " + t.Key)
}

// modernCallers calls spec's tool at modernVersion over Streamable HTTP at
// url: each caller POSTs tools/call requests with the revision's _meta and
// headers, without a session, over the keep-alive connections of
// httpClient, and checks every answer (spec.expect back, resultType
// "complete").
func modernCallers(url string, spec callSpec) func(i int) callFunc {
	return func(i int) callFunc {
		tool := spec.tool(i)
		// The body around the id, built once: the id is the only part
		// that changes from call to call.
		params, err := json.Marshal(map[string]any{
			"name":      tool,
			"arguments": spec.args,
			"_meta":     modernMeta(),
		})
		if err != nil {
			panic(err)
		}
		head := []byte(`{"jsonrpc":"2.0","id":`)
		tail := append([]byte(`,"method":"tools/call","params":`), params...)
		tail = append(tail, '}')
		header := http.Header{
			"Content-Type":         {"application/json"},
			"Accept":               {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {modernVersion},
			"Mcp-Method":           {"tools/call"},
			"Mcp-Name":             {tool},
		}
		var id int64
		body := make([]byte, 0, len(head)+len(tail)+20)
		return func(ctx context.Context) error {
			id++
			body = append(strconv.AppendInt(append(body[:0], head...), id, 10), tail...)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header = header // this caller's own, which no request changes
			resp, err := httpClient.Do(req)
			if err != nil {
				return err
			}
			// Read to the end, so that the connection is kept.
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return fmt.Errorf("reading the answer: %w", err)
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(raw))
			}
			return checkModernAnswer(resp.Header.Get("Content-Type"), raw, id, spec.expect)
		}
	}
}

// modernLineCallers calls spec's tool at modernVersion over stdio: each
// caller sends tools/call requests with the revision's _meta on the stdio
// connection of a go-sdk client session (the one the 2025-11-25 cells of
// the same server use, C requests in flight on it). Hangar's stdio edge
// serves a line whose _meta names the protocol version without a session,
// whatever came before it on the stream (docs/mcp-2026.md), so the server
// does for each exactly what it does for a 2026-07-28 client's, which
// sends no initialize. Every answer is checked: spec.expect back, and the
// serverInfo that only the 2026-07-28 edge puts in a result's _meta (the
// go-sdk client of a 2025-11-25 session does not keep resultType).
func modernLineCallers(sessions []*mcp.ClientSession, spec callSpec) func(i int) callFunc {
	return func(i int) callFunc {
		cs := sessions[i%len(sessions)]
		params := &mcp.CallToolParams{Name: spec.tool(i), Arguments: spec.args, Meta: modernMeta()}
		return func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				return err
			}
			return checkModernResult(res, spec.expect)
		}
	}
}

// checkModernResult checks a result of modernLineCallers: one of
// 2026-07-28 (serverInfo in its _meta) that checkResult accepts.
func checkModernResult(res *mcp.CallToolResult, expect string) error {
	if _, ok := res.Meta["io.modelcontextprotocol/serverInfo"]; !ok {
		return fmt.Errorf("answered without serverInfo in _meta: not served at %s", modernVersion)
	}
	return checkResult(res, expect)
}

// modernAnswer is the part of a JSON-RPC response to tools/call that the
// check reads.
type modernAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool   `json:"isError"`
		ResultType string `json:"resultType"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// checkModernAnswer finds the response to the request id in an answer of
// the given content type (a JSON object, or an SSE stream of them) and
// checks it: a result, resultType "complete", not a tool error, and the
// text expect ("" accepts any text).
func checkModernAnswer(contentType string, raw []byte, id int64, expect string) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	var msgs [][]byte
	switch mt {
	case "application/json":
		msgs = [][]byte{raw}
	case "text/event-stream":
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		var data []byte
		for sc.Scan() {
			line := sc.Bytes()
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			} else if len(line) == 0 && len(data) > 0 {
				msgs, data = append(msgs, data), nil
			}
		}
		if len(data) > 0 {
			msgs = append(msgs, data)
		}
	default:
		return fmt.Errorf("answer of type %q: %.200s", contentType, raw)
	}
	want := strconv.FormatInt(id, 10)
	for _, m := range msgs {
		var a modernAnswer
		if err := json.Unmarshal(m, &a); err != nil {
			return fmt.Errorf("decoding the answer: %w: %.200s", err, m)
		}
		if string(a.ID) != want {
			continue // a notification, or another request's
		}
		switch {
		case a.Error != nil:
			return fmt.Errorf("JSON-RPC error %d: %s", a.Error.Code, a.Error.Message)
		case a.Result == nil:
			return fmt.Errorf("response without a result: %.200s", m)
		case a.Result.ResultType != "complete":
			return fmt.Errorf("resultType %q, want \"complete\"", a.Result.ResultType)
		}
		text := ""
		if len(a.Result.Content) > 0 && a.Result.Content[0].Type == "text" {
			text = a.Result.Content[0].Text
		}
		if a.Result.IsError {
			return fmt.Errorf("tool error: %s", text)
		}
		if expect != "" && text != expect {
			return fmt.Errorf("unexpected result %q", text)
		}
		return nil
	}
	return errors.New("no response to the request in the answer")
}
