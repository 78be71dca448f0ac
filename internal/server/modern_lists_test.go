package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
)

// TestModernDiscover: server/discover names every version Hangar speaks,
// the capabilities and the server, with resultType and cache hints.
func TestModernDiscover(t *testing.T) {
	s := newServer(t, &server.Options{Version: "9.9"}, server.Mount{Plugin: fixture(t)})
	c := newModern(t, serveHTTP(t, s, nil))
	r := c.post(1, "server/discover", nil)
	res := r.result()
	if r.status != 200 || res["resultType"] != "complete" || res["ttlMs"] != float64(3600000) || res["cacheScope"] != "public" {
		t.Fatalf("discover: %s", r)
	}
	if got := res["supportedVersions"]; !slices.Equal(toStrings(got), []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
		t.Errorf("supportedVersions = %v", got)
	}
	caps := res["capabilities"].(map[string]any)
	for _, k := range []string{"tools", "resources", "prompts", "completions", "logging"} {
		if caps[k] == nil {
			t.Errorf("capabilities lack %s: %v", k, caps)
		}
	}
	if info := res["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != "hangar" || info["version"] != "9.9" {
		t.Errorf("serverInfo = %v", info)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// TestModernCacheHints: lists and reads carry ttlMs and cacheScope at
// 2026-07-28, "public" without authentication and "private" with it (what
// a caller sees depends on its token), and no list or read of an older
// version carries them, over HTTP or stdio, on either path.
func TestModernCacheHints(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	c := newModern(t, serveHTTP(t, s, nil))
	lists := map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}
	for method, key := range lists {
		res := c.post(1, method, nil).result()
		if res["ttlMs"] != float64(0) || res["cacheScope"] != "public" || res["resultType"] != "complete" || res[key] == nil {
			t.Errorf("%s: %v", method, res)
		}
	}
	rd := c.post(2, "resources/read", map[string]any{"uri": "test://static-text"}).result()
	if rd["ttlMs"] != float64(0) || rd["cacheScope"] != "public" || rd["resultType"] != "complete" {
		t.Errorf("resources/read: %v", rd)
	}

	// With authentication: private.
	a, err := auth.New(&config.Auth{Tokens: []config.Token{{ID: "all", SHA256: sha(allToken), Plugins: []string{"*"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{Auth: a}))
	t.Cleanup(ts.Close)
	ac := newModern(t, ts.URL+server.Path)
	for _, method := range []string{"tools/list", "resources/read"} {
		params := map[string]any{}
		if method == "resources/read" {
			params["uri"] = "test://static-text"
		}
		r := ac.do(ac.request(3, method, params, map[string]string{"Authorization": "Bearer " + allToken}))
		if r.result()["cacheScope"] != "private" {
			t.Errorf("%s with a token: %s", method, r)
		}
	}

	// Sessions of every version: none.
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		for _, fast := range []bool{true, false} {
			srv := s
			if !fast {
				srv = newServer(t, &server.Options{DisableFastPath: true}, server.Mount{Plugin: fixture(t)})
			}
			for name, tr := range map[string]transcriber{"stdio": newRawIO(t, srv), "http": &rawHTTP{t: t, url: serveHTTP(t, srv, nil), hc: &http.Client{Transport: &http.Transport{}}}} {
				tr.start(v)
				for method := range lists {
					out := tr.exchange(`{"jsonrpc":"2.0","id":5,"method":"`+method+`"}`, "5")
					if joined := strings.Join(out, "\n"); strings.Contains(joined, "ttlMs") || strings.Contains(joined, "cacheScope") || !strings.Contains(joined, `"result"`) {
						t.Errorf("%s %s fast=%v %s: %s", v, name, fast, method, joined)
					}
				}
				out := tr.exchange(read(6, "test://static-text"), "6")
				if joined := strings.Join(out, "\n"); strings.Contains(joined, "ttlMs") || strings.Contains(joined, "cacheScope") || !strings.Contains(joined, `"contents"`) {
					t.Errorf("%s %s fast=%v resources/read: %s", v, name, fast, joined)
				}
			}
		}
	}
}

// TestModernToolsOrder: tools/list names the tools in the same order every
// time, sorted by name, whatever order plugins list them in.
func TestModernToolsOrder(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)}, server.Mount{Plugin: v1full(t, config.Limits{})})
	c := newModern(t, serveHTTP(t, s, nil))
	var first []string
	for i := range 5 {
		var names []string
		for _, tl := range c.post(i, "tools/list", nil).result()["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		if !slices.IsSorted(names) || len(names) < 20 {
			t.Fatalf("tools/list: %v", names)
		}
		if first == nil {
			first = names
		} else if !slices.Equal(first, names) {
			t.Fatalf("tools/list changed: %v then %v", first, names)
		}
	}
}

