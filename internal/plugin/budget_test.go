package plugin

import (
	"context"
	"testing"
	"time"
)

// TestBudgetSpent: the running time a budget reports leaves out its pauses.
func TestBudgetSpent(t *testing.T) {
	b := new(budget)
	b.start(context.Background(), 10*time.Second)
	time.Sleep(20 * time.Millisecond)
	b.pause()
	time.Sleep(600 * time.Millisecond)
	b.resume()
	time.Sleep(20 * time.Millisecond)
	expired, spent := b.stop()
	if expired {
		t.Fatal("budget expired")
	}
	if spent < 40*time.Millisecond || spent >= 600*time.Millisecond {
		t.Errorf("spent %s, want about 40ms: the 600ms pause must not count", spent)
	}
}
