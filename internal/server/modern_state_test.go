package server_test

import (
	"encoding/base64"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// askParams are the params of a tools/call of the mrtr plugin's ask, with
// a state and answers if given.
func askParams(state any, answers map[string]any) map[string]any {
	p := map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": modernMeta(map[string]any{"elicitation": map[string]any{}})}
	if state != nil {
		p["requestState"] = state
	}
	if answers != nil {
		p["inputResponses"] = answers
	}
	return p
}

func accept(name string) map[string]any {
	return map[string]any{"action": "accept", "content": map[string]any{"name": name}}
}

// TestModernRetries: the answers of a retry are checked against what the
// call asked for. An answer of the wrong type is refused and leaves the
// call parked, its state good; a retry without the answer gets the same
// input requests and state again; answers to keys never asked are
// ignored; a state is used once.
func TestModernRetries(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			s := newServer(t, &server.Options{DisableFastPath: !fast}, server.Mount{Plugin: mrtrPlugin(t)})
			c := newModern(t, serveHTTP(t, s, nil))
			first := c.post(1, "tools/call", askParams(nil, nil)).result()
			state := first["requestState"]

			wrong := c.post(2, "tools/call", askParams(state, map[string]any{"elicitation-1": map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "x"}}}))
			if wrong.status != 400 || wrong.errorCode() != -32602 || !strings.Contains(wrong.raw, "expected an ElicitResult") {
				t.Errorf("an answer of the wrong type: %s", wrong)
			}
			invalid := c.post(3, "tools/call", askParams(state, map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": ""}}}))
			if invalid.status != 400 || invalid.errorCode() != -32602 || !strings.Contains(invalid.raw, "requested schema") {
				t.Errorf("an answer that does not match the requested schema: %s", invalid)
			}
			again := c.post(4, "tools/call", askParams(state, map[string]any{"elicitation-9": accept("x")})).result()
			if again["resultType"] != "input_required" || again["requestState"] != state || again["inputRequests"].(map[string]any)["elicitation-1"] == nil {
				t.Errorf("a retry without the answer: %v", again)
			}
			done := c.post(5, "tools/call", askParams(state, map[string]any{"elicitation-1": accept("Ada"), "elicitation-9": accept("x")}))
			if done.result()["resultType"] != "complete" || !strings.Contains(done.raw, `Ada`) {
				t.Errorf("the corrected retry, with an answer never asked for: %s", done)
			}
			replay := c.post(6, "tools/call", askParams(state, map[string]any{"elicitation-1": accept("Eve")}))
			if replay.status != 400 || replay.errorCode() != -32602 || !strings.Contains(replay.raw, "already used") {
				t.Errorf("a replayed state: %s", replay)
			}
			other := c.post(7, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"message": "other"}, "_meta": modernMeta(map[string]any{"elicitation": map[string]any{}}), "requestState": c.post(8, "tools/call", askParams(nil, nil)).result()["requestState"], "inputResponses": map[string]any{"elicitation-1": accept("x")}})
			if other.status != 400 || other.errorCode() != -32602 || !strings.Contains(other.raw, "issued for another request") {
				t.Errorf("a state presented for another request: %s", other)
			}
		})
	}
}

// TestModernRetryAfterExpiry: a state presented after the park timeout is
// refused, and its call was cancelled (its instance is free again).
func TestModernRetryAfterExpiry(t *testing.T) {
	p := mrtrPlugin(t)
	s := newServer(t, &server.Options{ParkTimeout: 300 * time.Millisecond}, server.Mount{Plugin: p})
	c := newModern(t, serveHTTP(t, s, nil))
	state := c.post(1, "tools/call", askParams(nil, nil)).result()["requestState"]
	waitIdle(t, p, 10*time.Second) // the park timeout cancelled the call
	r := c.post(2, "tools/call", askParams(state, map[string]any{"elicitation-1": accept("Ada")}))
	if r.status != 400 || r.errorCode() != -32602 || !strings.Contains(r.raw, "expired") {
		t.Errorf("a retry after expiry: %s", r)
	}
}

