package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// What the go-sdk would end a session on, or answer under another id, the
// fast path's screen answers itself (issue 15: 2, 14, 17), on both paths
// and both transports.

// errorOf returns the code of the JSON-RPC error answer in line, and its
// raw id; code 0 if line is not an error answer.
func errorOf(t *testing.T, line string) (code int64, id string) {
	t.Helper()
	var m struct {
		ID    json.RawMessage
		Error *struct{ Code int64 }
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.Error == nil {
		return 0, string(m.ID)
	}
	return m.Error.Code, string(m.ID)
}

// last is the last JSON-RPC message of a transcript: a line over stdio,
// an answer's body or the data of its last event over HTTP.
func last(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if _, data, ok := strings.Cut(l, "data: "); ok {
			l = data
		}
		if strings.HasPrefix(l, "{") || strings.HasPrefix(l, "[") {
			return l
		}
	}
	return ""
}

// TestStdioMalformedLines: each line the go-sdk would have ended the
// session on is answered with -32700 or -32600, and the session goes on.
func TestStdioMalformedLines(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":50,"method":"ping","params":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}}`
	cases := []struct {
		line, id string // id: of the answer, as JSON
		code     int64
	}{
		{`{}`, "null", -32600},
		{`5`, "null", -32600},
		{`[]`, "null", -32600},
		{`1e400`, "null", -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", -32600},
		{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, "1e400", -32600},
		{`{"jsonrpc":"2.0","id":3,"method":5}`, "3", -32600},
		{`{"jsonrpc":"1.0","id":4,"method":"ping"}`, "4", -32600},
		{deep, "null", -32600},
		{`not json`, "null", -32700},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"} trailing`, "null", -32700},
		{`"unterminated`, "null", -32700},
		{`{"jsonrpc":"2.0","id":6,"method":"ping"}   `, "6", 0}, // white space after the value: served
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, "", 0},
	}
	for _, disable := range []bool{false, true} {
		s := newServer(t, &server.Options{DisableFastPath: disable}, server.Mount{Plugin: v1full(t, config.Limits{})})
		c := newRawIO(t, s)
		c.start("2025-03-26")
		for i, tc := range cases {
			if tc.id != "" {
				got := last(c.exchange(tc.line, tc.id))
				if code, _ := errorOf(t, got); code != tc.code {
					t.Errorf("fast path disabled %v: %.60s: answered %.200s, want code %d", disable, tc.line, got, tc.code)
				}
			} else {
				c.send(tc.line)
			}
			// The session goes on.
			ping := `{"jsonrpc":"2.0","id":"ping-` + string(rune('a'+i)) + `","method":"ping"}`
			if got := last(c.exchange(ping, `"ping-`+string(rune('a'+i))+`"`)); !strings.Contains(got, `"result":{}`) {
				t.Fatalf("fast path disabled %v: after %.60s: ping answered %q", disable, tc.line, got)
			}
		}
		if got := last(c.exchange(call(60, "echo_context", `{}`), "60")); !strings.Contains(got, `"result"`) {
			t.Errorf("fast path disabled %v: a call after the malformed lines: %q", disable, got)
		}
	}
}

// TestIDsComeBackAsTheyCame: a request id the go-sdk would change (a
// fraction, an integer beyond 2^53) is refused under that very id, byte
// for byte; ids it keeps are served and come back as sent; a second
// initialize is an invalid request (-32600), not code 0.
func TestIDsComeBackAsTheyCame(t *testing.T) {
	refused := []string{`123456789012345678901234567890`, `1.5`, `9007199254740993`, `-9007199254740993`, `1e300`}
	kept := []string{`9007199254740992`, `-7`, `"s-1"`, `0`}
	for _, disable := range []bool{false, true} {
		s := newServer(t, &server.Options{DisableFastPath: disable}, server.Mount{Plugin: v1full(t, config.Limits{})})
		transports := map[string]transcriber{
			"stdio": newRawIO(t, s),
			"http":  &rawHTTP{t: t, url: serveHTTP(t, s, nil), hc: &http.Client{Transport: &http.Transport{}}},
		}
		for name, c := range transports {
			c.start("2025-06-18")
			for _, id := range refused {
				got := last(c.exchange(call(json.RawMessage(id), "echo_context", `{}`), id))
				if code, gotID := errorOf(t, got); code != -32600 || gotID != id {
					t.Errorf("fast path disabled %v, %s: id %s answered %q, want -32600 under the same id", disable, name, id, got)
				}
			}
			for _, id := range kept {
				got := last(c.exchange(call(json.RawMessage(id), "echo_context", `{}`), id))
				if !strings.Contains(got, `"id":`+id+`,"result"`) {
					t.Errorf("fast path disabled %v, %s: id %s answered %q", disable, name, id, got)
				}
			}
			got := last(c.exchange(initialize("2025-06-18"), "1"))
			if code, _ := errorOf(t, got); code != -32600 {
				t.Errorf("fast path disabled %v, %s: a second initialize answered %q, want code -32600", disable, name, got)
			}
		}
	}
}