// listen opens a subscriptions/listen stream and returns its messages as
// they come; cancel ends it.
func (c *modern) listen(id any, filter map[string]any) (<-chan map[string]any, context.CancelFunc) {
	c.t.Helper()
	req := c.request(id, "subscriptions/listen", map[string]any{"notifications": filter}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req = req.WithContext(ctx)
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		c.t.Fatalf("listen: %s", resp.Status)
	}
	out := make(chan map[string]any, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				json.Unmarshal([]byte(data), &m)
				out <- m
			}
		}
	}()
	c.t.Cleanup(cancel)
	return out, cancel
}

func next(t *testing.T, ch <-chan map[string]any, what string) map[string]any {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing came", what)
	}
	return nil
}

// TestModernListen: subscriptions/listen acknowledges what it will send
// (only resources the caller may read), then delivers the list changes and
// resource updates plugins report, each with the subscription's id;
// nothing it did not ask for.
func TestModernListen(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	c := newModern(t, serveHTTP(t, s, nil))
	// The plugin offers the resource first.
	c.post(1, "tools/call", modernParams("enable_extra_resource", map[string]any{}, nil))

	ch, stop := c.listen("sub-1", map[string]any{"toolsListChanged": true, "resourceSubscriptions": []string{"v1full://extra", "nobody://serves-this"}})
	ack := next(t, ch, "acknowledgment")
	params := ack["params"].(map[string]any)
	if ack["method"] != "notifications/subscriptions/acknowledged" || params["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != "sub-1" {
		t.Fatalf("acknowledgment: %v", ack)
	}
	if n := params["notifications"].(map[string]any); n["toolsListChanged"] != true || !slices.Equal(toStrings(n["resourceSubscriptions"]), []string{"v1full://extra"}) || n["promptsListChanged"] != nil {
		t.Errorf("acknowledged %v", n)
	}

	c.post(2, "tools/call", modernParams("enable_extra_prompt", map[string]any{}, nil)) // not asked for
	c.post(3, "tools/call", modernParams("enable_extra_tool", map[string]any{}, nil))
	m := next(t, ch, "tools/list_changed")
	if m["method"] != "notifications/tools/list_changed" || m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != "sub-1" {
		t.Errorf("after enable_extra_tool: %v", m)
	}
	c.post(4, "tools/call", modernParams("notify_resource_updated", map[string]any{"uri": "v1full://extra"}, nil))
	m = next(t, ch, "resources/updated")
	if p := m["params"].(map[string]any); m["method"] != "notifications/resources/updated" || p["uri"] != "v1full://extra" || p["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != "sub-1" {
		t.Errorf("after notify_resource_updated: %v", m)
	}
	stop()
}

// TestModernLogLevel: a request gets log messages only if its _meta asks
// for a level, and then only those at or above it, on both paths.
func TestModernLogLevel(t *testing.T) {
	for _, fast := range []bool{true, false} {
		s := newServer(t, &server.Options{DisableFastPath: !fast}, server.Mount{Plugin: v1full(t, config.Limits{})})
		c := newModern(t, serveHTTP(t, s, nil))
		r := c.post(1, "tools/call", modernParams("log_levels", map[string]any{}, nil))
		if len(r.msgs) != 1 || r.result()["resultType"] != "complete" {
			t.Errorf("fast=%v: no level asked, yet: %s", fast, r)
		}
		meta := modernMeta(nil)
		meta["io.modelcontextprotocol/logLevel"] = "error"
		r = c.post(2, "tools/call", modernParams("log_levels", map[string]any{}, meta))
		var levels []string
		for _, m := range r.msgs[:len(r.msgs)-1] {
			levels = append(levels, m["params"].(map[string]any)["level"].(string))
		}
		if !slices.Equal(levels, []string{"error", "critical", "alert", "emergency"}) {
			t.Errorf("fast=%v: at error, the messages were %v: %s", fast, levels, r)
		}
	}
}

