package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/testutil/mcpschema"
)

// replicaConfig2026 is the configuration of a replica of
// TestReplicasRoundRobin2026: its address, the port of the peer URL
// template, the plugins. The state key is in $HANGAR_STATE_KEY.
const replicaConfig2026 = `http:
  addr: %s
mrtr:
  state_key_env: HANGAR_STATE_KEY
  peer_url: http://{replica}:%s/mcp
plugins:
%s`

// nginxBinary finds nginx, or skips the test when it is not installed
// outside CI (in CI, scripts/deps.sh installs it and the test must run).
func nginxBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("nginx is not installed; in CI it is required (scripts/deps.sh installs the Debian package nginx)")
	}
	t.Skip("nginx is not installed (scripts/deps.sh installs it: apt-get install nginx); CI runs this test")
	return ""
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type replica struct {
	Name, Addr string
	proc       *hangarProc
}

// startNginx renders deploy/nginx/nginx.conf.tmpl for the replicas and
// runs nginx, unprivileged, in a scratch directory; it returns nginx's
// address.
func startNginx(t *testing.T, replicas []*replica) string {
	t.Helper()
	bin := nginxBinary(t)
	dir := t.TempDir()
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	tmpl, err := template.ParseFiles(filepath.Join(testutil.Root(), "deploy", "nginx", "nginx.conf.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	for attempt := 0; ; attempt++ {
		addr = freeAddr(t)
		f, err := os.Create(filepath.Join(dir, "nginx.conf"))
		if err != nil {
			t.Fatal(err)
		}
		err = tmpl.Execute(f, map[string]any{"Dir": dir, "Listen": addr, "Replicas": replicas})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
		// Its output goes to a file, not a pipe, which its worker would keep
		// open; and it is stopped by its master, which stops the worker.
		out, err := os.Create(filepath.Join(dir, "output.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = cmd.Start()
		out.Close()
		if err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM) // fast shutdown: the master stops its worker
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its process group: master and worker
				<-exited
			}
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
				t.Logf("nginx error.log:\n%s", b)
			}
		})
		// Ready when it accepts connections; a port taken meanwhile makes
		// nginx exit, and another is tried.
		deadline := time.Now().Add(30 * time.Second)
		for {
			select {
			case <-exited:
			default:
				if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					c.Close()
					return addr
				}
				if time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
			}
			break
		}
		if attempt == 2 {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			o, _ := os.ReadFile(filepath.Join(dir, "output.log"))
			t.Fatalf("nginx did not start:\n%s\n%s", o, b)
		}
	}
}

// client is an MCP client connected through nginx, with the notes it
// added.
type client struct {
	cs    *mcp.ClientSession
	notes []string
}

func (c *client) replica() string { return strings.SplitN(c.cs.ID(), "~", 2)[0] }

// connectVia connects a client of protocol version 2025-11-25, which has
// a session.
func connectVia(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// addNote adds a note titled title and returns the titles of the notes
// the session's replica holds.
func addNote(ctx context.Context, cs *mcp.ClientSession, title string) ([]string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": title, "text": "x"}})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		return nil, fmt.Errorf("add_note failed: %s", text)
	}
	return listNotes(ctx, cs)
}

// listNotes reads notes://list ("- [ID](URI) TITLE" a line) and returns
// the note titles in it.
func listNotes(ctx context.Context, cs *mcp.ClientSession) ([]string, error) {
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://list"})
	if err != nil {
		return nil, err
	}
	var titles []string
	for _, line := range strings.Split(r.Contents[0].Text, "\n") {
		if _, title, ok := strings.Cut(line, ") "); ok && strings.HasPrefix(line, "- [") {
			titles = append(titles, title)
		}
	}
	sort.Strings(titles)
	return titles, nil
}

