package sessions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"
	"github.com/hangar-mcp/hangar/internal/server/sessions"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The edge of the go-sdk's sessions, tested against the core: what its
// handlers tell the core of each request, and what the go-sdk server
// offers as the core's offers change.

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

func load(t testing.TB, name, pkg string, limits config.Limits) *plugin.Plugin {
	t.Helper()
	return servertest.Load(t, name, pkg, limits)
}

// recordingCore is the core, noting the requests the edge hands it.
type recordingCore struct {
	*core.Core
	mu    sync.Mutex
	calls map[string]core.Request // by tool name
}

func (r *recordingCore) CallTool(ctx context.Context, rq core.Request, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	r.mu.Lock()
	r.calls[name] = rq
	r.mu.Unlock()
	return r.Core.CallTool(ctx, rq, name, args)
}

func (r *recordingCore) call(name string) core.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[name]
}

// newEdge returns the core serving mounts and its sessions edge.
func newEdge(t *testing.T, mounts ...core.Mount) (*recordingCore, *sessions.Server) {
	t.Helper()
	return newEdgeTracking(t, httpcalls.NewTracker(), mounts...)
}

// newEdgeTracking is newEdge, with the HTTP requests tracked by tr.
func newEdgeTracking(t *testing.T, tr *httpcalls.Tracker, mounts ...core.Mount) (*recordingCore, *sessions.Server) {
	t.Helper()
	c := &recordingCore{Core: core.New(&core.Options{Logger: servertest.Logger()}), calls: map[string]core.Request{}}
	sdk, err := sessions.New(c, &sessions.Options{Logger: servertest.Logger(), Version: "test", Requests: tr})
	if err != nil {
		t.Fatal(err)
	}
	c.Listen(sdk)
	if err := c.Reload(context.Background(), mounts); err != nil {
		t.Fatal(err)
	}
	return c, sdk
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestSessionRequests: a request of a session reaches the core with the
// session's protocol version, client capabilities and scope, a client sink
// that reaches the session's client, and its JSON-RPC id.
func TestSessionRequests(t *testing.T) {
	ctx := context.Background()
	c, sdk := newEdge(t,
		core.Mount{Plugin: load(t, "conformance", "./examples/conformance", config.Limits{})},
		core.Mount{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{})},
	)
	sampled := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled <- req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "four"}}, nil
		},
	})
	cs, end, err := sdk.ConnectClient(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer end()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo_context", Arguments: map[string]any{}, Meta: mcp.Meta{"trace": "t-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var echo struct {
		ID   string         `json:"id"`
		Meta map[string]any `json:"meta"`
	}
	if err := json.Unmarshal([]byte(text(res)), &echo); err != nil {
		t.Fatal(err)
	}
	rq := c.call("echo_context")
	if rq.ID == "" || rq.ID != echo.ID || echo.Meta["trace"] != "t-1" {
		t.Errorf("the plugin saw id %q and _meta %v; the core was given id %q", echo.ID, echo.Meta, rq.ID)
	}
	if rq.Version != core.Version20251125 || rq.Capabilities == nil || rq.Capabilities.Sampling == nil {
		t.Errorf("version %q, capabilities %+v", rq.Version, rq.Capabilities)
	}
	if rq.Client == nil || rq.Scope == nil || rq.Carrier != nil || rq.Principal != nil {
		t.Errorf("client %v, scope %v, carrier %v, principal %v", rq.Client, rq.Scope, rq.Carrier, rq.Principal)
	}
	if _, ok := rq.Client.(core.Flusher); !ok {
		t.Error("the session's client sink queues, but is no core.Flusher")
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "2+2?"}})
	if err != nil || text(res) != "LLM response: four" || <-sampled != "2+2?" {
		t.Errorf("sampling: %v, %v", res, err)
	}
	if c.call("test_sampling").Scope != rq.Scope {
		t.Error("two calls of one session have different scopes")
	}
}

// TestSessionsMirrorTheCore: the go-sdk server offers what the core offers,
// as a reload changes it; an item the go-sdk refuses is refused.
func TestSessionsMirrorTheCore(t *testing.T) {
	ctx := context.Background()
	conformance := load(t, "conformance", "./examples/conformance", config.Limits{})
	c, sdk := newEdge(t, core.Mount{Plugin: conformance, Prefix: "c"}, core.Mount{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{}), Prefix: "v"})
	cs, end, err := sdk.ConnectClient(ctx, mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	names := func() map[string]bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tool := range res.Tools {
			out[tool.Name] = true
		}
		return out
	}
	if n := names(); !n["c_test_simple_text"] || !n["v_spin"] {
		t.Errorf("tools: %v", n)
	}
	if err := c.Reload(ctx, []core.Mount{{Plugin: conformance, Prefix: "c"}}); err != nil {
		t.Fatal(err)
	}
	if n := names(); !n["c_test_simple_text"] || n["v_spin"] {
		t.Errorf("tools after the reload: %v", n)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "c+test://template/{id}/data" {
		t.Errorf("templates: %v, %v", tmpl, err)
	}

	for _, item := range []any{
		&mcp.ResourceTemplate{URITemplate: "x://{", Name: "broken"},
		&mcp.Tool{Name: "array", InputSchema: map[string]any{"type": "array"}},
		"not an item",
	} {
		if err := sdk.Offer(item); err == nil {
			t.Errorf("the go-sdk took %#v", item)
		}
	}
}

