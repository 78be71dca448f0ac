package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/server"
	tu "github.com/hangar-mcp/hangar/internal/testutil"
)

// xheaderPlugin loads internal/testplugins/xheader.
func xheaderPlugin(t *testing.T) *server.Mount {
	return &server.Mount{Plugin: loadPlugin(t, "xheader", tu.BuildPlugin(t, "./internal/testplugins/xheader"), config.Limits{})}
}

// badCase is a bad 2026-07-28 request and the answer the revision names.
type badCase struct {
	name   string
	req    func(c *modern) *http.Request
	status int
	code   int    // JSON-RPC error code
	in     string // in the error's message (or, with data, its data)
}

func modernParams(name string, args map[string]any, meta map[string]any) map[string]any {
	p := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		p["_meta"] = meta
	}
	return p
}

// badCases are bad requests: none reaches a plugin, but the one for a
// capability the client did not declare (which the plugin asks for).
func badCases() []badCase {
	call := func(c *modern, meta map[string]any, hdr map[string]string) *http.Request {
		return c.request(9, "tools/call", modernParams("test_simple_text", map[string]any{}, meta), hdr)
	}
	metaWith := func(k string, v any) map[string]any {
		m := modernMeta(nil)
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	return []badCase{
		{"no _meta", func(c *modern) *http.Request {
			return c.request(9, "tools/call", map[string]any{"name": "test_simple_text", "_meta": nil}, nil)
		}, 400, -32602, "protocolVersion"},
		{"no protocol version in _meta", func(c *modern) *http.Request {
			return call(c, metaWith("io.modelcontextprotocol/protocolVersion", nil), nil)
		}, 400, -32602, "protocolVersion"},
		{"no client capabilities", func(c *modern) *http.Request {
			return call(c, metaWith("io.modelcontextprotocol/clientCapabilities", nil), nil)
		}, 400, -32602, "clientCapabilities"},
		{"client capabilities not an object", func(c *modern) *http.Request {
			return call(c, metaWith("io.modelcontextprotocol/clientCapabilities", "all"), nil)
		}, 400, -32602, "clientCapabilities"},
		{"client info not an object", func(c *modern) *http.Request {
			return call(c, metaWith("io.modelcontextprotocol/clientInfo", 5), nil)
		}, 400, -32602, "clientInfo"},
		{"unknown log level", func(c *modern) *http.Request {
			return call(c, metaWith("io.modelcontextprotocol/logLevel", "verbose"), nil)
		}, 400, -32602, "verbose"},
		{"unknown version", func(c *modern) *http.Request {
			return call(c, metaWith("io.modelcontextprotocol/protocolVersion", "2099-01-01"), map[string]string{"Mcp-Protocol-Version": "2099-01-01"})
		}, 400, -32022, `"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2099-01-01"`},
		{"a session's version in _meta", func(c *modern) *http.Request {
			return call(c, metaWith("io.modelcontextprotocol/protocolVersion", "2025-11-25"), map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
		}, 400, -32022, `"requested":"2025-11-25"`},
		{"no MCP-Protocol-Version header", func(c *modern) *http.Request {
			return call(c, nil, map[string]string{"Mcp-Protocol-Version": ""})
		}, 400, -32020, "MCP-Protocol-Version"},
		{"contradictory MCP-Protocol-Version header", func(c *modern) *http.Request {
			return call(c, nil, map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
		}, 400, -32020, "does not match"},
		{"no Mcp-Method header", func(c *modern) *http.Request { return call(c, nil, map[string]string{"Mcp-Method": ""}) }, 400, -32020, "Mcp-Method"},
		{"contradictory Mcp-Method header", func(c *modern) *http.Request {
			return call(c, nil, map[string]string{"Mcp-Method": "tools/list"})
		}, 400, -32020, "does not match"},
		{"no Mcp-Name header", func(c *modern) *http.Request { return call(c, nil, map[string]string{"Mcp-Name": ""}) }, 400, -32020, "Mcp-Name"},
		{"contradictory Mcp-Name header", func(c *modern) *http.Request {
			return call(c, nil, map[string]string{"Mcp-Name": "test_error_handling"})
		}, 400, -32020, "does not match"},
		{"Mcp-Name not Base64", func(c *modern) *http.Request {
			return call(c, nil, map[string]string{"Mcp-Name": "=?base64?!!!?=", "Mcp-Protocol-Version": "2026-07-28"})
		}, 400, -32020, "Base64"},
		{"x-mcp-header parameter without its header", func(c *modern) *http.Request {
			return c.request(9, "tools/call", modernParams("route", map[string]any{"query": "q", "region": "us-west1"}, nil), nil)
		}, 400, -32020, "Mcp-Param-Region"},
		{"x-mcp-header parameter with another value", func(c *modern) *http.Request {
			return c.request(9, "tools/call", modernParams("route", map[string]any{"query": "q", "region": "us-west1"}, nil), map[string]string{"Mcp-Param-Region": "eu-west1"})
		}, 400, -32020, "Mcp-Param-Region"},
		{"x-mcp-header header of an absent parameter", func(c *modern) *http.Request {
			return c.request(9, "tools/call", modernParams("route", map[string]any{"query": "q"}, nil), map[string]string{"Mcp-Param-Shard": "3"})
		}, 400, -32020, "Mcp-Param-Shard"},
		{"x-mcp-header nested parameter without its header", func(c *modern) *http.Request {
			return c.request(9, "tools/call", modernParams("route", map[string]any{"query": "q", "opts": map[string]any{"zone": "a"}}, nil), nil)
		}, 400, -32020, "Mcp-Param-Zone"},
		{"inputResponses without requestState", func(c *modern) *http.Request {
			p := modernParams("ask", map[string]any{}, modernMeta(map[string]any{"elicitation": map[string]any{}}))
			p["inputResponses"] = map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "x"}}}
			return c.request(9, "tools/call", p, nil)
		}, 400, -32602, "inputResponses without requestState"},
		{"a requestState not issued here", func(c *modern) *http.Request {
			p := modernParams("ask", map[string]any{}, modernMeta(map[string]any{"elicitation": map[string]any{}}))
			p["requestState"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
			return c.request(9, "tools/call", p, nil)
		}, 400, -32602, "requestState is not valid"},
		{"a requestState that is not a string", func(c *modern) *http.Request {
			p := modernParams("ask", map[string]any{}, modernMeta(map[string]any{"elicitation": map[string]any{}}))
			p["requestState"] = 42
			return c.request(9, "tools/call", p, nil)
		}, 400, -32602, "requestState"},
		{"unknown method", func(c *modern) *http.Request { return c.request(9, "tools/frobnicate", nil, nil) }, 404, -32601, ""},
		{"ping", func(c *modern) *http.Request { return c.request(9, "ping", nil, nil) }, 404, -32601, "ping"},
		{"logging/setLevel", func(c *modern) *http.Request {
			return c.request(9, "logging/setLevel", map[string]any{"level": "debug"}, nil)
		}, 404, -32601, "logging/setLevel"},
		{"resources/subscribe", func(c *modern) *http.Request {
			return c.request(9, "resources/subscribe", map[string]any{"uri": "test://static-text"}, nil)
		}, 404, -32601, "resources/subscribe"},
		{"initialize", func(c *modern) *http.Request {
			return c.request(9, "initialize", map[string]any{"protocolVersion": "2026-07-28", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}}, nil)
		}, 404, -32601, "initialize"},
		{"unknown tool", func(c *modern) *http.Request {
			return c.request(9, "tools/call", modernParams("no_such_tool", map[string]any{}, nil), nil)
		}, 400, -32602, "no_such_tool"},
		{"resource not found", func(c *modern) *http.Request {
			return c.request(9, "resources/read", map[string]any{"uri": "test://nothing-here"}, nil)
		}, 400, -32602, "nothing-here"},
		{"a tool that elicits, for a client without elicitation", func(c *modern) *http.Request {
			return c.request(9, "tools/call", modernParams("ask", map[string]any{}, nil), nil)
		}, 400, -32021, `"requiredCapabilities":{"elicitation":{}}`},
	}
}

