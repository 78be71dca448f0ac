package forward_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/forward"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

// loadPlugin loads internal/testplugins/mrtr, whose tools ask their
// client for input.
func loadPlugin(t *testing.T) *plugin.Plugin {
	t.Helper()
	return servertest.Load(t, "mrtr", "./internal/testplugins/mrtr", config.Limits{})
}

// testKey is the state key the tests' managers share, as replicas do.
var testKey = []byte("0123456789abcdef0123456789abcdef")

func newManager(t *testing.T, o mrtr.Options) *mrtr.Manager {
	t.Helper()
	if o.Key == nil {
		o.Key = testKey
	}
	m, err := mrtr.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// edge is a minimal Streamable HTTP edge for 2026 tools/call over a
// Manager, shaped as the server's is meant to be: it routes a retry to the
// replica holding its call (Locate, Forward), and otherwise serves the
// call with Serve, streaming the call's notifications and its answer as
// SSE.
type edge struct {
	m *mrtr.Manager
	f *forward.Forwarder
	p *plugin.Plugin

	mu   sync.Mutex
	seen []http.Header // the requests it received
}

func (e *edge) requests() []http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]http.Header(nil), e.seen...)
}

func (e *edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.seen = append(e.seen, r.Header.Clone())
	e.mu.Unlock()
	body, err := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err != nil || json.Unmarshal(body, &msg) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	state, err := mrtr.RequestState(msg.Params)
	if err != nil {
		writeError(w, msg.ID, err)
		return
	}
	if state != "" {
		replica, err := e.m.Locate(state)
		if err != nil {
			writeError(w, msg.ID, err)
			return
		}
		if replica != e.m.Replica() {
			e.f.Forward(w, r, body, replica, msg.ID)
			return
		}
	}
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			Caps          json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			ProgressToken any             `json:"progressToken"`
		} `json:"_meta"`
	}
	json.Unmarshal(msg.Params, &params)
	caps, err := mrtr.DecodeCapabilities(params.Meta.Caps)
	if err != nil {
		writeError(w, msg.ID, err)
		return
	}
	s := &sseSink{w: w}
	out, err := e.m.Serve(r.Context(), mrtr.Request{
		Method:       msg.Method,
		Params:       msg.Params,
		Principal:    r.Header.Get("Authorization"),
		Capabilities: caps,
		Sink:         s,
	}, func(ctx context.Context, host plugin.Host) (any, error) {
		call := &plugin.Call{Host: host, Meta: map[string]any{"progressToken": params.Meta.ProgressToken}}
		return e.p.CallTool(ctx, call, params.Name, params.Arguments)
	})
	if err != nil {
		writeError(w, msg.ID, err)
		return
	}
	var result any = out.Result
	if out.Input != nil {
		result = out.Input
	}
	s.event(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
}

func writeError(w http.ResponseWriter, id json.RawMessage, err error) {
	e := mrtr.RPCError(err)
	if e == nil {
		e = mrtr.RPCError(fmt.Errorf("%w: %v", mrtr.ErrInvalidParams, err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}

// sseSink writes notifications, and then the answer, as SSE events.
type sseSink struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
}

func (s *sseSink) event(v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.w.Header().Set("Content-Type", "text/event-stream")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", b)
	http.NewResponseController(s.w).Flush()
}

func (s *sseSink) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	s.event(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": p})
	return nil
}

func (s *sseSink) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	s.event(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": p})
	return nil
}

// replica starts an edge on 127.0.0.1 named after its port, whose peers
// are found with the URL template http://127.0.0.1:{replica}/mcp.
func replica(t *testing.T, p *plugin.Plugin, fo forward.Options) (*edge, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	fo.Self = name
	if fo.PeerURL == "" && fo.Peers == nil {
		fo.PeerURL = "http://127.0.0.1:{replica}/mcp"
	}
	f, err := forward.New(fo)
	if err != nil {
		t.Fatal(err)
	}
	e := &edge{m: newManager(t, mrtr.Options{Replica: name}), f: f, p: p}
	srv := httptest.NewUnstartedServer(e)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return e, srv.URL + "/mcp"
}

// post sends one JSON-RPC request and returns the HTTP status and the
// messages of the answer (SSE events, or one JSON message).
func post(t *testing.T, url string, header http.Header, method string, params map[string]any) (int, []map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if header != nil {
		req.Header = header.Clone()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msgs []map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				msgs = append(msgs, m)
			}
		}
		return resp.StatusCode, msgs
	}
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("answer: %v", err)
	}
	return resp.StatusCode, []map[string]any{m}
}

