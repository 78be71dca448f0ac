package server_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/tasks"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// replicas starts n servers of the mrtr plugin as replicas r1, r2...
// sharing a state key and each other's URLs, with tasks, and returns their URLs and a
// function that stops replica i.
func replicas(t *testing.T, n int) ([]string, func(i int)) {
	t.Helper()
	lns := make([]net.Listener, n)
	urls := make([]string, n)
	peers := map[string]string{}
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		urls[i] = "http://" + ln.Addr().String() + server.Path
		peers[fmt.Sprintf("r%d", i+1)] = urls[i]
	}
	srvs := make([]*http.Server, n)
	for i, ln := range lns {
		s := newServer(t, &server.Options{Replica: fmt.Sprintf("r%d", i+1), StateKey: []byte("0123456789abcdef0123456789abcdef"), Peers: peers, Tasks: &tasks.Options{}}, server.Mount{Plugin: mrtrPlugin(t)})
		srvs[i] = &http.Server{Handler: s.HTTPHandler(nil)}
		go srvs[i].Serve(ln)
		t.Cleanup(func() { srvs[i].Close() })
	}
	return urls, func(i int) { srvs[i].Close() }
}

// TestModernRetryOnAnotherReplica: behind a round-robin balancer, a retry
// reaches a replica that does not hold its call: it is forwarded to the
// one that does, and answered; a replay is refused there; a retry whose
// replica is gone is told to start again, and so is one over stdio.
func TestModernRetryOnAnotherReplica(t *testing.T) {
	urls, stop := replicas(t, 3)
	r1, r2, r3 := newModern(t, urls[0]), newModern(t, urls[1]), newModern(t, urls[2])

	state := r1.post(1, "tools/call", askParams(nil, nil)).result()["requestState"]
	retry := askParams(state, map[string]any{"elicitation-1": accept("Ada")})
	r := r2.post(2, "tools/call", retry)
	if r.result()["resultType"] != "complete" || !strings.Contains(r.raw, "Ada") {
		t.Fatalf("a retry on another replica: %s", r)
	}
	var text struct{ Call int }
	content := r.result()["content"].([]any)[0].(map[string]any)["text"].(string)
	json.Unmarshal([]byte(content), &text)
	if text.Call != 1 {
		t.Errorf("the call ran %d times on the replica holding it, want once", text.Call)
	}
	if r := r3.post(3, "tools/call", retry); r.status != 400 || r.errorCode() != -32602 || !strings.Contains(r.raw, "already used") {
		t.Errorf("the replay on a third replica: %s", r)
	}

	// A request forwarded once is not forwarded again.
	state = r1.post(4, "tools/call", askParams(nil, nil)).result()["requestState"]
	req := r2.request(5, "tools/call", askParams(state, map[string]any{"elicitation-1": accept("Ada")}), map[string]string{"Hangar-Forwarded-By": "r3"})
	if r := r2.do(req); r.status != 400 || r.errorCode() != -32602 || !strings.Contains(r.raw, "start the request again") {
		t.Errorf("a forwarded request for another replica: %s", r)
	}

	// The replica holding the call is gone.
	stop(0)
	r = r2.post(6, "tools/call", askParams(state, map[string]any{"elicitation-1": accept("Ada")}))
	if r.status != 400 || r.errorCode() != -32602 || !strings.Contains(r.raw, "start the request again") {
		t.Errorf("a retry whose replica is gone: %s", r)
	}
}

// TestModernRetryOverStdioHeldElsewhere: over stdio a retry cannot be
// forwarded: the client is told to start again.
func TestModernRetryOverStdioHeldElsewhere(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	one := newServer(t, &server.Options{Replica: "r1", StateKey: key}, server.Mount{Plugin: mrtrPlugin(t)})
	two := newServer(t, &server.Options{Replica: "r2", StateKey: key}, server.Mount{Plugin: mrtrPlugin(t)})
	state := newModern(t, serveHTTP(t, one, nil)).post(1, "tools/call", askParams(nil, nil)).result()["requestState"]
	io := newRawIO(t, two)
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": askParams(state, map[string]any{"elicitation-1": accept("Ada")})})
	out := io.exchange(string(msg), "2")
	if len(out) != 1 || !strings.Contains(out[0], `"code":-32602`) || !strings.Contains(out[0], `held by replica \"r1\"`) {
		t.Errorf("over stdio: %v", out)
	}
}

// TestModernMetrics: /metrics shows the parked calls, the states refused
// and the retries forwarded.
func TestModernMetrics(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ln1, _ := net.Listen("tcp", "127.0.0.1:0")
	url1 := "http://" + ln1.Addr().String() + server.Path
	m := metrics.New("test")
	one := newServer(t, &server.Options{Replica: "r1", StateKey: key}, server.Mount{Plugin: mrtrPlugin(t)})
	two := newServer(t, &server.Options{Replica: "r2", StateKey: key, Peers: map[string]string{"r1": url1}, Metrics: m}, server.Mount{Plugin: mrtrPlugin(t)})
	hs := &http.Server{Handler: one.HTTPHandler(nil)}
	go hs.Serve(ln1)
	t.Cleanup(func() { hs.Close() })
	url2 := serveHTTP(t, two, nil)
	c1, c2 := newModern(t, url1), newModern(t, url2)

	c2.post(1, "tools/call", askParams(nil, nil)) // parked on r2
	c2.post(2, "tools/call", askParams("forged", map[string]any{"elicitation-1": accept("x")}))
	state := c1.post(3, "tools/call", askParams(nil, nil)).result()["requestState"]
	if r := c2.post(4, "tools/call", askParams(state, map[string]any{"elicitation-1": accept("Ada")})); r.result()["resultType"] != "complete" {
		t.Fatalf("forwarded retry: %s", r)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		"hangar_mrtr_parked_calls 1",
		"hangar_mrtr_input_requests_total 1",
		`hangar_mrtr_refusals_total{reason="state_invalid"} 1`,
		`hangar_mrtr_forwarded_total{outcome="ok"} 1`,
		`hangar_mcp_requests_total{method="tools/call",outcome="ok"}`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestModernWarnsWithoutStateKey: a replica without a shared state key is
// told, at start, that retries on other replicas must start again.
func TestModernWarnsWithoutStateKey(t *testing.T) {
	for _, tc := range []struct {
		opts server.Options
		warn bool
	}{
		{server.Options{Replica: "r1"}, true},
		{server.Options{PeerURL: "http://{replica}:8080/mcp"}, true},
		{server.Options{Replica: "r1", StateKey: []byte("0123456789abcdef0123456789abcdef")}, false},
		{server.Options{}, false},
	} {
		var logs testutil.SyncBuffer
		o := tc.opts
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		if _, err := server.New(t.Context(), nil, &o); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "no state key is configured"); got != tc.warn {
			t.Errorf("%+v: warned %v: %s", tc.opts, got, logs.String())
		}
	}
}
