package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/server"
)

// A call parked for a client that never comes back does not hold the
// drain for its timeout (issue 24, finding 5): Drain ends it at once, its
// instance goes back, and its retry learns to start again.
func TestDrainEndsParkedCalls(t *testing.T) {
	p := mrtrPlugin(t)
	s := newServer(t, nil, server.Mount{Plugin: p})
	c := newModern(t, serveHTTP(t, s, nil))
	first := c.post(1, "tools/call", askParams(nil, nil)).result()
	if first["resultType"] != "input_required" {
		t.Fatalf("the eliciting call: %v", first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	s.Drain(ctx)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Drain took %v with a call parked; want it ended at once", took)
	}
	waitIdle(t, p, 10*time.Second)
	r := c.post(2, "tools/call", askParams(first["requestState"], map[string]any{"elicitation-1": accept("Ada")}))
	if r.status != 400 || r.errorCode() != -32602 || !strings.Contains(r.raw, "start the request again") {
		t.Errorf("the retry of a call the drain ended: %s", r)
	}
}
