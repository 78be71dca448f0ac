package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func sleeper(t testing.TB) string {
	return testutil.BuildPlugin(t, "./internal/testplugins/sleeper")
}

// warm makes the plugin's first call, which initializes the guest's
// runtime, so that the timings that follow are the calls' own.
func warm(t *testing.T, p *plugin.Plugin) {
	t.Helper()
	if _, err := p.CallTool(context.Background(), nil, "echo", json.RawMessage(`{"text":"warm"}`)); err != nil {
		t.Fatalf("warm-up call: %v", err)
	}
}

// A guest's time.Sleep (WASI poll_oneoff on a clock) ends with its call:
// at the call timeout, and at the caller's cancellation; the instance is
// free for the next call at once.
func TestSleepEndsWithCall(t *testing.T) {
	p := load(t, sleeper(t), plugin.Options{Limits: config.Limits{CallTimeout: 2 * time.Second}})
	warm(t, p)

	start := time.Now()
	_, err := p.CallTool(context.Background(), nil, "sleep", json.RawMessage(`{"ms":20000}`))
	took := time.Since(start)
	if !errors.Is(err, plugin.ErrTimeout) {
		t.Fatalf("sleep 20 s under a 2 s call timeout: err = %v, want ErrTimeout", err)
	}
	if took > 5*time.Second {
		t.Errorf("sleep 20 s under a 2 s call timeout answered after %v", took)
	}
	if inUse, _ := p.Stats(); inUse != 0 {
		t.Errorf("%d instances in use after the timeout", inUse)
	}
	start = time.Now()
	if _, err := p.CallTool(context.Background(), nil, "echo", json.RawMessage(`{"text":"next"}`)); err != nil {
		t.Errorf("the next call: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the next call took %v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start = time.Now()
	_, err = p.CallTool(ctx, nil, "sleep", json.RawMessage(`{"ms":20000}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("sleep cancelled after 200 ms: err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("sleep cancelled after 200 ms answered after %v", d)
	}

	// A sleep that ends in time is a sleep.
	res, err := p.CallTool(context.Background(), nil, "sleep", json.RawMessage(`{"ms":50}`))
	if err != nil || text(t, res) != "slept 50ms" {
		t.Errorf("sleep 50 ms: %v, %v", res, err)
	}
}

// A plugin that sleeps while it starts is listed within its call timeout,
// all exports together, or fails with ErrTimeout.
func TestListingDeadline(t *testing.T) {
	p := load(t, sleeper(t), plugin.Options{
		Config: map[string]string{"startup_sleep_ms": "40000"},
		Limits: config.Limits{CallTimeout: 2 * time.Second},
	})
	start := time.Now()
	_, err := p.ReadLists(context.Background(), plugin.AllLists)
	took := time.Since(start)
	if !errors.Is(err, plugin.ErrTimeout) {
		t.Fatalf("ReadLists of a plugin whose start sleeps 40 s: err = %v, want ErrTimeout", err)
	}
	if took > 5*time.Second {
		t.Errorf("ReadLists answered after %v, want about the 2 s call timeout", took)
	}
	if !strings.Contains(err.Error(), "listing tools") {
		t.Errorf("err = %v, want it to say what was being read", err)
	}
}