// TestBatches: initialize is refused in a batch, in a POST that would open
// a session and over stdio; a batch is refused in a session of a version
// without batches, whatever the request's Mcp-Protocol-Version; batches of
// 2025-03-26 sessions are served.
func TestBatches(t *testing.T) {
	openBatch := `[` + initialize("2025-03-26") + `,{"jsonrpc":"2.0","method":"notifications/initialized"},` + call(2, "echo_context", `{}`) + `]`
	for _, disable := range []bool{false, true} {
		s := newServer(t, &server.Options{DisableFastPath: disable}, server.Mount{Plugin: v1full(t, config.Limits{})})
		url := serveHTTP(t, s, nil)

		// One POST that would open a session and call a tool.
		c := &rawHTTP{t: t, url: url, hc: &http.Client{Transport: &http.Transport{}}}
		resp, err := c.do("POST", openBatch, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("fast path disabled %v: a batch with initialize: HTTP %d, session %q; want 400 and none", disable, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
		}

		// A 2025-06-18 session that leaves out Mcp-Protocol-Version (the
		// go-sdk then checks 2025-03-26's rules).
		c = &rawHTTP{t: t, url: url, hc: &http.Client{Transport: &http.Transport{}}}
		c.start("2025-06-18")
		c.version = ""
		got := c.exchange(`[`+call(3, "echo_context", `{}`)+`]`, "batch")
		if !strings.HasPrefix(got[0], "400 ") || !strings.Contains(last(got), `"code":-32600`) {
			t.Errorf("fast path disabled %v: a batch in a 2025-06-18 session: %q", disable, got)
		}

		// A 2025-03-26 session: batches are served, initialize is not.
		c = &rawHTTP{t: t, url: url, hc: &http.Client{Transport: &http.Transport{}}}
		c.start("2025-03-26")
		got = c.exchange(`[`+call(4, "echo_context", `{}`)+`,`+call(5, "echo_context", `{}`)+`]`, "batch")
		if strings.Count(strings.Join(got, "\n"), `"result"`) != 2 {
			t.Errorf("fast path disabled %v: a batch of two calls at 2025-03-26: %q", disable, got)
		}
		got = c.exchange(`[`+initialize("2025-03-26")+`]`, "batch")
		if !strings.HasPrefix(got[0], "400 ") || !strings.Contains(last(got), "initialize must not be part") {
			t.Errorf("fast path disabled %v: initialize in a batch at 2025-03-26: %q", disable, got)
		}

		// Over stdio, the same.
		io := newRawIO(t, s)
		io.start("2025-03-26")
		if got := last(io.exchange(`[`+initialize("2025-03-26")+`]`, "null")); !strings.Contains(got, "initialize must not be part") {
			t.Errorf("fast path disabled %v: stdio: initialize in a batch: %q", disable, got)
		}
		if got := io.exchange(`[`+call(6, "echo_context", `{}`)+`,`+call(7, "echo_context", `{}`)+`]`, "batch"); strings.Count(strings.Join(got, "\n"), `"result"`) != 2 {
			t.Errorf("fast path disabled %v: stdio: a batch of two calls at 2025-03-26: %q", disable, got)
		}
		if got := last(io.exchange(`[`+call(8, "echo_context", `{}`)+`,{"jsonrpc":"2.0","method":"notifications/initialized"}]`, "null")); !strings.Contains(got, `"code":-32600`) {
			t.Errorf("fast path disabled %v: stdio: a batch of a call and a notification: %q", disable, got)
		}
		if got := last(io.exchange(call(9, "echo_context", `{}`), "9")); !strings.Contains(got, `"result"`) {
			t.Errorf("fast path disabled %v: stdio: a call after the refused batches: %q", disable, got)
		}
	}
}

// TestServerRequestIDsUnpredictable: the server requests of the fast
// path's calls (sampling here) are numbered from a random start in each
// session, below 2^53, instead of from 1,000,000,001 in every session
// (issue 15.8).
func TestServerRequestIDsUnpredictable(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: loadPlugin(t, "conf", testutil.BuildPlugin(t, "./examples/conformance"), config.Limits{})})
	url := serveHTTP(t, s, nil)
	seen := map[string]bool{}
	for i := range 3 {
		c := &rawHTTP{t: t, url: url, hc: &http.Client{Transport: &http.Transport{}}}
		c.start("2025-06-18")
		before := server.FastServed()
		got := c.exchange(call(2, "test_sampling", `{"prompt":"who?"}`), "2")
		if server.FastServed() == before || !strings.Contains(last(got), `"result"`) {
			t.Fatalf("session %d: the fast path did not serve the call: %q", i, got)
		}
		if len(c.requests) != 1 {
			t.Fatalf("session %d: %d server requests, want 1: %q", i, len(c.requests), got)
		}
		for id := range c.requests {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil || n == 1_000_000_001 || n < 1<<32 || n > 1<<53 || seen[id] {
				t.Errorf("session %d: server request id %s (seen in another session: %v)", i, id, seen[id])
			}
			seen[id] = true
		}
	}
}