// TestModernBadInput sends each bad request of badCases over HTTP, on both
// paths, and checks its answer; the plugins see none of them (but the
// elicitation a client did not declare), and a call parked meanwhile is
// still answered.
func TestModernBadInput(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			m := metrics.New("test")
			s := newServer(t, &server.Options{DisableFastPath: !fast, Metrics: m}, server.Mount{Plugin: fixture(t)}, server.Mount{Plugin: mrtrPlugin(t)}, *xheaderPlugin(t))
			c := newModern(t, serveHTTP(t, s, nil))
			calls := func() float64 { return pluginCalls(t, m) }

			// A call parked before the bad requests.
			meta := modernMeta(map[string]any{"elicitation": map[string]any{}})
			parked := c.post(1, "tools/call", modernParams("ask", map[string]any{}, meta)).result()
			if parked["resultType"] != "input_required" {
				t.Fatalf("parked call: %v", parked)
			}
			before := calls()

			for _, tc := range badCases() {
				r := c.do(tc.req(c))
				if r.status != tc.status || r.errorCode() != tc.code || !strings.Contains(r.raw, tc.in) || r.header.Get("Mcp-Session-Id") != "" {
					t.Errorf("%s: got %s, want %d with error %d containing %q", tc.name, r, tc.status, tc.code, tc.in)
				}
				if tc.status == 400 && r.header.Get("Content-Type") != "application/json" {
					t.Errorf("%s: Content-Type %q", tc.name, r.header.Get("Content-Type"))
				}
			}
			// The elicitation's call is answered when the plugin asks; it
			// ends, and is counted, just after.
			for deadline := time.Now().Add(5 * time.Second); calls()-before < 1 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if got := calls() - before; got != 1 {
				t.Errorf("the plugins saw %v of the bad requests, want 1 (the elicitation without the capability)", got)
			}

			// Every other call goes on: the parked call is answered.
			r := c.post(2, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta,
				"requestState":   parked["requestState"],
				"inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
			})
			if r.result()["resultType"] != "complete" || !strings.Contains(r.raw, "Ada") {
				t.Errorf("the parked call after the bad requests: %s", r)
			}
		})
	}
}

