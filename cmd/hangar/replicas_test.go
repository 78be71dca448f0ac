package main_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

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

func connectVia(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, nil)
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
		return nil, errors.New("add_note failed")
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
// behind nginx (deploy/nginx/nginx.conf.tmpl) and MCP clients through it:
// each session sticks to the replica that created it; when a replica is
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
