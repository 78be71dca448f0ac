package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// TestModernStdioCallsKeepTheirLines: 2026-07-28 calls sent over stdio
// one after another, without waiting for answers, each get the answer to
// their own arguments. The fast path serves them on workers, while the
// stream's next reads reuse the bytes the lines were read into; a plugin
// of one instance makes the later calls read their arguments late.
func TestModernStdioCallsKeepTheirLines(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	io := newRawIO(t, s)
	const n = 40
	for i := range n {
		io.write(mustJSON(map[string]any{"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": modernParams("structured", map[string]any{"a": 1000 * i, "b": i}, modernMeta(nil))}))
	}
	timeout := time.After(time.Minute)
	for got := 0; got < n; {
		select {
		case line, ok := <-io.lines:
			if !ok {
				t.Fatalf("the stream ended after %d answers", got)
			}
			var m struct {
				ID     int
				Result struct {
					StructuredContent struct{ Sum int }
				}
				Error any
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.ID == 0 {
				continue // a notification
			}
			got++
			i := m.ID - 100
			if want := 1001 * i; m.Error != nil || m.Result.StructuredContent.Sum != want {
				t.Errorf("call %d: %s; want the sum %d", m.ID, line, want)
			}
		case <-timeout:
			t.Fatalf("%s answers of %d", fmt.Sprint(got), n)
		}
	}
}

// TestModernIDsComeBackAsSent: a 2026-07-28 request whose id the go-sdk's
// reader would not keep exactly (a fraction, an integer beyond 2^53) is
// refused with that id as it came, over HTTP and stdio, on both paths;
// nothing reaches the plugin (issue 15.17 at the 2026 edge).
func TestModernIDsComeBackAsSent(t *testing.T) {
	ids := []string{"1.5", "9007199254740993", "123456789012345678901234567890", "1e400"}
	for _, fast := range []bool{true, false} {
		m := metrics.New("test")
		s := newServer(t, &server.Options{DisableFastPath: !fast, Metrics: m}, server.Mount{Plugin: fixture(t)})
		c := newModern(t, serveHTTP(t, s, nil))
		io := newRawIO(t, s)
		for _, id := range ids {
			r := c.post(json.Number(id), "tools/call", modernParams("test_simple_text", map[string]any{}, nil))
			if r.status != 400 || !strings.Contains(r.raw, `"id":`+id+`,`) || !strings.Contains(r.raw, `"code":-32600`) {
				t.Errorf("fast=%v, HTTP, id %s: %s", fast, id, r)
			}
			io.write(mustJSON(map[string]any{"jsonrpc": "2.0", "id": json.Number(id), "method": "tools/call", "params": modernParams("test_simple_text", map[string]any{}, modernMeta(nil))}))
			select {
			case line := <-io.lines:
				if !strings.Contains(line, `"id":`+id+`,`) || !strings.Contains(line, `"code":-32600`) {
					t.Errorf("fast=%v, stdio, id %s: %s", fast, id, line)
				}
			case <-time.After(time.Minute):
				t.Fatalf("fast=%v, stdio, id %s: no answer", fast, id)
			}
		}
		if n := pluginCalls(t, m); n != 0 {
			t.Errorf("fast=%v: %v calls reached the plugin", fast, n)
		}
		if r := c.post(json.Number("9007199254740992"), "tools/call", modernParams("test_simple_text", map[string]any{}, nil)); r.status != 200 || !strings.Contains(r.raw, `"id":9007199254740992,`) {
			t.Errorf("fast=%v: 2^53: %s", fast, r)
		}
	}
}

// TestModernListenBounded: a subscriptions/listen may deliver the updates
// of as many resources as a session may subscribe to, no more (issue 15.4
// at the 2026 edge); the same URI named twice counts once.
func TestModernListenBounded(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	c := newModern(t, serveHTTP(t, s, nil))
	uris := func(n int) []string {
		var u []string
		for i := range n {
			u = append(u, fmt.Sprintf("v1full://extra/%d", i))
		}
		return u
	}
	r := c.post(1, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris(wire.MaxSubscriptions + 1)}})
	if r.errorCode() != -32602 || !strings.Contains(r.raw, fmt.Sprintf("at most %d", wire.MaxSubscriptions)) {
		t.Errorf("a listen to %d resources: %s", wire.MaxSubscriptions+1, r)
	}
	twice := append(uris(wire.MaxSubscriptions), uris(10)...)
	ch, stop := c.listen("sub-2", map[string]any{"resourceSubscriptions": twice})
	if ack := next(t, ch, "acknowledgment"); ack["method"] != "notifications/subscriptions/acknowledged" {
		t.Errorf("a listen to %d resources, some twice: %v", wire.MaxSubscriptions, ack)
	}
	stop()
}

// TestStdioLineIsAMessage: over stdio a line is a message (MCP's stdio
// transport). A line holding a truncated object, of a session of
// 2025-11-25 or a request of 2026-07-28, is answered with -32700 under a
// null id at once, before the next line is sent, and the next line is
// served; on both paths (issue 24, finding 8: the reader waited for the
// rest of the object, up to 16 MiB, and left every later request
// unanswered).
func TestStdioLineIsAMessage(t *testing.T) {
	for _, disable := range []bool{false, true} {
		s := newServer(t, &server.Options{DisableFastPath: disable}, server.Mount{Plugin: v1full(t, config.Limits{})})
		c := newRawIO(t, s)
		c.start("2025-11-25")
		next := func(what string) string {
			t.Helper()
			select {
			case line, ok := <-c.lines:
				if !ok {
					t.Fatalf("fast path disabled %v: the stream ended, waiting for %s", disable, what)
				}
				return line
			case <-time.After(10 * time.Second):
				t.Fatalf("fast path disabled %v: no %s within 10s", disable, what)
			}
			return ""
		}
		modern := mustJSON(map[string]any{"jsonrpc": "2.0", "id": 31, "method": "tools/call", "params": modernParams("structured", map[string]any{"a": 1, "b": 2}, modernMeta(nil))})
		for _, tc := range []struct{ truncated, whole, id string }{
			{`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, `{"jsonrpc":"2.0","id":21,"method":"tools/list"}`, `21`},
			{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"structured","arguments":{"a":"`, call(22, "structured", `{"a":1,"b":2}`), `22`},
			{modern[:len(modern)-2], modern, `31`},
			{`[{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":23,"method":"tools/list"}`, `23`},
		} {
			c.write(tc.truncated)
			line := next("answer to " + tc.truncated)
			var refused struct {
				ID    json.RawMessage
				Error struct{ Code int }
			}
			if err := json.Unmarshal([]byte(line), &refused); err != nil || string(refused.ID) != "null" || refused.Error.Code != -32700 {
				t.Errorf("fast path disabled %v: %s answered %s; want -32700 under a null id", disable, tc.truncated, line)
			}
			c.write(tc.whole)
			for {
				line := next("answer to " + tc.whole)
				var m struct {
					ID     json.RawMessage
					Result json.RawMessage
					Error  any
				}
				if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil {
					continue // a notification
				}
				if string(m.ID) != tc.id || m.Result == nil || m.Error != nil {
					t.Errorf("fast path disabled %v: %s answered %s; want its result", disable, tc.whole, line)
				}
				break
			}
		}
	}
}
