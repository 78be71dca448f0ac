package testutil

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// PostMCP sends one JSON-RPC message to the Streamable HTTP endpoint url,
// as a client speaking MCP by hand does (to stop reading, vanish, or delete
// its session mid-call), and returns the response unread. sid is the
// session, "" before initialize; a nil id makes the message a
// notification.
func PostMCP(ctx context.Context, hc *http.Client, url, sid, method string, params, id any) (*http.Response, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if id != nil {
		msg["id"] = id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return hc.Do(req)
}

// ReadMCPAnswer reads the response to a request posted with PostMCP: the
// notifications on its event stream, then the JSON-RPC answer (or a plain
// JSON answer). It fails if the stream ends without an answer. seen, if
// not nil, is handed each notification as it arrives.
func ReadMCPAnswer(resp *http.Response, seen func(map[string]any)) (answer map[string]any, notes []map[string]any, err error) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			data = line
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			return nil, notes, err
		}
		if _, ok := m["method"]; !ok {
			return m, notes, nil
		}
		notes = append(notes, m)
		if seen != nil {
			seen(m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, notes, fmt.Errorf("status %d, stream broken: %w", resp.StatusCode, err)
	}
	return nil, notes, fmt.Errorf("status %d, stream ended without an answer", resp.StatusCode)
}
