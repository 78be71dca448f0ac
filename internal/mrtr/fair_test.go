package mrtr_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// At max_parked, a client holding fewer parked calls than another is not
// locked out (issue 24, finding 1): once the other's oldest call has been
// parked EvictGrace, it ends for the newcomer, and its retry is told why.
// Anonymous clients are told apart by their address; a client holding as
// many as any other is refused, so that it cannot churn the others' calls.
func TestAnonymousClientsShareTheCap(t *testing.T) {
	p := loadPlugin(t, 6)
	m := newManager(t, mrtr.Options{MaxParked: 3})
	ask := func(client string) answer {
		r := req{params: map[string]any{"name": "ask"}, caps: allCaps}
		ctx := t.Context()
		rq := r.request(t)
		rq.Client = client
		out, err := m.Serve(ctx, rq, pluginRun(p, r, nil))
		return answer{out, err}
	}
	var first string
	for i := range 3 {
		_, _, state := mustInput(t, ask("10.0.0.1"))
		if i == 0 {
			first = state
		}
	}
	start := time.Now()
	if a := ask("10.0.0.1"); !errors.Is(a.err, mrtr.ErrServerCap) {
		t.Fatalf("a fourth call of the client holding every place: %+v, %v; want ErrServerCap", a.out, a.err)
	}
	if a := ask("10.0.0.2"); time.Since(start) < mrtr.EvictGrace && !errors.Is(a.err, mrtr.ErrServerCap) {
		t.Fatalf("another client's call before the grace: %+v, %v; want ErrServerCap", a.out, a.err)
	}
	time.Sleep(time.Until(start.Add(mrtr.EvictGrace)))
	mustInput(t, ask("10.0.0.2"))
	eventually(t, "the oldest call of 10.0.0.1 ended", func() bool { return m.Stats().Evicted == 1 && m.Stats().Parked == 3 })
	r := req{params: map[string]any{"name": "ask"}, state: first, responses: map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "late"}}}}
	rq := r.request(t)
	rq.Client = "10.0.0.1"
	_, err := m.Serve(t.Context(), rq, nil)
	if !errors.Is(err, mrtr.ErrEvicted) {
		t.Errorf("the retry of the ended call: %v; want ErrEvicted", err)
	} else if je := mrtr.RPCError(err); je == nil || je.Code != mrtr.CodeTooManyParked {
		t.Errorf("its JSON-RPC error: %+v", je)
	}
	// 10.0.0.1 (2) holds more than 10.0.0.2 (1), which asks again: the
	// next of 10.0.0.1's is ended (parked longer than the grace already).
	mustInput(t, ask("10.0.0.2"))
	// Now 10.0.0.2 holds 2 and 10.0.0.1 one: 10.0.0.2 is refused.
	if a := ask("10.0.0.2"); !errors.Is(a.err, mrtr.ErrServerCap) {
		t.Errorf("a third call of the client now holding the most: %+v, %v; want ErrServerCap", a.out, a.err)
	}
	if st := m.Stats(); st.Held != 3 || st.Evicted != 2 {
		t.Errorf("stats: %+v; want 3 held, 2 ended for another client", st)
	}
}