// TestModernIgnoresSessions: a 2026-07-28 request is served without a
// session whatever it carries (Mcp-Session-Id of a live session,
// Last-Event-ID); GET and DELETE are refused with 405; the session goes on.
func TestModernIgnoresSessions(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	url := serveHTTP(t, s, nil)
	legacy := newRawClient(t, url)
	if code, body := legacy.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	c := newModern(t, url)
	r := c.do(c.request(1, "tools/call", modernParams("test_simple_text", map[string]any{}, nil), map[string]string{"Mcp-Session-Id": legacy.sid, "Last-Event-ID": "x_1"}))
	if r.status != 200 || r.result()["resultType"] != "complete" || r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a request with Mcp-Session-Id and Last-Event-ID: %s %v", r, r.header)
	}
	for _, method := range []string{"GET", "DELETE"} {
		req, _ := http.NewRequest(method, url, nil)
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Session-Id", legacy.sid)
		req.Header.Set("Accept", "text/event-stream")
		r := c.do(req)
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
			t.Errorf("%s: %s", method, r)
		}
	}
	if res, err := legacy.call(t.Context(), "tools/call", map[string]any{"name": "test_simple_text", "arguments": map[string]any{}}); err != nil || res["result"] == nil {
		t.Errorf("the session after: %v %v", res, err)
	}

	batch := c.request(2, "tools/list", nil, nil)
	batch.Body = http.NoBody
	req, _ := http.NewRequest("POST", url, strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}]`))
	req.Header = batch.Header
	if r := c.do(req); r.status != 400 || r.errorCode() != -32600 || !strings.Contains(r.raw, "batches") {
		t.Errorf("a batch: %s", r)
	}
	for method, status := range map[string]int{"notifications/cancelled": 202, "notifications/roots/list_changed": 400} {
		req := c.request(nil, method, map[string]any{"requestId": 1}, nil)
		if r := c.do(req); r.status != status {
			t.Errorf("%s: %s", method, r)
		}
	}
}

// TestModernParamHeaders: the Mcp-Param headers of a tool's x-mcp-header
// parameters, plain or Base64, compared to the body as the revision says;
// tools whose annotations are invalid are not offered, at any version.
func TestModernParamHeaders(t *testing.T) {
	var logs testutil.SyncBuffer
	xh := loadPlugin(t, "xheader", testutil.BuildPlugin(t, "./internal/testplugins/xheader"), config.Limits{})
	s, err := server.New(t.Context(), []server.Mount{{Plugin: xh}}, &server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := newModern(t, serveHTTP(t, s, nil))
	args := map[string]any{"query": "SELECT 1", "region": "Hello, 世界", "shard": 3, "dry": true, "opts": map[string]any{"zone": " padded "}}
	r := c.do(c.request(1, "tools/call", modernParams("route", args, nil), map[string]string{
		"Mcp-Param-Region":  "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"Mcp-Param-Shard":   "3.0",
		"Mcp-Param-Dry-Run": "true",
		"Mcp-Param-Zone":    "=?base64?IHBhZGRlZCA=?=",
	}))
	if r.status != 200 || r.result()["resultType"] != "complete" {
		t.Errorf("a call with its headers: %s", r)
	}
	r = c.do(c.request(2, "tools/call", modernParams("route", map[string]any{"query": "q", "dry": nil}, nil), nil))
	if r.status != 200 {
		t.Errorf("a call with a null parameter and no header: %s", r)
	}
	r = c.do(c.request(3, "tools/call", modernParams("route", map[string]any{"query": "q", "shard": 3}, nil), map[string]string{"Mcp-Param-Shard": "3.5"}))
	if r.status != 400 || r.errorCode() != -32020 {
		t.Errorf("an integer header of another value: %s", r)
	}

	tools := c.post(4, "tools/list", nil).result()["tools"].([]any)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "plain,route" {
		t.Errorf("tools offered: %v", names)
	}
	for _, bad := range []string{"bad_number", "bad_items", "bad_anyof", "bad_dup", "bad_name"} {
		if !strings.Contains(logs.String(), bad) {
			t.Errorf("no log of why %s was refused", bad)
		}
	}
	if !strings.Contains(logs.String(), "x-mcp-header") {
		t.Errorf("the log does not say why: %s", logs.String())
	}
	// Nor in sessions.
	res, err := connect(t, s, nil).ListTools(t.Context(), nil)
	if err != nil || len(res.Tools) != 2 {
		t.Errorf("tools offered in a session: %v %v", res, err)
	}
}

// TestModernErrorAfterEvents: an error answered after the request's stream
// has carried events (here the retry's log and progress, then a second
// question the retry's client cannot take) is one more event, on both
// paths alike, not a second status and bare JSON.
func TestModernErrorAfterEvents(t *testing.T) {
	var raws []string
	for _, fast := range []bool{true, false} {
		s := newServer(t, &server.Options{DisableFastPath: !fast}, server.Mount{Plugin: mrtrPlugin(t)})
		c := newModern(t, serveHTTP(t, s, nil))
		elicit := modernMeta(map[string]any{"elicitation": map[string]any{}})
		elicit["progressToken"] = "p0"
		first := c.post(1, "tools/call", map[string]any{"name": "ask_twice", "arguments": map[string]any{}, "_meta": elicit}).result()
		meta := modernMeta(nil) // the retry's client declares no elicitation
		meta["io.modelcontextprotocol/logLevel"] = "info"
		meta["progressToken"] = "p"
		r := c.post(2, "tools/call", map[string]any{"name": "ask_twice", "arguments": map[string]any{}, "_meta": meta,
			"requestState": first["requestState"], "inputResponses": map[string]any{"elicitation-1": accept("Ada")}})
		if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || len(r.msgs) != 3 || r.errorCode() != -32021 {
			t.Errorf("fast=%v: %s", fast, r)
		}
		raws = append(raws, requestStateRE.ReplaceAllString(r.raw, ""))
	}
	if len(raws) == 2 && (!strings.Contains(raws[0], "after first") || !strings.Contains(raws[0], `"progressToken":"p"`)) {
		t.Errorf("no log message or progress with the retry's token: %s", raws[0])
	}
}

// TestModernBase64Name: an Mcp-Name in the Base64 sentinel is decoded
// before it is compared, on both paths.
func TestModernBase64Name(t *testing.T) {
	for _, fast := range []bool{true, false} {
		s := newServer(t, &server.Options{DisableFastPath: !fast}, server.Mount{Plugin: fixture(t)})
		c := newModern(t, serveHTTP(t, s, nil))
		for _, tc := range []struct{ method, name string }{{"tools/call", "test_simple_text"}, {"prompts/get", "test_simple_prompt"}, {"resources/read", "test://static-text"}} {
			params := map[string]any{"name": tc.name}
			if tc.method == "resources/read" {
				params = map[string]any{"uri": tc.name}
			}
			r := c.do(c.request(1, tc.method, params, map[string]string{"Mcp-Name": "=?base64?" + base64.StdEncoding.EncodeToString([]byte(tc.name)) + "?="}))
			if r.status != 200 || r.result()["resultType"] != "complete" {
				t.Errorf("fast=%v %s: %s", fast, tc.method, r)
			}
		}
	}
}

// TestModernRetryAfterReload: a retry is admitted as a request is: once a
// reload has taken the tool away, the retry is refused as for an unknown
// tool, and its parked call is left to its park timeout.
func TestModernRetryAfterReload(t *testing.T) {
	for _, fast := range []bool{true, false} {
		p, other := mrtrPlugin(t), fixture(t)
		s := newServer(t, &server.Options{DisableFastPath: !fast, ParkTimeout: 5 * time.Second}, server.Mount{Plugin: p})
		c := newModern(t, serveHTTP(t, s, nil))
		state := c.post(1, "tools/call", askParams(nil, nil)).result()["requestState"]
		if err := s.Reload(t.Context(), []server.Mount{{Plugin: other}}); err != nil {
			t.Fatal(err)
		}
		r := c.post(2, "tools/call", askParams(state, map[string]any{"elicitation-1": accept("Ada")}))
		if r.status != 400 || r.errorCode() != -32602 || !strings.Contains(r.raw, `unknown tool \"ask\"`) {
			t.Errorf("fast=%v: a retry after the tool went: %s", fast, r)
		}
		waitIdle(t, p, 20*time.Second)
	}
}
