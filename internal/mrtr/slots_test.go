package mrtr_test

import (
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// A call's place under the caps is freed the moment its plugin stops
// waiting for the answer, not when its state expires (issue 24, finding
// 1: 1,000 asks that gave up after 1 ms held every slot for the park
// timeout). The retry with the state still gets what the plugin did next.
func TestSlotFreedWhenThePluginStopsWaiting(t *testing.T) {
	p := loadPlugin(t, 6)
	m := newManager(t, mrtr.Options{MaxParked: 5})
	var first req
	for i := range 20 {
		r := req{params: map[string]any{"name": "ask", "arguments": map[string]any{"timeout_ms": 1}}, caps: allCaps}
		out, err := serve(t, m, p, r)
		if err != nil {
			t.Fatalf("ask %d with timeout_ms 1: %v (stats %+v)", i+1, err, m.Stats())
		}
		if i == 0 && out.Input != nil {
			first = r
			first.state = out.Input.RequestState
			for k := range out.Input.InputRequests {
				first.responses = map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"name": "late"}}}
			}
		}
		eventually(t, "the plugin gave up and its slot is free", func() bool {
			st := m.Stats()
			return st.Held == 0 && st.Parked == 0
		})
	}
	if st := m.Stats(); st.CapRefusals != 0 || st.Expired != 0 {
		t.Errorf("stats after 20 asks that gave up: %+v; want no refusal and nothing expired", st)
	}
	if first.state != "" {
		out, err := serve(t, m, p, first)
		if err != nil || out.Result == nil {
			t.Errorf("the retry of the first ask after its plugin gave up: %+v, %v; want what the plugin did next", out, err)
		}
	}
	// The cap is whole: five calls park, the sixth is refused.
	for i := range 5 {
		if a := do(t, m, p, req{params: map[string]any{"name": "ask"}}); a.err != nil || a.out.Input == nil {
			t.Fatalf("eliciting call %d: %+v, %v", i+1, a.out, a.err)
		}
	}
	if a := do(t, m, p, req{params: map[string]any{"name": "ask"}}); !errors.Is(a.err, mrtr.ErrServerCap) {
		t.Errorf("a sixth eliciting call: %+v, %v; want ErrServerCap", a.out, a.err)
	}
	if st := m.Stats(); st.Held != 5 || st.Parked != 5 {
		t.Errorf("stats with five parked: %+v", st)
	}
}

// A principal at its cap can still make a call that parks nothing: the
// caps count calls waiting for input, and only a call that asks is
// refused (issue 24, finding 1).
func TestPlainCallAtThePrincipalCap(t *testing.T) {
	p := loadPlugin(t, 4)
	m := newManager(t, mrtr.Options{MaxParkedPerPrincipal: 2})
	alice := func(name string, args map[string]any) answer {
		return do(t, m, p, req{params: map[string]any{"name": name, "arguments": args}, principal: "alice"})
	}
	for i := range 2 {
		if a := alice("ask", nil); a.err != nil || a.out.Input == nil {
			t.Fatalf("alice's eliciting call %d: %+v, %v", i+1, a.out, a.err)
		}
	}
	if a := alice("ask", map[string]any{"timeout_ms": 30_000}); !errors.Is(a.err, mrtr.ErrPrincipalCap) {
		t.Fatalf("alice's third eliciting call: %+v, %v; want ErrPrincipalCap", a.out, a.err)
	}
	for i := range 3 {
		a := alice("count", nil)
		if a.err != nil || a.out.Result == nil {
			t.Fatalf("alice's plain call %d at her cap: %+v, %v", i+1, a.out, a.err)
		}
		if res, ok := a.out.Result.(*mcp.CallToolResult); !ok || res.IsError {
			t.Errorf("alice's plain call %d at her cap: %+v", i+1, a.out.Result)
		}
	}
	if st := m.Stats(); st.Held != 2 || st.CapRefusals != 1 {
		t.Errorf("stats: %+v; want 2 held, 1 refusal", st)
	}
}

// The outcomes of ended calls that wait for their retries are bounded too
// (their calls no longer count against the caps): beyond max_parked of
// them, a call that ends is forgotten, and its retry learns to start
// again.
func TestKeptOutcomesAreBounded(t *testing.T) {
	p := loadPlugin(t, 2)
	m := newManager(t, mrtr.Options{MaxParked: 2})
	var retries []req
	for i := range 4 {
		r := req{params: map[string]any{"name": "ask", "arguments": map[string]any{"timeout_ms": 1}}, caps: allCaps}
		a := do(t, m, p, r)
		if a.err != nil {
			t.Fatalf("ask %d: %v", i+1, a.err)
		}
		if a.out.Input == nil {
			continue // the plugin gave up before the request was answered: nothing to retry
		}
		r.state = a.out.Input.RequestState
		for k := range a.out.Input.InputRequests {
			r.responses = map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"name": "late"}}}
		}
		retries = append(retries, r)
	}
	if len(retries) < 3 {
		t.Skipf("only %d of 4 asks were answered input_required before their plugins gave up", len(retries))
	}
	eventually(t, "the plugins gave up", func() bool { inUse, _ := p.Stats(); return inUse == 0 && m.Stats().Held == 0 })
	time.Sleep(100 * time.Millisecond) // the calls' ends follow their instances' return
	kept, gone := 0, 0
	for i, r := range retries {
		switch a := do(t, m, p, r); {
		case a.err == nil && a.out.Result != nil:
			kept++
		case errors.Is(a.err, mrtr.ErrCallGone):
			gone++
		default:
			t.Errorf("retry %d: %+v, %v; want what the plugin did next, or ErrCallGone", i+1, a.out, a.err)
		}
	}
	if kept != 2 || gone != len(retries)-2 {
		t.Errorf("%d retries got their outcome and %d learnt the call was gone; want 2 kept (max_parked)", kept, gone)
	}
}
