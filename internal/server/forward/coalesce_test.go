package forward_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/forward"
)

// Retries of one state sent to a replica that does not hold its call are
// forwarded one at a time (mrtr.Manager.BeginForward before
// Forwarder.ForwardRetry, as the HTTP edge does), and a state a forwarded
// retry used is refused before it is forwarded again (issue 24, finding 7): 20 racing retries
// opened 20 connections to a hung owner.
func TestForwardsCoalescedPerState(t *testing.T) {
	p := loadPlugin(t)
	owner := newManager(t, mrtr.Options{Replica: "r2"})
	state := parked(t, owner, p)
	here := newManager(t, mrtr.Options{Replica: "r1"})

	// The owner answers what the test says: the same state again (an
	// answer was missing: the state stays good), or a result.
	var conns atomic.Int64
	answer := make(chan string)
	peer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := <-answer
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", body)
	}))
	peer.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	peer.Start()
	defer peer.Close()
	f, err := forward.New(forward.Options{Self: "r1", Peers: map[string]string{"r2": peer.URL}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	send := func() (bool, error, string) {
		end, err := here.BeginForward(state)
		if err != nil {
			return false, err, ""
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
		used, err := f.ForwardRetry(w, r, []byte("{}"), "r2", []byte("1"), state)
		end(used)
		return used, err, w.Body.String()
	}

	var wg sync.WaitGroup
	var inFlight atomic.Int64
	results := make(chan bool, 20)
	for range 20 {
		wg.Go(func() {
			used, err, _ := send()
			switch {
			case errors.Is(err, mrtr.ErrRetryInFlight):
				inFlight.Add(1)
			case err != nil:
				t.Errorf("a forward: %v", err)
			default:
				results <- used
			}
		})
	}
	// The one forward that went waits for the owner; the others were
	// refused at once.
	deadline := time.Now().Add(10 * time.Second)
	for inFlight.Load() < 19 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := inFlight.Load(); n != 19 {
		t.Errorf("%d of 20 racing retries refused as in flight, want 19", n)
	}
	answer <- `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"` + state + `"}}`
	wg.Wait()
	if used := <-results; used {
		t.Errorf("an answer with the same state again counted as using it")
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections to the owner for 20 racing retries of one state, want 1", n)
	}
	if je := mrtr.RPCError(mrtr.ErrRetryInFlight); je == nil || je.Code != -32602 || !strings.Contains(je.Message, "wait for that retry's answer") {
		t.Errorf("the in-flight refusal: %+v", je)
	}

	// The state is still good: a retry goes, and the owner's answer uses it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if used, err, _ := send(); err != nil || !used {
			t.Errorf("a retry the owner completed: used %v, %v", used, err)
		}
	}()
	answer <- `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`
	<-done
	if _, err, _ := send(); !errors.Is(err, mrtr.ErrStateReplayed) {
		t.Errorf("a retry of a state the owner used: %v; want ErrStateReplayed before forwarding", err)
	}
	if st := here.Stats(); st.InFlightRefusals != 19 || st.ReplayedStates != 1 {
		t.Errorf("stats: %+v", st)
	}
}

// parked starts a call of the mrtr test plugin's ask tool on m, which
// asks its client for input, and returns the requestState of its
// input_required answer.
func parked(t *testing.T, m *mrtr.Manager, p *plugin.Plugin) string {
	t.Helper()
	out, err := m.Serve(t.Context(), mrtr.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"ask","_meta":{}}`), Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}, func(ctx context.Context, host plugin.Host) (any, error) {
		return p.CallTool(ctx, &plugin.Call{Host: host, ID: "1", Meta: map[string]any{}}, "ask", json.RawMessage("null"))
	})
	if err != nil || out.Input == nil || out.Input.RequestState == "" {
		t.Fatalf("the ask call: %+v, %v; want input_required", out, err)
	}
	return out.Input.RequestState
}