// TestReplicasBehindNginx runs three `hangar serve --replica` processes
// behind nginx (deploy/nginx/nginx.conf.tmpl) and MCP clients of
// 2025-11-25 (which have sessions) through it: each session sticks to the
// replica that created it; when a replica is
// killed, its clients get 404 (session not found) and initialize again on
// another, and the sessions of the other replicas lose nothing.
func TestReplicasBehindNginx(t *testing.T) {
	nginxBinary(t) // skip early when absent
	notes := testutil.BuildPlugin(t, "./examples/notes")
	cache := t.TempDir()
	replicas := []*replica{{Name: "r1"}, {Name: "r2"}, {Name: "r3"}}
	start := func(r *replica) {
		r.proc = runServe(t, nil, "serve", "--http", "127.0.0.1:0", "--replica", r.Name, "--cache-dir", cache, notes)
	}
	// The first compiles into the shared cache; the others start from it.
	start(replicas[0])
	replicas[0].Addr = strings.TrimPrefix(replicas[0].proc.waitLog(t, mcpURLRE)[1], "http://")
	var wg sync.WaitGroup
	for _, r := range replicas[1:] {
		start(r)
		wg.Go(func() { r.Addr = strings.TrimPrefix(r.proc.waitLog(t, mcpURLRE)[1], "http://") })
	}
	wg.Wait()
	for _, r := range replicas {
		r.proc.waitLog(t, readyRE) // the plugin compiled: no call waits for it
	}
	url := "http://" + startNginx(t, replicas) + "/mcp"
	ctx := context.Background()

	// Nine clients through nginx: the sessions spread over the replicas.
	var clients []*client
	for range 9 {
		clients = append(clients, &client{cs: connectVia(t, url)})
	}
	byReplica := map[string][]*client{}
	for _, c := range clients {
		byReplica[c.replica()] = append(byReplica[c.replica()], c)
	}
	for _, r := range replicas {
		if len(byReplica[r.Name]) == 0 {
			t.Fatalf("no session on %s: %v", r.Name, byReplica)
		}
	}

	// Each adds notes in turn. The notes live in the memory of the
	// replica's plugin: a session sees exactly the notes of the sessions of
	// its replica, so every request reached the replica that created it
	// (another would have answered 404 besides).
	expect := func(replica string) []string {
		var want []string
		for _, c := range byReplica[replica] {
			want = append(want, c.notes...)
		}
		sort.Strings(want)
		return want
	}
	for round := range 3 {
		for i, c := range clients {
			title := "note-" + string(rune('a'+i)) + "-" + string(rune('0'+round))
			c.notes = append(c.notes, title)
			got, err := addNote(ctx, c.cs, title)
			if err != nil {
				t.Fatalf("client %d (%s): %v", i, c.cs.ID(), err)
			}
			if want := expect(c.replica()); !slices.Equal(got, want) {
				t.Fatalf("client %d on %s sees %v, want %v", i, c.replica(), got, want)
			}
		}
	}

	// Kill r2.
	killed := replicas[1]
	killed.proc.cmd.Process.Kill()
	<-killed.proc.done
	for i, c := range clients {
		_, err := listNotes(ctx, c.cs)
		if c.replica() != killed.Name {
			// The other replicas' sessions lose nothing.
			if got, want := mustList(t, ctx, c.cs), expect(c.replica()); err != nil || !slices.Equal(got, want) {
				t.Errorf("client %d on %s after r2 died: %v %v, want %v", i, c.replica(), got, err, want)
			}
			continue
		}
		// Its sessions get 404: the session is gone.
		if !errors.Is(err, mcp.ErrSessionMissing) {
			t.Errorf("client %d of the killed replica: %v, want a missing session (404)", i, err)
		}
		// The same, over plain HTTP: another replica answers 404.
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.cs.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "session not found") {
			t.Errorf("a request of a session of the killed replica: %d %s", resp.StatusCode, body)
		}
		// The client initializes again, on a live replica.
		c.cs.Close()
		c.cs = connectVia(t, url)
		if c.replica() == killed.Name {
			t.Fatalf("a new session on the killed replica: %s", c.cs.ID())
		}
		c.notes = []string{"note-new-" + string(rune('a'+i))}
		byReplica[c.replica()] = append(byReplica[c.replica()], c)
		if got, err := addNote(ctx, c.cs, c.notes[0]); err != nil || !slices.Contains(got, c.notes[0]) {
			t.Errorf("client %d after initializing again on %s: %v %v", i, c.replica(), got, err)
		}
	}
	delete(byReplica, killed.Name)
	for _, c := range clients {
		if got, want := mustList(t, ctx, c.cs), expect(c.replica()); !slices.Equal(got, want) {
			t.Errorf("at the end, %s sees %v, want %v", c.cs.ID(), got, want)
		}
	}
}

