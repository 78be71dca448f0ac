package mrtr_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// Drain ends a parked call at once, not at the park timeout: the server
// is stopping, and its client may never come back (issue 24, finding 5).
// The plugin's instance is free, the retry learns to start again, and
// no call parks any more; a plain call in progress is left to finish.
func TestDrainEndsParkedCalls(t *testing.T) {
	p := loadPlugin(t, 3)
	m := newManager(t, mrtr.Options{})
	_, _, state := mustInput(t, do(t, m, p, req{params: map[string]any{"name": "ask"}}))
	if st := m.Stats(); st.Parked != 1 || st.Held != 1 {
		t.Fatalf("stats with one call parked: %+v", st)
	}
	start := time.Now()
	if n := m.Drain(); n != 1 {
		t.Errorf("Drain ended %d parked calls, want 1", n)
	}
	eventually(t, "the parked call's instance is back", func() bool {
		inUse, _ := p.Stats()
		st := m.Stats()
		return inUse == 0 && st.Parked == 0 && st.Held == 0
	})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the parked call ended %v after Drain", d)
	}
	r := req{params: map[string]any{"name": "ask"}, state: state, responses: map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}}
	if a := do(t, m, p, r); !errors.Is(a.err, mrtr.ErrCallGone) {
		t.Errorf("the retry of a call ended by the drain: %+v, %v; want ErrCallGone", a.out, a.err)
	} else if je := mrtr.RPCError(a.err); je == nil || je.Code != -32602 {
		t.Errorf("its JSON-RPC error: %+v", je)
	}
	if a := do(t, m, p, req{params: map[string]any{"name": "ask"}}); !errors.Is(a.err, mrtr.ErrClosed) {
		t.Errorf("an eliciting call during the drain: %+v, %v; want ErrClosed", a.out, a.err)
	}
}
