package mrtr_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// stalledSink is the sink of a request whose client stopped reading: its
// first call blocks until release is closed, as a write to a full
// connection does.
type stalledSink struct {
	entered chan struct{} // closed when the first call blocks
	release chan struct{}
	once    sync.Once

	mu        sync.Mutex
	delivered int
}

func (s *stalledSink) note() error {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	s.mu.Lock()
	s.delivered++
	s.mu.Unlock()
	return nil
}

func (s *stalledSink) Log(context.Context, *mcp.LoggingMessageParams) error { return s.note() }
func (s *stalledSink) NotifyProgress(context.Context, *mcp.ProgressNotificationParams) error {
	return s.note()
}

// A plugin whose client stops reading runs on: its notifications wait in
// the request's queue, those beyond QueueSize are dropped and counted,
// and neither the plugin nor Close waits for the client. The sink is
// called on the request's goroutine, never the plugin's, and the queued
// notifications reach it, in order, before Serve returns.
func TestStalledSinkHoldsNothing(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	s := &stalledSink{entered: make(chan struct{}), release: make(chan struct{})}
	const sent = 3 * mrtr.QueueSize
	pluginDone := make(chan struct{})
	r := req{params: map[string]any{"name": "flood"}, token: "t", caps: allCaps, sink: s}
	type served struct {
		out *mrtr.Outcome
		err error
	}
	answered := make(chan served, 1)
	go func() {
		out, err := m.Serve(context.Background(), r.request(t), func(ctx context.Context, h plugin.Host) (any, error) {
			defer close(pluginDone)
			for i := range sent {
				if i == 1 {
					<-s.entered // the request's goroutine is stuck in the sink
				}
				if err := h.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: float64(i)}); err != nil {
					return nil, err
				}
			}
			return "sent", nil
		})
		answered <- served{out, err}
	}()
	select {
	case <-pluginDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin is held by the stalled sink")
	}
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close is held by the stalled sink")
	}
	st := m.Stats()
	// The first went to the sink; QueueSize wait; the rest were dropped.
	if want := uint64(sent - 1 - mrtr.QueueSize); st.QueueFull != want || st.DroppedNotifications != want {
		t.Errorf("QueueFull %d, DroppedNotifications %d: want %d of both", st.QueueFull, st.DroppedNotifications, want)
	}
	select {
	case a := <-answered:
		t.Fatalf("Serve returned %+v while its sink was still blocked", a)
	default:
	}
	close(s.release)
	a := <-answered
	if a.err != nil || a.out.Result != "sent" {
		t.Fatalf("Serve: %+v, %v", a.out, a.err)
	}
	if s.delivered != 1+mrtr.QueueSize {
		t.Errorf("the sink got %d notifications, want %d (the first and the queue)", s.delivered, 1+mrtr.QueueSize)
	}
}

// A request that goes away with notifications queued for it does not
// deliver them: they are dropped and counted.
func TestQueuedNotificationsOfAGoneRequest(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	s := &stalledSink{entered: make(chan struct{}), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	r := req{params: map[string]any{"name": "flood"}, token: "t", caps: allCaps, sink: s}
	queued := make(chan struct{})
	_, err := func() (*mrtr.Outcome, error) {
		go func() {
			<-s.entered
			<-queued
			cancel()
			close(s.release)
		}()
		return m.Serve(ctx, r.request(t), func(ctx context.Context, h plugin.Host) (any, error) {
			for i := range 10 {
				if i == 1 {
					<-s.entered
				}
				h.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: float64(i)})
			}
			close(queued)
			<-ctx.Done() // the call runs until the request goes
			return nil, ctx.Err()
		})
	}()
	if !isErr(err, mrtr.ErrRequestEnded) {
		t.Fatalf("Serve: %v, want ErrRequestEnded", err)
	}
	if s.delivered != 1 {
		t.Errorf("the sink got %d notifications, want 1: those queued for a gone request are dropped", s.delivered)
	}
	if st := m.Stats(); st.DroppedNotifications != 9 || st.QueueFull != 0 {
		t.Errorf("DroppedNotifications %d, QueueFull %d: want 9 and 0", st.DroppedNotifications, st.QueueFull)
	}
}
