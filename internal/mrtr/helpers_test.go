package mrtr_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

var (
	engineOnce sync.Once
	engine     *plugin.Engine
	engineErr  error
)

// loadPlugin compiles internal/testplugins/mrtr (once per run) and loads
// it with at most instances instances (0: Hangar's choice, one).
func loadPlugin(t *testing.T, instances int) *plugin.Plugin {
	t.Helper()
	engineOnce.Do(func() { engine, engineErr = plugin.NewEngine(testutil.CacheDir()) })
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./internal/testplugins/mrtr"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(context.Background(), wasm, plugin.Options{Name: "mrtr", Limits: config.Limits{MaxInstances: instances}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// testKey is the state key the tests' managers share, as replicas do.
var testKey = []byte("0123456789abcdef0123456789abcdef")

func newManager(t *testing.T, o mrtr.Options) *mrtr.Manager {
	t.Helper()
	if o.Key == nil {
		o.Key = testKey
	}
	m, err := mrtr.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// allCaps declares every kind of input.
var allCaps = &mcp.ClientCapabilities{
	Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	Sampling:    &mcp.SamplingCapabilities{},
	RootsV2:     &mcp.RootCapabilities{},
}

// sink records the notifications of one request.
type sink struct {
	mu    sync.Mutex
	notes []string
}

func (s *sink) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	b, _ := json.Marshal(p.Data)
	s.add("log " + string(p.Level) + " " + string(b))
	return nil
}

func (s *sink) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	b, _ := json.Marshal(p.ProgressToken)
	s.add("progress " + string(b) + " " + p.Message)
	return nil
}

func (s *sink) add(n string) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
}

func (s *sink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.notes...)
}

// req is one client request for the tests.
type req struct {
	method    string
	params    map[string]any // without _meta, requestState, inputResponses
	token     any            // _meta.progressToken
	state     string
	responses map[string]any
	principal string
	caps      *mcp.ClientCapabilities
	sink      mrtr.Sink
}

func (r req) request(t *testing.T) mrtr.Request {
	t.Helper()
	p := map[string]any{}
	for k, v := range r.params {
		p[k] = v
	}
	meta := map[string]any{}
	if r.token != nil {
		meta["progressToken"] = r.token
	}
	p["_meta"] = meta
	if r.state != "" {
		p["requestState"] = r.state
	}
	if r.responses != nil {
		p["inputResponses"] = r.responses
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	method := r.method
	if method == "" {
		method = "tools/call"
	}
	return mrtr.Request{Method: method, Params: raw, Principal: r.principal, Capabilities: r.caps, Sink: r.sink}
}

// pluginRun returns the Run that serves r with p, as an edge's would: the
// plugin call for the method, with the request's _meta. The plugin's
// result, whoever gets it, is also sent on results, when not nil.
func pluginRun(p *plugin.Plugin, r req, results chan<- any) mrtr.Run {
	return func(ctx context.Context, host plugin.Host) (any, error) {
		meta := map[string]any{}
		if r.token != nil {
			meta["progressToken"] = r.token
		}
		call := &plugin.Call{Host: host, ID: "1", Meta: meta}
		var res any
		var err error
		switch r.method {
		case "prompts/get":
			res, err = p.GetPrompt(ctx, call, r.params["name"].(string), nil)
		case "resources/read":
			res, err = p.ReadResource(ctx, call, r.params["uri"].(string))
		default:
			args, _ := json.Marshal(r.params["arguments"])
			res, err = p.CallTool(ctx, call, r.params["name"].(string), args)
		}
		if results != nil {
			if err != nil {
				results <- err
			} else {
				results <- res
			}
		}
		return res, err
	}
}

// serve sends r to m, running it on p when it starts a call.
func serve(t *testing.T, m *mrtr.Manager, p *plugin.Plugin, r req) (*mrtr.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r.caps == nil {
		r.caps = allCaps
	}
	return m.Serve(ctx, r.request(t), pluginRun(p, r, nil))
}

// answer is what Serve returned.
type answer struct {
	out *mrtr.Outcome
	err error
}

// do is serve, returning one value.
func do(t *testing.T, m *mrtr.Manager, p *plugin.Plugin, r req) answer {
	t.Helper()
	out, err := serve(t, m, p, r)
	return answer{out, err}
}

// mustInput returns the outcome's only input request (its key and the
// request) and the state.
func mustInput(t *testing.T, a answer) (string, map[string]any, string) {
	t.Helper()
	out, err := a.out, a.err
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if out.Input == nil {
		t.Fatalf("Serve answered %#v, want input_required", out.Result)
	}
	if out.Input.ResultType != "input_required" || out.Input.RequestState == "" || len(out.Input.InputRequests) != 1 {
		t.Fatalf("input required result %+v: want resultType input_required, a state and one request", out.Input)
	}
	for k, raw := range out.Input.InputRequests {
		var r map[string]any
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return k, r, out.Input.RequestState
	}
	panic("unreachable")
}

// toolText returns the text of a completed tool call; it fails on
// anything else.
func toolText(t *testing.T, a answer) string {
	t.Helper()
	out, err := a.out, a.err
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if out.Input != nil {
		t.Fatalf("Serve answered input_required %v, want a result", out.Input.InputRequests)
	}
	res, ok := out.Result.(*mcp.CallToolResult)
	if !ok {
		t.Fatalf("result %T, want *mcp.CallToolResult", out.Result)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("tool error: %s", b.String())
	}
	return b.String()
}

// decoded returns the JSON text s decoded.
func decoded(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// nonceOf returns the nonce the plugin put at the end of its question.
func nonceOf(t *testing.T, request map[string]any) string {
	t.Helper()
	params, _ := request["params"].(map[string]any)
	var text string
	if msg, ok := params["message"].(string); ok {
		text = msg
	} else if msgs, ok := params["messages"].([]any); ok && len(msgs) > 0 {
		text, _ = msgs[0].(map[string]any)["content"].(map[string]any)["text"].(string)
	}
	f := strings.Fields(text)
	if len(f) == 0 {
		t.Fatalf("no nonce in %v", request)
	}
	return f[len(f)-1]
}

// eventually waits up to 10s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isErr(err, target error) bool { return errors.Is(err, target) }