var capsMeta = map[string]any{"elicitation": map[string]any{}}

// inputOf returns the key and requestState of an input_required answer.
func inputOf(t *testing.T, msgs []map[string]any) (string, string) {
	t.Helper()
	res, _ := msgs[len(msgs)-1]["result"].(map[string]any)
	if res["resultType"] != "input_required" {
		t.Fatalf("answer %v: want input_required", msgs)
	}
	for k := range res["inputRequests"].(map[string]any) {
		return k, res["requestState"].(string)
	}
	t.Fatalf("no input requests in %v", res)
	return "", ""
}

// A retry that reaches a replica other than the one holding its call is
// forwarded there, with its credentials and MCP headers, and the answer,
// notifications included, streams back.
func TestForwardToTheReplicaHoldingTheCall(t *testing.T) {
	p := loadPlugin(t)
	a, aURL := replica(t, p, forward.Options{})
	b, bURL := replica(t, p, forward.Options{})
	header := http.Header{
		"Authorization":    {"Bearer alice"},
		"Mcp-Method":       {"tools/call"},
		"Mcp-Name":         {"ask_twice"},
		"Mcp-Param-Region": {"eu"},
		"Cookie":           {"secret=1"},
	}
	params := func(token string, state string, responses map[string]any) map[string]any {
		p := map[string]any{"name": "ask_twice", "_meta": map[string]any{"progressToken": token, "io.modelcontextprotocol/clientCapabilities": capsMeta}}
		if state != "" {
			p["requestState"], p["inputResponses"] = state, responses
		}
		return p
	}
	status, msgs := post(t, aURL, header, "tools/call", params("p1", "", nil))
	key, state := inputOf(t, msgs)
	if status != 200 {
		t.Fatalf("status %d", status)
	}

	status, msgs = post(t, bURL, header, "tools/call", params("p2", state, map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}))
	if status != 200 || len(msgs) != 3 {
		t.Fatalf("forwarded retry: %d %v: want the log, the progress and the answer", status, msgs)
	}
	if msgs[0]["method"] != "notifications/message" || msgs[1]["method"] != "notifications/progress" || msgs[1]["params"].(map[string]any)["progressToken"] != "p2" {
		t.Errorf("notifications %v", msgs[:2])
	}
	key2, state2 := inputOf(t, msgs)

	status, msgs = post(t, bURL, header, "tools/call", params("p3", state2, map[string]any{key2: map[string]any{"action": "accept", "content": map[string]any{"age": 7}}}))
	res, _ := msgs[len(msgs)-1]["result"].(map[string]any)
	if status != 200 || res == nil || !strings.Contains(res["content"].([]any)[0].(map[string]any)["text"].(string), `"age":7`) {
		t.Fatalf("final answer %d %v", status, msgs)
	}

	// b handled 2 requests by forwarding; a served 3.
	if n := len(b.requests()); n != 2 {
		t.Errorf("b received %d requests", n)
	}
	seen := a.requests()
	if len(seen) != 3 {
		t.Fatalf("a received %d requests", len(seen))
	}
	fwd := seen[1]
	if fwd.Get(forward.Header) != b.m.Replica() || fwd.Get("Authorization") != "Bearer alice" || fwd.Get("Mcp-Method") != "tools/call" ||
		fwd.Get("Mcp-Name") != "ask_twice" || fwd.Get("Mcp-Param-Region") != "eu" || fwd.Get("Cookie") != "" {
		t.Errorf("forwarded headers %v", fwd)
	}
	if st := b.f.Stats(); st.Forwarded != 2 || st.Gone != 0 {
		t.Errorf("b's forward stats %+v", st)
	}
	if st := a.m.Stats(); st.Resumed != 2 || st.Held != 0 {
		t.Errorf("a's stats %+v", st)
	}
}

