package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The tests of MCP 2026-07-28 at the server level: raw HTTP (and stdio)
// requests of that version, answered with no session.

// modernMeta is the _meta of a 2026-07-28 request of a client with caps.
func modernMeta(caps map[string]any) map[string]any {
	if caps == nil {
		caps = map[string]any{}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// modern speaks 2026-07-28 over HTTP by hand.
type modern struct {
	t   *testing.T
	url string
	hc  *http.Client
}

func newModern(t *testing.T, url string) *modern {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &modern{t: t, url: url, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// reply is an HTTP answer: its status, content type, and its JSON-RPC
// messages (every event of a stream, or the JSON body).
type reply struct {
	status int
	header http.Header
	msgs   []map[string]any
	raw    string
}

// answer is the reply's JSON-RPC response (the last message).
func (r *reply) answer() map[string]any {
	if len(r.msgs) == 0 {
		return nil
	}
	return r.msgs[len(r.msgs)-1]
}

func (r *reply) result() map[string]any {
	res, _ := r.answer()["result"].(map[string]any)
	return res
}

func (r *reply) errorCode() int {
	e, _ := r.answer()["error"].(map[string]any)
	if e == nil {
		return 0
	}
	return int(e["code"].(float64))
}

func (r *reply) String() string {
	return fmt.Sprintf("%d %s %s", r.status, r.header.Get("Content-Type"), r.raw)
}

// request builds a 2026-07-28 POST: params get the default _meta unless
// they have one; the headers mirror the body unless hdr overrides them
// ("" deletes one).
func (c *modern) request(id any, method string, params map[string]any, hdr map[string]string) *http.Request {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = modernMeta(nil)
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != nil {
		msg["id"] = id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest("POST", c.url, strings.NewReader(string(body)))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	switch method {
	case "tools/call", "prompts/get":
		req.Header.Set("Mcp-Name", fmt.Sprint(params["name"]))
	case "resources/read":
		req.Header.Set("Mcp-Name", fmt.Sprint(params["uri"]))
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

func (c *modern) do(req *http.Request) *reply {
	c.t.Helper()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	return readReply(c.t, resp)
}

func readReply(t *testing.T, resp *http.Response) *reply {
	t.Helper()
	r := &reply{status: resp.StatusCode, header: resp.Header}
	body, _ := io.ReadAll(resp.Body)
	r.raw = string(body)
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		sc := bufio.NewScanner(strings.NewReader(r.raw))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				r.msgs = append(r.msgs, m)
			}
		}
		return r
	}
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		r.msgs = []map[string]any{m}
	}
	return r
}

// post sends a request with default headers and returns the reply.
func (c *modern) post(id any, method string, params map[string]any) *reply {
	c.t.Helper()
	return c.do(c.request(id, method, params, nil))
}

func TestModernToolCallOverHTTP(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			s := newServer(t, &server.Options{DisableFastPath: !fast, Version: "1.2.3"}, server.Mount{Plugin: fixture(t)})
			c := newModern(t, serveHTTP(t, s, nil))
			before := server.FastServed()
			r := c.post(1, "tools/call", map[string]any{"name": "test_simple_text", "arguments": map[string]any{}})
			if r.status != 200 || r.result()["resultType"] != "complete" || r.header.Get("Mcp-Session-Id") != "" {
				t.Fatalf("tools/call: %s", r)
			}
			meta, _ := r.result()["_meta"].(map[string]any)
			if info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != "hangar" || info["version"] != "1.2.3" {
				t.Errorf("serverInfo: %s", r)
			}
			t.Log(r)
			_ = before
		})
	}
}

// TestModernAnswerInOneWrite: the fast path's answer to a 2026-07-28
// tools/call, the last event of its stream, is not flushed on its own: the
// server writes the response whole when the handler returns, with a
// Content-Length, instead of a chunk and then the last chunk.
func TestModernAnswerInOneWrite(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	c := newModern(t, serveHTTP(t, s, nil))
	for _, call := range []map[string]any{
		{"name": "test_simple_text", "arguments": map[string]any{}},
		{"name": "test_error_handling", "arguments": map[string]any{}}, // a tool error: a result too
	} {
		resp, err := c.hc.Do(c.request(1, "tools/call", call, nil))
		if err != nil {
			t.Fatal(err)
		}
		r := readReply(t, resp)
		resp.Body.Close()
		if r.status != 200 || r.result() == nil || r.header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%v: %s", call["name"], r)
		}
		if len(resp.TransferEncoding) > 0 || resp.ContentLength != int64(len(r.raw)) {
			t.Errorf("%v: transfer encoding %q, length %d for %d bytes: want the answer whole, with its length", call["name"], resp.TransferEncoding, resp.ContentLength, len(r.raw))
		}
	}
}

// mrtrPlugin loads internal/testplugins/mrtr, with two instances: one may
// be parked while the other serves.
func mrtrPlugin(t *testing.T) *plugin.Plugin {
	return loadPlugin(t, "mrtr", testutil.BuildPlugin(t, "./internal/testplugins/mrtr"), config.Limits{MaxInstances: 2})
}

func TestModernElicitationRoundTripOverHTTP(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			s := newServer(t, &server.Options{DisableFastPath: !fast}, server.Mount{Plugin: mrtrPlugin(t)})
			c := newModern(t, serveHTTP(t, s, nil))
			meta := modernMeta(map[string]any{"elicitation": map[string]any{}})
			r := c.post(1, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta})
			res := r.result()
			if r.status != 200 || res["resultType"] != "input_required" || res["requestState"] == nil {
				t.Fatalf("first round: %s", r)
			}
			t.Log(r)
			reqs := res["inputRequests"].(map[string]any)
			if len(reqs) != 1 || reqs["elicitation-1"] == nil {
				t.Fatalf("inputRequests: %v", reqs)
			}
			r = c.post(2, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta,
				"requestState":   res["requestState"],
				"inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
			})
			t.Log(r)
			if r.result()["resultType"] != "complete" || !strings.Contains(r.raw, `Ada`) {
				t.Fatalf("retry: %s", r)
			}
		})
	}
}