func mustList(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	got, err := listNotes(ctx, cs)
	if err != nil {
		t.Errorf("%s: %v", cs.ID(), err)
	}
	return got
}

// metricValue sums the samples of a metric whose labels contain each of
// labels, from a /metrics URL.
func metricValue(t *testing.T, url, name string, labels ...string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "localhost" // what Hangar accepts without http.allowed_hosts
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s", url, resp.Status, b)
	}
	sum := 0.0
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if f := strings.Fields(line); ok {
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// loopbackPort returns a port free on each of the loopback addresses ips
// a moment ago.
func loopbackPort(t *testing.T, ips []string) string {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Skipf("cannot listen on %s (127.0.0.0/8 is not all loopback here): %v", ips[0], err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		free := true
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", ip+":"+port)
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		ln.Close()
		if free {
			return port
		}
	}
	t.Fatal("no port free on every replica's address")
	return ""
}

// TestReplicasRoundRobin2026 runs three `hangar serve --replica NAME`
// processes behind nginx (deploy/nginx/nginx.conf.tmpl) as Kubernetes
// runs them: each named after its own address (127.0.0.2 to 127.0.0.4,
// one port, as pods are named after their IPs), one state key, the peer
// URL template http://{replica}:PORT/mcp. 2026 clients go through nginx,
// round robin: their MRTR retries that land on another replica than the
// one holding the call are forwarded and succeed (and some do land
// elsewhere); nginx passes the MCP headers and streams. Then the replica
// holding parked calls is killed: the retries of those calls get a clean
// error telling the client to start again (and starting again works),
// the calls parked on the other replicas complete, and the clients lose
// nothing else.
func TestReplicasRoundRobin2026(t *testing.T) {
	nginxBinary(t) // skip early when absent
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	port := loopbackPort(t, ips)
	plugins := fmt.Sprintf("  - {name: mrtr, path: %s, limits: {max_instances: 16}}\n  - {name: conformance, path: %s}\n",
		testutil.BuildPlugin(t, "./internal/testplugins/mrtr"), testutil.BuildPlugin(t, "./examples/conformance"))
	key := strings.Repeat("6b", 32) // 32 bytes, hex
	cache := t.TempDir()
	var replicas []*replica
	start := func(ip string) *replica {
		cfg := writeConfig(t, fmt.Sprintf(replicaConfig2026, ip+":"+port, port, plugins))
		r := &replica{Name: ip, Addr: ip + ":" + port}
		r.proc = runServe(t, []string{"HANGAR_STATE_KEY=" + key}, "serve", "--config", cfg, "--replica", ip, "--cache-dir", cache)
		return r
	}
	urlRE := regexp.MustCompile(`url=http://` + regexp.QuoteMeta(ips[0]) + `:\d+/mcp`)
	replicas = append(replicas, start(ips[0])) // compiles into the shared cache
	replicas[0].proc.waitLog(t, urlRE)
	for _, ip := range ips[1:] {
		replicas = append(replicas, start(ip))
	}
	for i, r := range replicas[1:] {
		r.proc.waitLog(t, regexp.MustCompile(`url=http://`+regexp.QuoteMeta(ips[i+1])+`:\d+/mcp`))
	}
	for _, r := range replicas {
		r.proc.waitLog(t, readyRE) // the plugins compiled: no call waits for them
	}
	url := "http://" + startNginx(t, replicas) + "/mcp"
	metrics := func(r *replica) string { return "http://" + r.Addr + "/metrics" }
	ctx := context.Background()

	// Six go-sdk clients through nginx, each answering elicitations with
	// its own name, call a tool that elicits three times each.
	conv := mcpschema.NewConversation(t)
	hc := &http.Client{Transport: conv.RoundTripper(nil)}
	type client26 struct {
		name string
		o    *observed
		c    *sdkClient
	}
	var clients []*client26
	for i := range 6 {
		o := newObserved()
		o.name = fmt.Sprintf("client-%d", i)
		c := &client26{name: o.name, o: o}
		c.c = connectSDK(t, o, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, sdkOpts{capable: true})
		if v := c.c.version(); v != v2026 {
			t.Fatalf("%s negotiated %s through nginx, want %s", c.name, v, v2026)
		}
		clients = append(clients, c)
	}
	askAll := func(round string) {
		t.Helper()
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() {
				text, err := c.c.call(ctx, "ask", map[string]any{"message": round}, nil)
				var a struct {
					Nonce   string
					Content map[string]any
				}
				json.Unmarshal([]byte(text), &a)
				var q string
				c.o.get(func(o *observed) bool {
					if len(o.elicitations) > 0 {
						q = o.elicitations[len(o.elicitations)-1]
					}
					return true
				})
				if err != nil || a.Content["name"] != c.name || q != round+" "+a.Nonce {
					t.Errorf("%s, %s: %q %v (asked %q)", c.name, round, text, err, q)
				}
			})
		}
		wg.Wait()
	}
	for round := range 3 {
		askAll(fmt.Sprintf("round-%d", round))
	}
	var perReplica []float64
	n := 0.0
	for _, r := range replicas {
		perReplica = append(perReplica, metricValue(t, metrics(r), "hangar_mrtr_forwarded_total", `outcome="ok"`))
		n += perReplica[len(perReplica)-1]
	}
	t.Logf("18 MRTR calls through nginx: %.0f retries forwarded to the replica holding their call (by replica forwarding: %v)", n, perReplica)
	if n == 0 {
		t.Errorf("no retry was forwarded: round robin did not spread the retries (or they were not counted)")
	}

	// Streaming: a tool's progress reaches the client through nginx as it
	// comes, before its result (the plugin sends 0, 50 and 100, 50 ms
	// apart, then returns).
	o := clients[0].o
	o.add(func(o *observed) { o.progress, o.progressAt = nil, nil })
	if _, err := clients[0].c.call(ctx, "test_tool_with_progress", nil, map[string]any{"progressToken": "nginx"}); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	// The go-sdk client may hand the result to its caller before its
	// handler has taken the last notification, which came before it.
	waitFor(t, "3 progress notifications", func() bool {
		return o.get(func(o *observed) bool { return len(o.progressAt) >= 3 })
	})
	o.get(func(o *observed) bool {
		if len(o.progressAt) != 3 || returned.Sub(o.progressAt[0]) < 80*time.Millisecond {
			t.Errorf("progress through nginx: %v at %v, the result at %v: not streamed", o.progress, o.progressAt, returned)
		}
		return true
	})

	// Tasks through nginx: a task made on one replica is read, answered
	// and followed on each, forwarded to the one holding it.
	tasksMeta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    v2026,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-2026", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	plain := &http.Client{}
	_, msg := post2026(t, plain, url, "tools/call", map[string]any{"name": "sleep_always", "arguments": map[string]any{"ms": 0, "ask": true, "then_ms": 500}, "_meta": tasksMeta})
	res, _ := msg["result"].(map[string]any)
	taskID, _ := res["taskId"].(string)
	if res["resultType"] != "task" || taskID == "" {
		t.Fatalf("a task through nginx: %v", msg)
	}
	taskStatus := func() map[string]any {
		t.Helper()
		status, msg := post2026(t, plain, url, "tasks/get", map[string]any{"taskId": taskID, "_meta": tasksMeta})
		r, _ := msg["result"].(map[string]any)
		if status != http.StatusOK || r["taskId"] != taskID || r["resultType"] != "complete" {
			t.Fatalf("tasks/get through nginx: HTTP %d %v", status, msg)
		}
		return r
	}
	for taskStatus()["status"] != "input_required" {
		time.Sleep(50 * time.Millisecond)
	}
	if _, msg := post2026(t, plain, url, "tasks/update", map[string]any{"taskId": taskID, "_meta": tasksMeta,
		"inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}}); msg["error"] != nil {
		t.Fatalf("tasks/update through nginx: %v", msg)
	}
	for i := 0; ; i++ {
		r := taskStatus() // one request per replica, round robin
		if r["status"] == "completed" {
			if b, _ := json.Marshal(r["result"]); !strings.Contains(string(b), "Ada") {
				t.Fatalf("the task's result: %v", r)
			}
			break
		}
		if i > 200 {
			t.Fatalf("the task never completed: %v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Park nine calls by hand, and find the replica holding each.
	parkedOn := func() []float64 {
		var v []float64
		for _, r := range replicas {
			v = append(v, metricValue(t, metrics(r), "hangar_mrtr_parked_calls"))
		}
		return v
	}
	type parkedCall struct {
		args                 map[string]any
		state, key, question string
		holder               int
	}
	var calls []*parkedCall
	raw := hc
	for i := range 9 {
		before := parkedOn()
		args := map[string]any{"message": fmt.Sprint("parked-", i)}
		_, msg := post2026(t, raw, url, "tools/call", map[string]any{"name": "ask", "arguments": args})
		pc := &parkedCall{args: args, holder: -1}
		pc.state, pc.key, pc.question = inputRequired(t, msg)
		after := parkedOn()
		for j := range after {
			if after[j] == before[j]+1 {
				pc.holder = j
			}
		}
		if pc.holder < 0 {
			t.Fatalf("parked call %d: no replica's hangar_mrtr_parked_calls went up (%v, then %v)", i, before, after)
		}
		calls = append(calls, pc)
	}
	held := make([]int, len(replicas))
	for _, pc := range calls {
		held[pc.holder]++
	}
	victim := slices.Index(held, slices.Max(held))
	t.Logf("parked calls per replica: %v; killing %s", held, replicas[victim].Name)
	replicas[victim].proc.cmd.Process.Kill()
	<-replicas[victim].proc.done

	lost := 0
	for i, pc := range calls {
		params := map[string]any{"name": "ask", "arguments": pc.args, "requestState": pc.state,
			"inputResponses": map[string]any{pc.key: map[string]any{"action": "accept", "content": map[string]any{"name": userName}}}}
		status, msg := post2026(t, raw, url, "tools/call", params)
		if pc.holder == victim {
			// A clean error telling the client to start again.
			e, _ := msg["error"].(map[string]any)
			if m, _ := e["message"].(string); status != http.StatusBadRequest || e["code"] != float64(-32602) || !strings.Contains(m, "start the request again") {
				t.Errorf("retry of call %d, held by the killed replica: HTTP %d %v; want 400 and invalid params telling to start again", i, status, msg)
			}
			lost++
			// Starting again works, on a live replica.
			_, msg = post2026(t, raw, url, "tools/call", map[string]any{"name": "ask", "arguments": pc.args})
			state, key, question := inputRequired(t, msg)
			pc.state, pc.key, pc.question = state, key, question
			params["requestState"] = state
			params["inputResponses"] = map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": userName}}}
			status, msg = post2026(t, raw, url, "tools/call", params)
		}
		var a struct {
			Nonce   string
			Content map[string]any
		}
		json.Unmarshal([]byte(resultText(msg)), &a)
		if status != http.StatusOK || a.Content["name"] != userName || pc.question != fmt.Sprint("parked-", i)+" "+a.Nonce {
			t.Errorf("call %d (held by %s): HTTP %d %v", i, replicas[pc.holder].Name, status, msg)
		}
	}
	t.Logf("%d parked calls lost with their replica (each told to start again, and started again), %d completed", lost, len(calls)-lost)

	// The go-sdk clients lose nothing: they go on, on the live replicas.
	askAll("after the kill")
	if conv.Legacy() != 0 {
		t.Errorf("%d exchanges at an earlier revision", conv.Legacy())
	}
}