// A forwarded request is never forwarded again; a replica that cannot be
// reached gets the client a clean error telling it to start again.
func TestForwardLoopGuardAndPeerGone(t *testing.T) {
	p := loadPlugin(t)
	a, aURL := replica(t, p, forward.Options{})
	// gone is a replica that was there and is not any more.
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	b, bURL := replica(t, p, forward.Options{Peers: map[string]string{a.m.Replica(): goneURL}, DialTimeout: 2 * time.Second})
	c, cURL := replica(t, p, forward.Options{})

	params := map[string]any{"name": "ask", "_meta": map[string]any{"io.modelcontextprotocol/clientCapabilities": capsMeta}}
	_, msgs := post(t, aURL, nil, "tools/call", params)
	key, state := inputOf(t, msgs)
	params["requestState"] = state
	params["inputResponses"] = map[string]any{key: map[string]any{"action": "decline"}}

	t.Run("loop guard", func(t *testing.T) {
		status, msgs := post(t, cURL, http.Header{forward.Header: {"x"}}, "tools/call", params)
		e, _ := msgs[0]["error"].(map[string]any)
		if status != 400 || e == nil || e["code"] != float64(-32602) || !strings.Contains(e["message"].(string), "the replica holding this request is gone") ||
			!strings.Contains(e["message"].(string), "start the request again") {
			t.Errorf("answer %d %v", status, msgs)
		}
		if n := len(a.requests()); n != 1 {
			t.Errorf("a received %d requests, want only the first", n)
		}
		if st := c.f.Stats(); st.Forwarded != 0 {
			t.Errorf("c forwarded %+v", st)
		}
	})
	t.Run("peer gone", func(t *testing.T) {
		start := time.Now()
		status, msgs := post(t, bURL, nil, "tools/call", params)
		e, _ := msgs[0]["error"].(map[string]any)
		if status != 400 || e == nil || msgs[0]["id"] != float64(7) || !strings.Contains(e["message"].(string), "the replica holding this request is gone") {
			t.Errorf("answer %d %v", status, msgs)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %s", d)
		}
		if st := b.f.Stats(); st.Gone != 1 || st.Forwarded != 0 {
			t.Errorf("b's forward stats %+v", st)
		}
	})
	t.Run("peer hangs", func(t *testing.T) {
		addr, closeAll, err := testutil.StallListener()
		if err != nil {
			t.Fatal(err)
		}
		defer closeAll()
		_, dURL := replica(t, p, forward.Options{Peers: map[string]string{a.m.Replica(): "http://" + addr + "/mcp"}, Timeout: 300 * time.Millisecond})
		start := time.Now()
		status, msgs := post(t, dURL, nil, "tools/call", params)
		e, _ := msgs[0]["error"].(map[string]any)
		if status != 400 || e == nil || !strings.Contains(e["message"].(string), "the replica holding this request is gone") {
			t.Errorf("answer %d %v", status, msgs)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s with a 300ms timeout", d)
		}
	})
	// Nothing was consumed on the way: the holder still serves the retry.
	_, msgs = post(t, aURL, nil, "tools/call", params)
	if res, _ := msgs[len(msgs)-1]["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("retry at the holder: %v", msgs)
	}
}

func TestForwarderURL(t *testing.T) {
	f, err := forward.New(forward.Options{PeerURL: "http://{replica}.hangar:8080/mcp", Peers: map[string]string{"r9": "https://r9.example/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"10.0.0.7": "http://10.0.0.7.hangar:8080/mcp", "r9": "https://r9.example/mcp"} {
		if u, err := f.URL(name); err != nil || u.String() != want {
			t.Errorf("URL(%q) = %v, %v; want %s", name, u, err, want)
		}
	}
	// Names come from authenticated states, but are checked all the same.
	for _, name := range []string{"evil.example/x?", "a@b", "", "a:80"} {
		if u, err := f.URL(name); err == nil {
			t.Errorf("URL(%q) = %v", name, u)
		}
	}
	for _, o := range []forward.Options{{}, {PeerURL: "http://fixed/mcp"}, {PeerURL: "ftp://{replica}/"}, {Peers: map[string]string{"a": "/relative"}}} {
		if _, err := forward.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
