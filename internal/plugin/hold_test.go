package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// silentClient is an MCP client that never answers sampling: its
// CreateMessage waits until its context ends. entered is closed at the
// first request.
type silentClient struct {
	once    sync.Once
	entered chan struct{}
}

func (c *silentClient) CreateMessage(ctx context.Context, _ *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	c.once.Do(func() { close(c.entered) })
	<-ctx.Done()
	return nil, context.Cause(ctx)
}
func (c *silentClient) Elicit(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (c *silentClient) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (*silentClient) Log(context.Context, *mcp.LoggingMessageParams) error { return nil }
func (*silentClient) NotifyProgress(context.Context, *mcp.ProgressNotificationParams) error {
	return nil
}
func (*silentClient) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return nil
}

func loadSleeper(t *testing.T, limits config.Limits) *Plugin {
	t.Helper()
	p := loadBuilt(t, "./internal/testplugins/sleeper", "sleeper", limits)
	if _, err := p.CallTool(context.Background(), nil, "echo", json.RawMessage(`{"text":"warm"}`)); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadBuilt builds the test plugin at pkg and loads it as name with
// limits, closed at the end of the test.
func loadBuilt(t *testing.T, pkg, name string, limits config.Limits) *Plugin {
	t.Helper()
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Load(context.Background(), wasm, Options{Name: name, Limits: limits, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// askSilently starts a call of the sleeper's ask tool from a client that
// never answers, and waits until the call waits for it.
func askSilently(t *testing.T, ctx context.Context, p *Plugin, c *Call) <-chan error {
	t.Helper()
	client := &silentClient{entered: make(chan struct{})}
	c.Host = client
	done := make(chan error, 1)
	go func() {
		res, err := p.CallTool(ctx, c, "ask", json.RawMessage(`{}`))
		if err == nil && res.IsError {
			err = errors.New(res.Content[0].(*mcp.TextContent).Text)
		}
		done <- err
	}()
	select {
	case <-client.entered:
	case <-time.After(time.Minute):
		t.Fatal("the call never asked its client")
	}
	return done
}

// TestHoldEndsClientWait: a call that waits for a client that never
// answers keeps the plugin's only instance for at most the grace (2 s,
// and at most half the call timeout) once another call waits for it;
// its import then fails, and the other call runs, within its own wait.
func TestHoldEndsClientWait(t *testing.T) {
	p := loadSleeper(t, config.Limits{CallTimeout: 4 * time.Second, HostTimeout: time.Minute})
	asked := askSilently(t, context.Background(), p, &Call{ID: "7", Holder: "request 7 of session 3f2a9c1e"})

	start := time.Now()
	res, err := p.CallTool(context.Background(), &Call{ID: "8"}, "echo", json.RawMessage(`{"text":"next"}`))
	waited := time.Since(start)
	if err != nil || res.IsError {
		t.Fatalf("a call while another waits for its client: %v, %v", res, err)
	}
	if waited > 3500*time.Millisecond {
		t.Errorf("the call waited %v for the instance, want about 2s (half the call timeout)", waited)
	}
	select {
	case err := <-asked:
		if err == nil || !strings.Contains(err.Error(), "while another request is waiting for this plugin") {
			t.Errorf("the holder's answer: %v, want its import refused for another request", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the holder never answered")
	}
	t.Logf("the waiting call got the instance after %v", waited.Round(time.Millisecond))
}

// TestBusyNamesHolder: a call that finds no free instance in time is told
// who holds it, doing what, and until when.
func TestBusyNamesHolder(t *testing.T) {
	p := loadSleeper(t, config.Limits{CallTimeout: 30 * time.Second, HostTimeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	asked := askSilently(t, ctx, p, &Call{ID: "7", Holder: "request 7 of session 3f2a9c1e"})
	_, err := p.pool.get(context.Background(), 300*time.Millisecond)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("get with the only instance held: %v, want ErrBusy", err)
	}
	for _, want := range []string{
		"its only instance stayed busy for 300ms, held by request 7 of session 3f2a9c1e (call_tool), waiting for its client's answer until ",
		"from now)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("busy error %q lacks %q", err, want)
		}
	}
	// The hold: the grace (2 s) after the other began to wait.
	if !strings.Contains(err.Error(), "(2s from now)") {
		t.Errorf("busy error %q: want the hold's end, 2 s after the wait began", err)
	}
	cancel()
	<-asked
}
