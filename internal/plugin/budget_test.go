package plugin

import (
	"context"
	"errors"
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

// TestBudgetContext: the budget is a context that ends with its parent,
// when it runs out (cause ErrTimeout) and when it stops, whether its Done
// channel was asked for before or not; and a call that only asks Err, as
// the fuel guard does, makes no context of its own.
func TestBudgetContext(t *testing.T) {
	t.Run("runs out, Done asked before", func(t *testing.T) {
		b := new(budget)
		b.start(context.Background(), 30*time.Millisecond)
		select {
		case <-b.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed when the budget ran out")
		}
		if b.Err() != context.Canceled || context.Cause(b) != ErrTimeout {
			t.Errorf("Err %v, cause %v; want context.Canceled, ErrTimeout", b.Err(), context.Cause(b))
		}
		if expired, _ := b.stop(); !expired {
			t.Error("stop: not expired")
		}
	})
	t.Run("runs out, nothing asked before", func(t *testing.T) {
		b := new(budget)
		b.start(context.Background(), 30*time.Millisecond)
		deadline := time.Now().Add(5 * time.Second)
		for b.Err() == nil {
			if time.Now().After(deadline) {
				t.Fatal("Err nil after the budget ran out")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if context.Cause(b) != ErrTimeout {
			t.Errorf("cause %v, want ErrTimeout", context.Cause(b))
		}
		select {
		case <-b.Done():
		default:
			t.Error("Done open after the budget ran out")
		}
		b.stop()
	})
	t.Run("parent ends", func(t *testing.T) {
		cause := errors.New("client went away")
		parent, cancel := context.WithCancelCause(context.Background())
		b := new(budget)
		b.start(parent, time.Minute)
		if b.Err() != nil {
			t.Fatalf("Err %v before anything ended", b.Err())
		}
		done := b.Done()
		cancel(cause)
		<-done
		if b.Err() != context.Canceled || context.Cause(b) != cause {
			t.Errorf("Err %v, cause %v; want context.Canceled, the parent's cause", b.Err(), context.Cause(b))
		}
		if expired, _ := b.stop(); expired {
			t.Error("stop: expired")
		}
	})
	t.Run("stops, then asked", func(t *testing.T) {
		type key struct{}
		b := new(budget)
		b.start(context.WithValue(context.Background(), key{}, "v"), time.Minute)
		if b.Err() != nil || b.Value(key{}) != "v" {
			t.Fatalf("Err %v, value %v while running", b.Err(), b.Value(key{}))
		}
		if b.link.Load() != nil {
			t.Error("asking Err and Value made the budget a context: every call would pay for one")
		}
		b.stop()
		if b.Err() != context.Canceled || context.Cause(b) != context.Canceled || b.Value(key{}) != "v" {
			t.Errorf("after stop: Err %v, cause %v, value %v", b.Err(), context.Cause(b), b.Value(key{}))
		}
		select {
		case <-b.Done():
		default:
			t.Error("Done open after stop")
		}
	})
	// What the context says once the budget stopped stays what it said
	// at the stop, whatever the parent does after, and whenever it is
	// asked (the eager context of before behaved so).
	t.Run("stops, then the parent ends", func(t *testing.T) {
		parent, cancel := context.WithCancelCause(context.Background())
		b := new(budget)
		b.start(parent, time.Minute)
		b.stop()
		cancel(errors.New("later"))
		if b.Err() != context.Canceled || context.Cause(b) != context.Canceled || b.Err() != context.Canceled {
			t.Errorf("Err %v, cause %v; want context.Canceled, context.Canceled", b.Err(), context.Cause(b))
		}
	})
	t.Run("the parent ends, nothing asked, then stops", func(t *testing.T) {
		cause := errors.New("client went away")
		parent, cancel := context.WithCancelCause(context.Background())
		b := new(budget)
		b.start(parent, time.Minute)
		cancel(cause)
		b.stop()
		if b.Err() != context.Canceled || context.Cause(b) != cause || b.Err() != context.Canceled {
			t.Errorf("Err %v, cause %v; want context.Canceled, the parent's cause", b.Err(), context.Cause(b))
		}
	})
}
