package fastpath_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/fastpath"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The fast path, tested against the core and the sessions edge it sits in
// front of: what it tells the core of each call it takes, and what it
// leaves to the go-sdk. (The differential tests of package server compare
// its answers with the go-sdk's, byte for byte.)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

// recordingCore is the core, noting the requests the edges hand it.
type recordingCore struct {
	*core.Core
	mu    sync.Mutex
	calls map[string]core.Request // by tool name or URI
}

func (r *recordingCore) note(key string, rq core.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[key] = rq
}

func (r *recordingCore) call(key string) (core.Request, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rq, ok := r.calls[key]
	return rq, ok
}

func (r *recordingCore) CallTool(ctx context.Context, rq core.Request, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	r.note(name, rq)
	return r.Core.CallTool(ctx, rq, name, args)
}

func (r *recordingCore) ReadResource(ctx context.Context, rq core.Request, uri string) (*mcp.ReadResourceResult, error) {
	r.note(uri, rq)
	return r.Core.ReadResource(ctx, rq, uri)
}

// fastSessions are the sessions as the fast path sees them, as package
// server wires them.
type fastSessions struct{ *sessions.Server }

func (f fastSessions) State(ss *mcp.ServerSession) fastpath.SessionState { return f.Server.State(ss) }

// newPath returns the core, serving the conformance and v1full plugins,
// the fast path in front of its sessions edge, and the tracker of both's
// HTTP requests.
func newPath(t *testing.T) (*recordingCore, *sessions.Server, *fastpath.Path, *httpcalls.Tracker) {
	t.Helper()
	c := &recordingCore{Core: core.New(&core.Options{Logger: servertest.Logger()}), calls: map[string]core.Request{}}
	tr := httpcalls.NewTracker()
	sdk, err := sessions.New(c, &sessions.Options{Logger: servertest.Logger(), Send: fastpath.Send, Requests: tr})
	if err != nil {
		t.Fatal(err)
	}
	c.Listen(sdk)
	err = c.Reload(context.Background(), []core.Mount{
		{Plugin: servertest.Load(t, "conformance", "./examples/conformance", config.Limits{})},
		{Plugin: servertest.Load(t, "v1full", "./internal/testplugins/v1full", config.Limits{})},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := fastpath.New(c, fastSessions{sdk}, &fastpath.Options{Logger: servertest.Logger(), Requests: tr})
	if err != nil {
		t.Fatal(err)
	}
	return c, sdk, p, tr
}

// TestNewNeedsRequests: the fast path is not made without the tracker of
// the HTTP requests that carry calls, which the sessions share: without
// it, its calls over HTTP would not end with their requests, and the
// go-sdk's handlers would not find the ids of the calls it leaves them.
func TestNewNeedsRequests(t *testing.T) {
	c := core.New(&core.Options{Logger: servertest.Logger()})
	sdk, err := sessions.New(c, &sessions.Options{Logger: servertest.Logger(), Send: fastpath.Send, Requests: httpcalls.NewTracker()})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*fastpath.Options{nil, {Logger: servertest.Logger()}} {
		p, err := fastpath.New(c, fastSessions{sdk}, o)
		if err == nil || !strings.Contains(err.Error(), "Options.Requests") {
			t.Errorf("New(%+v) = %v, %v; want an error naming Options.Requests", o, p, err)
		}
	}
}

// TestStdioCalls: over a stream, the calls the fast path takes reach the
// core described as the sessions edge describes its own, and what it does
// not take reaches the go-sdk.
func TestStdioCalls(t *testing.T) {
	c, _, p, _ := newPath(t)
	sc, cc := net.Pipe()
	ss, err := p.ConnectIO(context.Background(), sc, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	defer cc.Close()
	r := bufio.NewReader(cc)
	send := func(line string) map[string]any {
		t.Helper()
		cc.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(cc, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"id"`) {
			return nil
		}
		for {
			b, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if _, ok := m["method"]; !ok {
				return m
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	served := wire.FastServed()
	answer := send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_context","arguments":{},"_meta":{"progressToken":"p-2"}}}`)
	if wire.FastServed() != served+1 {
		t.Fatal("the fast path did not take the call")
	}
	rq, _ := c.call("echo_context")
	if rq.ID != "2" || rq.Meta["progressToken"] != "p-2" || rq.Version != core.Version20250618 || rq.Capabilities == nil || rq.Capabilities.Sampling == nil {
		t.Errorf("the core was given id %q, _meta %v, version %q, capabilities %+v", rq.ID, rq.Meta, rq.Version, rq.Capabilities)
	}
	if rq.Client == nil || rq.Scope == nil || rq.Carrier != nil {
		t.Errorf("client %v, scope %v, carrier %v", rq.Client, rq.Scope, rq.Carrier)
	}
	if res, _ := json.Marshal(answer["result"]); answer["id"] != float64(2) || !strings.Contains(string(res), `\"id\":\"2\"`) {
		t.Errorf("answer: %v", answer)
	}

	answer = send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://template/7/data"}}`)
	if _, ok := c.call("test://template/7/data"); !ok || wire.FastServed() != served+2 || answer["result"] == nil {
		t.Errorf("resources/read: %v", answer)
	}

	// An unknown tool is the go-sdk's to refuse, through the core's
	// registrations.
	answer = send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	if _, ok := c.call("no_such_tool"); ok || wire.FastServed() != served+2 {
		t.Error("the fast path took a call of an unknown tool")
	}
	if e, _ := answer["error"].(map[string]any); e == nil || !strings.Contains(e["message"].(string), `unknown tool "no_such_tool"`) {
		t.Errorf("unknown tool: %v", answer)
	}
	// A call the parser leaves (an escape in the name) goes to the go-sdk,
	// which hands it to the core.
	answer = send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo\u005fcontext","arguments":{}}}`)
	if rq, _ := c.call("echo_context"); wire.FastServed() != served+2 || rq.ID != "5" || answer["result"] == nil {
		t.Errorf("through the go-sdk: id %q, answer %v", rq.ID, answer)
	}
}

// TestHTTPCalls: over Streamable HTTP, a call the fast path takes has the
// HTTP request that carried it as its carrier, and its id.
func TestHTTPCalls(t *testing.T) {
	c, sdk, p, tr := newPath(t)
	store := mcp.NewMemoryEventStore(nil)
	h := p.HTTP(sdk.StreamableHTTP(store), store, 0)
	// What package server's HTTP layer does in front of the fast path.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sessions.ClearInternalHeaders(r.Header)
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodPost && id != "" {
			_, done := tr.Track(r, id)
			defer done()
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	ctx := context.Background()
	resp, err := testutil.PostMCP(ctx, ts.Client(), ts.URL, "", "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"},
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if _, _, err := testutil.ReadMCPAnswer(resp, nil); err != nil || sid == "" {
		t.Fatalf("initialize: %v, session %q", err, sid)
	}
	resp.Body.Close()
	resp, err = testutil.PostMCP(ctx, ts.Client(), ts.URL, sid, "notifications/initialized", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	served := wire.FastServed()
	resp, err = testutil.PostMCP(ctx, ts.Client(), ts.URL, sid, "tools/call", map[string]any{"name": "echo_context", "arguments": map[string]any{}}, "call-3")
	if err != nil {
		t.Fatal(err)
	}
	answer, _, err := testutil.ReadMCPAnswer(resp, nil)
	resp.Body.Close()
	if err != nil || answer["id"] != "call-3" {
		t.Fatalf("tools/call: %v, %v", answer, err)
	}
	rq, _ := c.call("echo_context")
	if wire.FastServed() != served+1 || rq.ID != "call-3" || rq.Carrier == nil || rq.Scope == nil || rq.Version != core.Version20250618 {
		t.Errorf("the core was given id %q, carrier %v, scope %v, version %q (fast path served %d)", rq.ID, rq.Carrier, rq.Scope, rq.Version, wire.FastServed()-served)
	}
	if rq.Carrier != nil {
		select {
		case <-rq.Carrier.Done():
		case <-time.After(10 * time.Second):
			t.Error("the carrier did not end with its HTTP request")
		}
	}
}
