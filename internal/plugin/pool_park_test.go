package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
)

// loadMRTR loads internal/testplugins/mrtr (a plugin that keeps state:
// its count tool) with limits, closed at the end of the test.
func loadMRTR(t *testing.T, limits config.Limits) *Plugin {
	t.Helper()
	return loadBuilt(t, "./internal/testplugins/mrtr", "mrtr", limits)
}

// parkingClient is an MCP client that never answers elicitation, as a
// 2026-07-28 client that never retries its parked call: its Elicit waits
// until its context ends. asked counts the elicitations.
type parkingClient struct {
	silentClient
	asked atomic.Int64
}

func (c *parkingClient) Elicit(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	c.asked.Add(1)
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// toolText calls tool and returns its text, or the error (a tool error's
// text as an error).
func toolText(ctx context.Context, p *Plugin, c *Call, tool, args string) (string, error) {
	res, err := p.CallTool(ctx, c, tool, json.RawMessage(args))
	if err != nil {
		return "", err
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// TestParkedCallsYield: the plugin keeps state, so it has one instance;
// six callers loop on a tool that asks their client, who never answers.
// Another caller, looping on a tool that does not ask, is served within a
// few seconds (the grace, then the parked calls before it, each ended as
// soon as it asks), not after the parked calls' host timeout; the parked
// calls are told why they ended.
func TestParkedCallsYield(t *testing.T) {
	p := loadMRTR(t, config.Limits{})
	if p.MaxInstances() != 1 {
		t.Fatalf("the mrtr plugin has %d instances, want 1 (it keeps state)", p.MaxInstances())
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var held, asked atomic.Int64
	for range 6 {
		client := &parkingClient{}
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := toolText(ctx, p, &Call{Host: client, Holder: "attacker"}, "ask", `{}`)
				if err != nil && strings.Contains(err.Error(), ErrHeld.Error()) {
					held.Add(1)
				}
			}
			asked.Add(client.asked.Load())
		})
	}
	// Wait until the attackers hold the instance.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		p.pool.mu.Lock()
		parked, queued := len(p.pool.parked), len(p.pool.queue)
		p.pool.mu.Unlock()
		if parked == 1 && queued >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d parked, %d waiting: the attackers never held the plugin", parked, queued)
		}
	}
	var waits []time.Duration
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); {
		start := time.Now()
		if _, err := toolText(context.Background(), p, &Call{Holder: "victim"}, "count", `{}`); err != nil {
			t.Fatalf("the victim's call after %v: %v", time.Since(start), err)
		}
		waits = append(waits, time.Since(start))
	}
	stop()
	wg.Wait()
	slices.Sort(waits)
	worst := waits[len(waits)-1]
	t.Logf("victim: %d calls, median %v, max %v; attackers: %d elicitations, %d ended for others", len(waits), waits[len(waits)/2].Round(time.Millisecond), worst.Round(time.Millisecond), asked.Load(), held.Load())
	if worst > 5*time.Second {
		t.Errorf("the victim waited up to %v under 6 parked callers, want at most 5s", worst)
	}
	if held.Load() == 0 {
		t.Error("no parked call was told it was ended for another request")
	}
}