// pluginCalls is how many calls reached plugins (the metric
// hangar_plugin_calls_total, summed).
func pluginCalls(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	return tu.Counter(t, m.Registry(), "hangar_plugin_calls_total", nil)
}

// TestModernBadInputOverStdio: over stdio, the same checks of _meta, with
// no initialize; the stream goes on after each, on both paths.
func TestModernBadInputOverStdio(t *testing.T) {
	for _, fast := range []bool{true, false} {
		m := metrics.New("test")
		s := newServer(t, &server.Options{DisableFastPath: !fast, Metrics: m}, server.Mount{Plugin: fixture(t)})
		io := newRawIO(t, s)
		line := func(id int, meta map[string]any) string {
			return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": "test_simple_text", "arguments": map[string]any{}, "_meta": meta}})
		}
		with := func(k string, v any) map[string]any {
			meta := modernMeta(nil)
			if v == nil {
				delete(meta, k)
			} else {
				meta[k] = v
			}
			return meta
		}
		for i, tc := range []struct {
			meta map[string]any
			code int
			in   string
		}{
			{with("io.modelcontextprotocol/clientCapabilities", nil), -32602, "clientCapabilities"},
			{with("io.modelcontextprotocol/protocolVersion", "2099-01-01"), -32022, `"requested":"2099-01-01"`},
			{with("io.modelcontextprotocol/protocolVersion", "2025-11-25"), -32022, `"requested":"2025-11-25"`},
			{with("io.modelcontextprotocol/protocolVersion", 20260728), -32602, "protocolVersion"},
			{with("io.modelcontextprotocol/logLevel", "loud"), -32602, "loud"},
			{with("io.modelcontextprotocol/clientInfo", "me"), -32602, "clientInfo"},
		} {
			out := io.exchange(line(10+i, tc.meta), fmt.Sprint(10+i))
			if len(out) != 1 || !strings.Contains(out[0], fmt.Sprintf(`"code":%d`, tc.code)) || !strings.Contains(out[0], tc.in) {
				t.Errorf("fast=%v case %d: %v", fast, i, out)
			}
		}
		if n := pluginCalls(t, m); n != 0 {
			t.Errorf("fast=%v: %v calls reached the plugin", fast, n)
		}
		if out := io.exchange(line(30, modernMeta(nil)), "30"); len(out) != 1 || !strings.Contains(out[0], `"resultType":"complete"`) {
			t.Errorf("fast=%v: a good request after: %v", fast, out)
		}
	}
}

// TestModernContentNegotiation: a 2026-07-28 POST that is not JSON, or
// whose client does not accept both answers, is refused as the go-sdk
// refuses it, on both paths.
func TestModernContentNegotiation(t *testing.T) {
	for _, fast := range []bool{true, false} {
		s := newServer(t, &server.Options{DisableFastPath: !fast}, server.Mount{Plugin: fixture(t)})
		c := newModern(t, serveHTTP(t, s, nil))
		for hdr, status := range map[[2]string]int{
			{"Content-Type", "text/plain"}:  415,
			{"Accept", "application/json"}:  400,
			{"Accept", "text/event-stream"}: 400,
			{"Accept", "*/*"}:               200,
		} {
			r := c.do(c.request(1, "tools/call", modernParams("test_simple_text", map[string]any{}, nil), map[string]string{hdr[0]: hdr[1]}))
			if r.status != status {
				t.Errorf("fast=%v %s: %s: %s", fast, hdr[0], hdr[1], r)
			}
		}
	}
}
