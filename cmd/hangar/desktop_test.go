package main_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// httpServer is a `hangar serve` process serving HTTP on 127.0.0.1.
type httpServer struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer // its stderr, line by line
}

// startHTTP runs hangar with args, which must make it serve HTTP on
// 127.0.0.1 (port 0), and waits for the URL it logs.
func startHTTP(t *testing.T, args ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(hangar, args...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &httpServer{cmd: cmd, logs: new(syncBuffer)}
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.logs.Write([]byte(sc.Text() + "\n"))
			if u := urlRE.FindString(sc.Text()); u != "" {
				select {
				case found <- u:
				default:
				}
			}
		}
	}()
	select {
	case s.url = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatalf("hangar did not log its URL:\n%s", s.logs.String())
	}
	return s
}

// stop sends SIGTERM and waits for the process to exit.
func (s *httpServer) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, s.logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("hangar did not stop on SIGTERM:\n%s", s.logs.String())
	}
}

// infoRecords returns the records of logs at info level.
func infoRecords(logs string) []string {
	var out []string
	for l := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(l, " level=INFO ") {
			out = append(out, l)
		}
	}
	return out
}

// TestInfoQuietPerSession: at the default level, sessions coming and going
// over HTTP (initialize, list, call, set the log level, delete) and a whole
// stdio session add no record at info; at debug level they do, so the test
// sees what it would miss.
func TestInfoQuietPerSession(t *testing.T) {
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	ctx := context.Background()
	sessions := func(url string) {
		for range 3 {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "quiet-test", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}}); err != nil {
				t.Fatal(err)
			}
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
			cs.Close()
		}
	}
	for _, level := range []string{"info", "debug"} {
		s := startHTTP(t, "serve", "--log-level", level, "--http", "127.0.0.1:0", legacy)
		before := len(infoRecords(s.logs.String()))
		sessions(s.url)
		time.Sleep(200 * time.Millisecond) // records of the last session's end
		after := s.logs.String()
		s.stop(t)
		perSession := infoRecords(after)[before:]
		debugSession := strings.Contains(after, "level=DEBUG") && strings.Contains(after, "session")
		switch level {
		case "info":
			if len(perSession) > 0 {
				t.Errorf("info records while sessions came and went:\n%s", strings.Join(perSession, "\n"))
			}
		case "debug":
			if !debugSession {
				t.Errorf("no debug record of the sessions at --log-level debug; the test would miss them:\n%s", after)
			}
		}
	}

	// stdio: one session, start to end.
	cmd := exec.Command(hangar, "serve", legacy)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	var logs syncBuffer
	cmd.Stderr = &logs
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "quiet-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	for _, r := range infoRecords(logs.String()) {
		if !strings.Contains(r, `msg="plugins ready"`) {
			t.Errorf("info record of a stdio session: %s", r)
		}
	}
}
