package mrtr_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// clock is a clock a test sets.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Every refused state is refused with its own error, runs nothing and
// consumes nothing: after all of them, the right retry still works.
func TestStateRefusals(t *testing.T) {
	p := loadPlugin(t, 0)
	clk := &clock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
	m := newManager(t, mrtr.Options{Replica: "r1", Now: clk.Now})
	first := req{params: map[string]any{"name": "ask", "arguments": map[string]any{"message": "Who?", "timeout_ms": 60000}}, principal: "alice", caps: allCaps}
	key, q, state := mustInput(t, do(t, m, p, first))
	nonce := nonceOf(t, q)
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	retry := first
	retry.state, retry.responses = state, answer

	flip := func(i int) string {
		b, err := base64.RawURLEncoding.DecodeString(state)
		if err != nil {
			t.Fatal(err)
		}
		b[i%len(b)] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
	otherKey, err := mrtr.New(mrtr.Options{Replica: "r1", Key: []byte("ffffffffffffffffffffffffffffffff")})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := otherKey.Serve(context.Background(), first.request(t), func(ctx context.Context, h plugin.Host) (any, error) {
		return h.ListRoots(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer otherKey.Close()

	for _, tc := range []struct {
		name string
		edit func(r *req)
		want error
	}{
		{"nonce byte flipped", func(r *req) { r.state = flip(0) }, mrtr.ErrStateInvalid},
		{"ciphertext byte flipped", func(r *req) { r.state = flip(20) }, mrtr.ErrStateInvalid},
		{"tag byte flipped", func(r *req) { r.state = flip(-1 + len(state)*3/4) }, mrtr.ErrStateInvalid},
		{"truncated", func(r *req) { r.state = state[:len(state)-4] }, mrtr.ErrStateInvalid},
		{"garbage", func(r *req) { r.state = "not a state" }, mrtr.ErrStateInvalid},
		{"too long", func(r *req) { r.state = strings.Repeat("A", 9000) }, mrtr.ErrStateInvalid},
		{"sealed with another key", func(r *req) { r.state = foreign.Input.RequestState }, mrtr.ErrStateInvalid},
		{"other principal", func(r *req) { r.principal = "mallory" }, mrtr.ErrStatePrincipal},
		{"no principal", func(r *req) { r.principal = "" }, mrtr.ErrStatePrincipal},
		{"other arguments", func(r *req) {
			r.params = map[string]any{"name": "ask", "arguments": map[string]any{"message": "Who else?", "timeout_ms": 60000}}
		}, mrtr.ErrStateMismatch},
		{"other tool", func(r *req) {
			r.params = map[string]any{"name": "sample", "arguments": map[string]any{"message": "Who?", "timeout_ms": 60000}}
		}, mrtr.ErrStateMismatch},
		{"extra parameter", func(r *req) {
			r.params = map[string]any{"name": "ask", "arguments": first.params["arguments"], "task": map[string]any{}}
		}, mrtr.ErrStateMismatch},
		{"other method", func(r *req) { r.method = "prompts/get" }, mrtr.ErrStateMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := retry
			tc.edit(&r)
			_, err := m.Serve(context.Background(), r.request(t), func(context.Context, plugin.Host) (any, error) {
				t.Error("a refused retry ran a call")
				return nil, nil
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Serve: %v, want %v", err, tc.want)
			}
			if e := mrtr.RPCError(err); e.Code != -32602 {
				t.Errorf("RPC error %d %q", e.Code, e.Message)
			}
		})
	}
	st := m.Stats()
	if st.InvalidStates != 7 || st.PrincipalRefusals != 2 || st.MismatchRefusals != 4 || st.Parked != 1 || st.Resumed != 0 {
		t.Fatalf("stats %+v", st)
	}

	// The same state, untouched, by its principal, for its request.
	got := decoded(t, toolText(t, do(t, m, p, retry)))
	if got["nonce"] != nonce {
		t.Fatalf("result %v", got)
	}
	// Replayed: the call is gone.
	if _, err := serve(t, m, p, retry); !errors.Is(err, mrtr.ErrStateReplayed) {
		t.Errorf("replay after the call ended: %v", err)
	}

	t.Run("replay while the call runs on", func(t *testing.T) {
		r := req{params: map[string]any{"name": "ask_twice"}}
		key, _, state := mustInput(t, do(t, m, p, r))
		r.state = state
		r.responses = map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "A"}}}
		key2, _, state2 := mustInput(t, do(t, m, p, r))
		if state2 == state {
			t.Fatal("the second round reused the state")
		}
		_, err := serve(t, m, p, r)
		if !errors.Is(err, mrtr.ErrStateReplayed) {
			t.Errorf("replay: %v", err)
		}
		r.state = state2
		r.responses = map[string]any{key2: map[string]any{"action": "accept", "content": map[string]any{"age": 1}}}
		toolText(t, do(t, m, p, r))
	})

	t.Run("expired", func(t *testing.T) {
		r := req{params: map[string]any{"name": "ask"}}
		key, _, state := mustInput(t, do(t, m, p, r))
		clk.advance(mrtr.DefaultParkTimeout)
		r.state = state
		r.responses = map[string]any{key: map[string]any{"action": "cancel"}}
		_, err := serve(t, m, p, r)
		if !errors.Is(err, mrtr.ErrStateExpired) || mrtr.RPCError(err).Code != -32602 {
			t.Errorf("Serve: %v", err)
		}
		if st := m.Stats(); st.ExpiredStates != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

// A state names the replica that holds its call: another replica with the
// key finds it (Locate) and does not serve it; a replica that restarted
// under the same name no longer has the call.
func TestStateAcrossReplicas(t *testing.T) {
	p := loadPlugin(t, 0)
	a := newManager(t, mrtr.Options{Replica: "a"})
	b := newManager(t, mrtr.Options{Replica: "b"})
	r := req{params: map[string]any{"name": "ask"}}
	key, _, state := mustInput(t, do(t, a, p, r))
	if name, err := b.Locate(state); err != nil || name != "a" {
		t.Errorf("b.Locate = %q, %v", name, err)
	}
	r.state = state
	r.responses = map[string]any{key: map[string]any{"action": "cancel"}}
	_, err := serve(t, b, p, r)
	var ee *mrtr.ElsewhereError
	if !errors.As(err, &ee) || ee.Replica != "a" || !errors.Is(err, mrtr.ErrElsewhere) {
		t.Errorf("b.Serve: %v", err)
	}
	restarted := newManager(t, mrtr.Options{Replica: "a"})
	if _, err := serve(t, restarted, p, r); !errors.Is(err, mrtr.ErrCallGone) || mrtr.RPCError(err).Code != -32602 {
		t.Errorf("restarted a: %v", err)
	}
	// Key rotation: a replica with a new key and the old one as previous
	// opens the old states.
	rotated := newManager(t, mrtr.Options{Replica: "a", Key: []byte("ffffffffffffffffffffffffffffffff"), PreviousKeys: [][]byte{testKey}})
	if name, err := rotated.Locate(state); err != nil || name != "a" {
		t.Errorf("rotated.Locate = %q, %v", name, err)
	}
	if _, err := mrtr.New(mrtr.Options{Key: []byte("short")}); err == nil {
		t.Error("a 5-byte key was accepted")
	}
	if _, err := mrtr.New(mrtr.Options{Replica: "a/b"}); err == nil {
		t.Error("replica a/b was accepted")
	}
	// The original replica still serves it.
	if got := decoded(t, toolText(t, do(t, a, p, r))); got["action"] != "cancel" {
		t.Errorf("result %v", got)
	}
}

// A client that re-serializes the same request (key order, whitespace,
// number and string formatting) still matches its state.
func TestStateMatchesReserializedParams(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	run := func(ctx context.Context, h plugin.Host) (any, error) {
		return h.ListRoots(ctx)
	}
	first := mrtr.Request{Method: "tools/call", Capabilities: allCaps,
		Params: []byte(`{"name":"t","arguments":{"n":1,"list":[1.5,"A",{"b":true,"a":null}],"s":"<&>"},"_meta":{"progressToken":1}}`)}
	out, err := m.Serve(context.Background(), first, run)
	key, _, state := mustInput(t, answer{out, err})
	retry := first
	retry.Params = []byte(`{ "requestState": "` + state + `", "_meta": {"progressToken": "other"},
		"arguments": {"s": "\u003c\u0026\u003e", "list": [15e-1, "\u0041", {"a": null, "b": true}], "n": 1.0},
		"inputResponses": {"` + key + `": {"roots": []}},
		"name": "\u0074", "absent": null }`)
	out, err = m.Serve(context.Background(), retry, nil)
	if err != nil || out.Result == nil {
		t.Fatalf("retry: %+v, %v", out, err)
	}
}

func TestCanonical(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":[true,null]}`, ` { "b" : [ true , null ] , "a" : 1 } `},
		{`1`, `1.0`, `10e-1`, `0.1e1`, `1E0`, `1e+0`, `100e-2`},
		{`0`, `-0`, `0.000`, `0e10`},
		{`-12.5`, `-125e-1`, `-1.25E1`},
		{`"A\u00e9/"`, `"\u0041é\/"`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`123456789012345678901234567890`, `1.2345678901234567890123456789e29`},
	}
	for _, group := range same {
		want, err := mrtr.Canonical([]byte(group[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range group[1:] {
			got, err := mrtr.Canonical([]byte(s))
			if err != nil || string(got) != string(want) {
				t.Errorf("Canonical(%s) = %s, %v; want %s (as %s)", s, got, err, want, group[0])
			}
		}
	}
	different := [][2]string{
		{`1`, `1.0000000000000000000001`},
		{`123456789012345678901234567890`, `123456789012345678901234567891`},
		{`{"a":[]}`, `{"a":{}}`},
		{`"a"`, `"A"`},
		{`[1,2]`, `[2,1]`},
		{`{"a":null}`, `{}`}, // only params' own members drop nulls
	}
	for _, d := range different {
		a, _ := mrtr.Canonical([]byte(d[0]))
		b, _ := mrtr.Canonical([]byte(d[1]))
		if string(a) == string(b) {
			t.Errorf("Canonical(%s) = Canonical(%s) = %s", d[0], d[1], a)
		}
	}
	d1, _ := mrtr.ParamsDigest([]byte(`{"name":"x","arguments":null,"_meta":{"a":1},"requestState":"s","inputResponses":{}}`))
	d2, _ := mrtr.ParamsDigest([]byte(`{"name":"x"}`))
	d3, _ := mrtr.ParamsDigest([]byte(`{"name":"y"}`))
	if d1 != d2 || d1 == d3 {
		t.Errorf("ParamsDigest: %x %x %x", d1, d2, d3)
	}
	if _, err := mrtr.ParamsDigest([]byte(`[1]`)); !errors.Is(err, mrtr.ErrInvalidParams) {
		t.Errorf("ParamsDigest of an array: %v", err)
	}
}

// Of retries racing with one state, exactly one is accepted; the others
// are refused at once, while the winner's call still runs.
func TestConcurrentRetriesOneWins(t *testing.T) {
	m := newManager(t, mrtr.Options{})
	r := req{params: map[string]any{"name": "x"}, caps: allCaps}
	proceed := make(chan struct{})
	out, err := m.Serve(context.Background(), r.request(t), func(ctx context.Context, h plugin.Host) (any, error) {
		res, err := h.Elicit(ctx, &mcp.ElicitParams{Message: "?", RequestedSchema: map[string]any{"type": "object"}})
		if err != nil {
			return nil, err
		}
		<-proceed
		return res.Action, nil
	})
	key, _, state := mustInput(t, answer{out, err})
	r.state = state
	r.responses = map[string]any{key: map[string]any{"action": "accept"}}
	const n = 8
	errs := make(chan error, n)
	var start sync.WaitGroup
	start.Add(1)
	for range n {
		go func() {
			start.Wait()
			out, err := m.Serve(context.Background(), r.request(t), nil)
			if err == nil && out.Result != "accept" {
				err = errors.New("wrong result")
			}
			errs <- err
		}()
	}
	start.Done()
	for i := range n - 1 {
		select {
		case err := <-errs:
			if !errors.Is(err, mrtr.ErrStateReplayed) {
				t.Errorf("a losing retry: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d retries were refused: the state was accepted more than once", i)
		}
	}
	close(proceed)
	if err := <-errs; err != nil {
		t.Errorf("the winning retry: %v", err)
	}
}
