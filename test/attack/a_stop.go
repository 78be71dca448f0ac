package main

// Section 5: graceful stop.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

func init() {
	register(
		&attack{
			id: "5.1", name: "sigterm-http",
			attempt: "SIGTERM to a server over HTTP during 8 calls of 3 s and one of 2 minutes (drain_timeout 6s), each from its own session; a call and a new session during the drain",
			run:     sigtermHTTP,
		},
		&attack{
			id: "5.2", name: "sigterm-stdio",
			attempt: "SIGTERM to a server over stdio during 8 calls of 3 s and one of 2 minutes (drain_timeout 6s) in one session",
			run:     sigtermStdio,
		},
	)
}

const drainConfig = "  drain_timeout: 6s\nplugins:\n  - name: flood\n    path: %s\n    limits: {max_instances: 9, call_timeout: 5m}\n"

// drainCalls makes 8 calls of 3 s and one of 2 minutes, each through the
// session call picks, and waits until all have started; it returns the
// channel their answers arrive on.
func drainCalls(a *A, started <-chan struct{}, session func(i int) *mcp.ClientSession) <-chan error {
	answers := make(chan error, 9)
	for i := range 9 {
		ms := 3000
		if i == 8 {
			ms = 120000
		}
		cs := session(i)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{
				Name: "sleep_ms", Arguments: map[string]any{"ms": ms},
				Meta: mcp.Meta{"progressToken": fmt.Sprint("call", i)},
			})
			if err == nil {
				text := ""
				if len(res.Content) > 0 {
					text = res.Content[0].(*mcp.TextContent).Text
				}
				if want := fmt.Sprintf("slept %dms", ms); text != want || res.IsError {
					err = fmt.Errorf("answered %q (isError %v), want %q", text, res.IsError, want)
				}
			}
			answers <- err
		}()
	}
	for n := range 9 {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			a.Fatalf("the calls did not start (%d did)", n)
		}
	}
	return answers
}

// drained collects the 9 answers: 8 results and one error at the drain
// timeout. A call left without an answer fails the attack.
func drained(a *A, answers <-chan error, start time.Time, note string) {
	finished, cancelled := 0, 0
	var last time.Duration
	for range 9 {
		select {
		case err := <-answers:
			last = time.Since(start)
			switch {
			case err == nil:
				finished++
			case strings.Contains(err.Error(), "drain timeout"):
				cancelled++
			default:
				a.Errorf("call: %v", err)
			}
		case <-time.After(60 * time.Second):
			a.Fatalf("a call got no answer 60 s after SIGTERM (%d finished, %d cancelled)", finished, cancelled)
		}
	}
	a.Figure("calls answered", "9 of 9: %d finished, %d answered with a JSON-RPC error at the drain timeout; the last %v after SIGTERM%s", finished, cancelled, round(last), note)
	a.Check(finished == 8 && cancelled == 1, "finished %d, cancelled %d; want 8 and 1", finished, cancelled)
}

func sigtermHTTP(a *A) {
	p := a.serve(nil, "--config", a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:0\n"+drainConfig, a.env.flood)))
	started := make(chan struct{}, 16)
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { started <- struct{}{} }}
	answers := drainCalls(a, started, func(int) *mcp.ClientSession { return a.client(p.url, opts) })
	late := a.client(p.url, nil)

	start := time.Now()
	p.signal(syscall.SIGTERM)
	p.waitLog("letting calls in progress finish", 1, 30*time.Second)
	_, err := callText(a.ctx, late, "echo", map[string]any{"text": "late"})
	a.Check(err != nil && strings.Contains(err.Error(), "shutting down"), "a call during the drain: %v, want a shutting-down error", err)
	code, body, _ := a.raw(p.url).initialize(a.ctx)
	a.Check(code == http.StatusServiceUnavailable, "a new session during the drain: %d %s", code, body)
	a.Figure("during the drain", "a call: %v; a new session: HTTP %d", err, code)
	drained(a, answers, start, " (5 of 8 got no answer before the fix)")
	exit := p.wait(30 * time.Second)
	a.Figure("exit", "code %d, %v after SIGTERM", exit, since(start))
	a.Check(exit == 0, "exit code %d", exit)
	a.Result("every call was answered: those that finished in the drain time with their result, the other with an error")
}

func sigtermStdio(a *A) {
	cfg := a.config(fmt.Sprintf("http:\n"+drainConfig, a.env.flood))
	cmd := exec.Command(a.env.hangar, "serve", "--stdio", "--cache-dir", a.env.compiled, "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+a.TempDir())
	var log testutil.SyncBuffer
	cmd.Stderr = &log
	started := make(chan struct{}, 16)
	ctx, cancel := context.WithTimeout(a.ctx, 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "attack", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { started <- struct{}{} },
	}).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		a.Fatalf("connecting over stdio: %v", err)
	}
	a.Cleanup(func() {
		cmd.Process.Kill()
		cs.Close()
	})
	exited := make(chan error, 1)
	answers := drainCalls(a, started, func(int) *mcp.ClientSession { return cs })
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		a.Fatalf("%v", err)
	}
	drained(a, answers, start, " (the one cancelled got none before the fix)")
	go func() { exited <- cs.Wait() }()
	select {
	case <-exited:
		a.Figure("exit", "%v after SIGTERM", since(start))
	case <-time.After(30 * time.Second):
		a.Errorf("hangar still running 30 s after SIGTERM:\n%s", tail(log.String(), 5))
	}
	a.Result("every call was answered over stdio before hangar exited")
}