// trackHTTP is what the HTTP layer in front of the edge does for each POST
// to a session (package server): clear the internal headers, track the
// request, and note the ids of the calls it carries (here, of a single
// message).
func trackHTTP(tr *httpcalls.Tracker, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sessions.ClearInternalHeaders(r.Header)
		id := r.Header.Get("Mcp-Session-Id")
		if r.Method != http.MethodPost || id == "" {
			next.ServeHTTP(w, r)
			return
		}
		hr, done := tr.Track(r, id)
		defer done()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.ID != nil {
			hr.Record([]httpcalls.CallRef{{Method: msg.Method, Key: msg.Params.Name, ID: string(msg.ID)}})
		}
		next.ServeHTTP(w, r)
	})
}

// TestSessionsOverHTTP: over Streamable HTTP, a call's id comes from the
// HTTP request that carried it, whose scope is the call's carrier; ending
// the session cancels its calls.
func TestSessionsOverHTTP(t *testing.T) {
	ctx := context.Background()
	tr := httpcalls.NewTracker()
	c, sdk := newEdgeTracking(t, tr, core.Mount{Plugin: load(t, "v1full", "./internal/testplugins/v1full", config.Limits{CallTimeout: time.Minute})})
	store := mcp.NewMemoryEventStore(nil)
	ts := httptest.NewServer(trackHTTP(tr, sdk.StreamableHTTP(store)))
	defer ts.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo_context", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	rq := c.call("echo_context")
	if rq.ID == "" || !strings.Contains(text(res), `"id":"`+rq.ID+`"`) || rq.Carrier == nil {
		t.Errorf("over HTTP: id %q, carrier %v; the plugin saw %s", rq.ID, rq.Carrier, text(res))
	}
	if rq.Carrier != nil {
		select {
		case <-rq.Carrier.Done():
		case <-time.After(10 * time.Second):
			t.Error("the carrier did not end with its HTTP request")
		}
	}

	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spin", Arguments: map[string]any{}})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for c.call("spin").Scope == nil || c.call("spin").Scope.Running() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !sdk.EndSession(cs.ID(), sessions.ErrSessionClosed) || sdk.EndSession("no-such-session", sessions.ErrSessionClosed) {
		t.Error("EndSession did not find the session, or found one that does not exist")
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "request cancelled: context canceled: the session ended") {
			t.Errorf("the session's call: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end with its session")
	}
}

// TestNewChecksWiring: New refuses to make the sessions without the
// tracker of the HTTP requests that carry calls, or with Hooks that leave
// a field unset (a go-sdk server that serves the edge's requests in its
// Middleware but describes their calls as calls of a session of its own,
// when Request is missed); it makes them with every field set.
func TestNewChecksWiring(t *testing.T) {
	c := core.New(&core.Options{Logger: servertest.Logger()})
	full := func() *sessions.Hooks {
		return &sessions.Hooks{
			Versions:     []string{"2026-07-28"},
			Middleware:   func(next mcp.MethodHandler) mcp.MethodHandler { return next },
			SetCacheable: func(context.Context, mcp.Request, *mcp.Cacheable) {},
			Request:      func(_ context.Context, rq core.Request) (core.Request, bool) { return rq, false },
			PluginMeta:   func(meta mcp.Meta) mcp.Meta { return meta },
		}
	}
	if _, err := sessions.New(c, &sessions.Options{Logger: servertest.Logger()}); err == nil || !strings.Contains(err.Error(), "Options.Requests") {
		t.Errorf("no Requests: %v, want an error naming Options.Requests", err)
	}
	if _, err := sessions.New(c, nil); err == nil || !strings.Contains(err.Error(), "Options.Requests") {
		t.Errorf("nil Options: %v, want an error naming Options.Requests", err)
	}
	for field, unset := range map[string]func(h *sessions.Hooks){
		"Versions":     func(h *sessions.Hooks) { h.Versions = []string{} },
		"Middleware":   func(h *sessions.Hooks) { h.Middleware = nil },
		"SetCacheable": func(h *sessions.Hooks) { h.SetCacheable = nil },
		"Request":      func(h *sessions.Hooks) { h.Request = nil },
		"PluginMeta":   func(h *sessions.Hooks) { h.PluginMeta = nil },
	} {
		h := full()
		unset(h)
		_, err := sessions.New(c, &sessions.Options{Logger: servertest.Logger(), Requests: httpcalls.NewTracker(), Hooks: h})
		if err == nil || !strings.Contains(err.Error(), "Hooks."+field) {
			t.Errorf("Hooks without %s: %v, want an error naming it", field, err)
		}
	}
	for _, h := range []*sessions.Hooks{nil, full()} {
		if _, err := sessions.New(c, &sessions.Options{Logger: servertest.Logger(), Requests: httpcalls.NewTracker(), Hooks: h}); err != nil {
			t.Errorf("Hooks %+v: %v", h, err)
		}
	}
}