// TestModernListenSeesOnlyItsGrant: a listener whose token allows some
// plugins only is not told of changes to the others' lists; one allowed
// every plugin is.
func TestModernListenSeesOnlyItsGrant(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)}, server.Mount{Plugin: v1full(t, config.Limits{})})
	a, err := auth.New(&config.Auth{Tokens: []config.Token{
		{ID: "all", SHA256: sha(allToken), Plugins: []string{"*"}},
		{ID: "hello", SHA256: sha(helloToken), Plugins: []string{"conformance"}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{Auth: a}))
	t.Cleanup(ts.Close)
	listen := func(token string) <-chan map[string]any {
		c := newModern(t, ts.URL+server.Path)
		req := c.request("l", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, map[string]string{"Authorization": "Bearer " + token})
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req.WithContext(ctx))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("listen: %v %v", resp, err)
		}
		out := make(chan map[string]any, 8)
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					var m map[string]any
					json.Unmarshal([]byte(data), &m)
					out <- m
				}
			}
		}()
		next(t, out, "acknowledgment")
		return out
	}
	all, limited := listen(allToken), listen(helloToken)
	c := newModern(t, ts.URL+server.Path)
	r := c.do(c.request(1, "tools/call", modernParams("enable_extra_tool", map[string]any{}, nil), map[string]string{"Authorization": "Bearer " + allToken}))
	if r.result()["resultType"] != "complete" {
		t.Fatalf("enable_extra_tool: %s", r)
	}
	if m := next(t, all, "tools/list_changed for all"); m["method"] != "notifications/tools/list_changed" {
		t.Errorf("all: %v", m)
	}
	select {
	case m := <-limited:
		t.Errorf("the limited listener was told: %v", m)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestModernListenEndsGracefully: when the server stops, a listen stream
// gets the listen request's result, with its subscription id, before it
// closes, over HTTP and stdio.
func TestModernListenEndsGracefully(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	c := newModern(t, serveHTTP(t, s, nil))
	ch, _ := c.listen(7, map[string]any{"toolsListChanged": true})
	next(t, ch, "acknowledgment")
	io := newRawIO(t, s)
	wait := io.begin(mustJSON(map[string]any{"jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen", "params": map[string]any{"_meta": modernMeta(nil), "notifications": map[string]any{"promptsListChanged": true}}}), "8")
	time.Sleep(200 * time.Millisecond) // the stdio listen is open
	s.Drain(context.Background())
	if out := wait(); len(out) != 2 || !strings.Contains(out[0], "notifications/subscriptions/acknowledged") || !strings.Contains(out[1], `"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hangar","version":""},"io.modelcontextprotocol/subscriptionId":8}}`) {
		t.Errorf("over stdio: %v", out)
	}
	m := next(t, ch, "the listen's result")
	res, _ := m["result"].(map[string]any)
	if m["id"] != float64(7) || res["resultType"] != "complete" || res["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != float64(7) {
		t.Errorf("the end of the stream: %v", m)
	}
}

// TestModernListenOverStdioEnds: a listen over stdio ends without an
// answer when the client cancels it, and with the stream when the session
// closes; the stream goes on after a cancelled one.
func TestModernListenOverStdioEnds(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	sc, cc := net.Pipe()
	ss, err := s.ConnectIO(context.Background(), sc, sc)
	if err != nil {
		t.Fatal(err)
	}
	io := &rawIO{t: t, conn: cc, lines: make(chan string, 64)}
	go func() {
		defer close(io.lines)
		sc := bufio.NewScanner(cc)
		for sc.Scan() {
			io.lines <- sc.Text()
		}
	}()
	listen := func(id int) string {
		return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": map[string]any{"_meta": modernMeta(nil), "notifications": map[string]any{"toolsListChanged": true}}})
	}
	io.write(listen(1))
	if ack := <-io.lines; !strings.Contains(ack, "acknowledged") {
		t.Fatalf("acknowledgment: %s", ack)
	}
	io.write(cancelNote("1"))
	call := mustJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": modernParams("log_levels", map[string]any{}, modernMeta(nil))})
	if out := io.exchange(call, "2"); len(out) != 1 || !strings.Contains(out[0], `"id":2`) {
		t.Errorf("after the cancelled listen: %v", out)
	}
	io.write(listen(3))
	<-io.lines
	done := make(chan struct{})
	go func() { ss.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not close with a listen open")
	}
	cc.Close()
}
