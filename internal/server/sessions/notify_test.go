package sessions

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestNotifierBounds: a stalled client leaves at most notifyQueue notes
// queued; further log notes are dropped, a progress note replaces the one
// queued for its token, and nothing waits.
func TestNotifierBounds(t *testing.T) {
	var n notifier
	n.init(nil)
	defer n.close()
	stall := make(chan struct{})
	var mu sync.Mutex
	var sent []string
	send := func(s string) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			sent = append(sent, s)
			mu.Unlock()
			return nil
		}
	}
	ctx := context.Background()
	n.push(&note{ctx: ctx, size: 1, send: func(context.Context) error { <-stall; return nil }}, false)
	// The writer takes the first note and blocks in it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n.mu.Lock()
		empty := len(n.queue) == 0
		n.mu.Unlock()
		if empty {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not start")
		}
		time.Sleep(time.Millisecond)
	}

	start := time.Now()
	first := n.push(&note{ctx: ctx, size: 1, token: "a", send: send("progress 1")}, false)
	for range 2 * notifyQueue {
		n.push(&note{ctx: ctx, size: 1, send: send("log")}, false)
	}
	if got := n.push(&note{ctx: ctx, size: 1, token: "a", send: send("progress 2")}, false); got != first {
		t.Errorf("progress for a queued token: seq %d, want the queued one's %d", got, first)
	}
	if got := n.push(&note{ctx: ctx, size: 1, token: "b", send: send("progress b")}, false); got != 0 {
		t.Errorf("progress for a new token on a full queue: seq %d, want dropped", got)
	}
	if got := n.push(&note{ctx: ctx, size: 1, send: send("essential")}, true); got == 0 {
		t.Error("an essential note was dropped")
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("pushing to a stalled client took %v", elapsed)
	}
	n.mu.Lock()
	queued, dropped := len(n.queue), n.dropped
	n.mu.Unlock()
	if queued != notifyQueue+1 || dropped != notifyQueue+2 {
		t.Errorf("queued %d, dropped %d; want %d, %d", queued, dropped, notifyQueue+1, notifyQueue+2)
	}

	// A note bigger than the byte bound is dropped.
	if got := n.push(&note{ctx: ctx, size: notifyBytes + 1, send: send("huge")}, false); got != 0 {
		t.Error("a note over the byte bound was queued")
	}

	// The client reads again: everything queued is sent, in order, the
	// merged progress note as its latest version.
	close(stall)
	n.flush(n.seq)
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != notifyQueue+1 || sent[0] != "progress 2" || sent[1] != "log" || sent[len(sent)-1] != "essential" {
		t.Errorf("sent %d notes: first %q, last %q", len(sent), sent[0], sent[len(sent)-1])
	}
}
