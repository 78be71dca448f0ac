package mrtr_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// gatedSink records notes as sink does, and its first call waits until
// gate is closed: a client that reads slowly.
type gatedSink struct {
	sink
	gate chan struct{}
}

func (s *gatedSink) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	<-s.gate
	return s.sink.Log(ctx, p)
}

func (s *gatedSink) NotifyProgress(ctx context.Context, p *mcp.ProgressNotificationParams) error {
	<-s.gate
	return s.sink.NotifyProgress(ctx, p)
}

// A Direct request runs its call on the caller's goroutine as a plain
// call: the result comes back, nothing enters the table, and the call's
// notifications reach the sink in order before Serve returns, without
// the call ever waiting for the client. A request for the client fails.
func TestDirect(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	s := &gatedSink{gate: make(chan struct{})}
	r := req{params: map[string]any{"name": "plain"}, token: "tok", sink: s}.request(t)
	r.Direct = true
	ran := make(chan struct{})
	caller := make(chan struct{})
	var askErr error
	run := func(ctx context.Context, h plugin.Host) (any, error) {
		for i := range 3 {
			h.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprint("note ", i)})
		}
		h.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "tok", Progress: 1, Message: "half"})
		_, askErr = h.Elicit(ctx, &mcp.ElicitParams{Message: "name?"})
		close(ran) // with the sink still blocked: the call did not wait for it
		return "done", nil
	}
	go func() {
		<-ran
		time.Sleep(20 * time.Millisecond)
		close(s.gate)
		close(caller)
	}()
	out, err := m.Serve(context.Background(), r, run)
	if err != nil || out.Result != "done" || out.Input != nil {
		t.Fatalf("Serve = %+v, %v; want the result", out, err)
	}
	want := []string{`log info "note 0"`, `log info "note 1"`, `log info "note 2"`, `progress "tok" half`}
	if got := s.all(); !slices.Equal(got, want) {
		t.Errorf("notes when Serve returned: %q, want %q", got, want)
	}
	if askErr == nil {
		t.Error("a direct call's request for the client succeeded")
	}
	if st := m.Stats(); st.Held != 0 || st.Parked != 0 || st.DroppedNotifications != 0 {
		t.Errorf("stats: %+v", st)
	}
	<-caller
}

// A Direct request ends with its context (ErrRequestEnded), as a call over
// a session does; a retry's parts without requestState are refused before
// anything runs, and a closed Manager runs nothing.
func TestDirectEnds(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	r := req{params: map[string]any{"name": "plain"}}.request(t)
	r.Direct = true
	_, err := m.Serve(ctx, r, func(ctx context.Context, _ plugin.Host) (any, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if !errors.Is(err, mrtr.ErrRequestEnded) {
		t.Errorf("cancelled: %v, want ErrRequestEnded", err)
	}

	runs := 0
	run := func(context.Context, plugin.Host) (any, error) { runs++; return "ran", nil }
	r = req{params: map[string]any{"name": "plain"}, responses: map[string]any{"k": map[string]any{}}}.request(t)
	r.Direct = true
	if _, err := m.Serve(context.Background(), r, run); !errors.Is(err, mrtr.ErrResponsesWithoutState) {
		t.Errorf("inputResponses without requestState: %v, want ErrResponsesWithoutState", err)
	}
	m.Close()
	r = req{params: map[string]any{"name": "plain"}}.request(t)
	r.Direct = true
	if _, err := m.Serve(context.Background(), r, run); !errors.Is(err, mrtr.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if runs != 0 {
		t.Errorf("ran %d times", runs)
	}
}
