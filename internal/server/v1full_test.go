package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// v1full loads the v1 test plugin. Its extras and counters live in its
// instance's memory; it does not declare itself stateless, so it gets one
// instance unless limits say otherwise.
func v1full(t *testing.T, limits config.Limits) *plugin.Plugin {
	return loadPlugin(t, "v1full", testutil.BuildPlugin(t, "./internal/testplugins/v1full"), limits)
}

func TestRootsRoundTrip(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	client.AddRoots(&mcp.Root{URI: "file:///work/a", Name: "a"})
	cs := connectClient(t, s, client)

	var roots mcp.ListRootsResult
	if err := json.Unmarshal([]byte(resultText(t, callTool(t, cs, "list_roots", map[string]any{}))), &roots); err != nil {
		t.Fatal(err)
	}
	if len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///work/a" {
		t.Errorf("roots = %+v", roots.Roots)
	}

	// Changing the roots tells the plugin (on_roots_list_changed).
	client.AddRoots(&mcp.Root{URI: "file:///work/b"})
	waitFor(t, "on_roots_list_changed", func() bool {
		return resultText(t, callTool(t, cs, "roots_changed_count", map[string]any{})) == "1"
	}, nil)

	// A client without roots gets a clean error.
	res := callTool(t, connect(t, s, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}), "list_roots", map[string]any{})
	if !res.IsError || !strings.Contains(resultText(t, res), "does not support roots") {
		t.Errorf("without roots: %+v", res)
	}
}

func TestListChangedIsForwarded(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	changed := make(chan string, 10)
	cs := connect(t, s, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { changed <- "tools" },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { changed <- "prompts" },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- "resources" },
	})
	ctx := context.Background()
	// The SDK merges the notifications of one kind only within a few
	// milliseconds, so on a busy machine a list already announced may be
	// announced again: a repeat of a kind seen before is no error.
	seen := map[string]bool{}
	wait := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case got := <-changed:
				if got == want {
					seen[want] = true
					return
				}
				if !seen[got] {
					t.Errorf("notification %s, want %s", got, want)
				}
			case <-timeout:
				t.Fatalf("no %s list_changed notification", want)
			}
		}
	}

	callTool(t, cs, "enable_extra_tool", map[string]any{})
	wait("tools")
	if !slices.Contains(toolNames(t, cs), "extra_tool") {
		t.Fatalf("tools after enable: %v", toolNames(t, cs))
	}
	if res := callTool(t, cs, "extra_tool", map[string]any{}); res.IsError {
		t.Errorf("extra_tool: %+v", res)
	}

	callTool(t, cs, "enable_extra_prompt", map[string]any{})
	wait("prompts")
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "extra_prompt"}); err != nil {
		t.Errorf("extra_prompt: %v", err)
	}

	callTool(t, cs, "enable_extra_resource", map[string]any{})
	wait("resources")
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "v1full://extra"}); err != nil {
		t.Errorf("reading v1full://extra: %v", err)
	}

	callTool(t, cs, "disable_extras", map[string]any{})
	deadline := time.Now().Add(5 * time.Second)
	for slices.Contains(toolNames(t, cs), "extra_tool") {
		if time.Now().After(deadline) {
			t.Fatal("extra_tool still listed after disable_extras")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestResourceUpdatedReachesSubscribers(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	updated := make(chan string, 4)
	subscriber := connect(t, s, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	other := make(chan string, 4)
	bystander := connect(t, s, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { other <- req.Params.URI },
	})
	ctx := context.Background()
	callTool(t, subscriber, "enable_extra_resource", map[string]any{})
	waitFor(t, "v1full://extra listed", func() bool {
		_, err := subscriber.ReadResource(ctx, &mcp.ReadResourceParams{URI: "v1full://extra"})
		return err == nil
	}, nil)
	if err := subscriber.Subscribe(ctx, &mcp.SubscribeParams{URI: "v1full://extra"}); err != nil {
		t.Fatal(err)
	}
	if err := subscriber.Subscribe(ctx, &mcp.SubscribeParams{URI: "nobody://serves-this"}); err == nil {
		t.Error("subscribing to an unknown URI succeeded")
	}
	// The bystander triggers the update; only the subscriber hears of it.
	callTool(t, bystander, "notify_resource_updated", map[string]any{"uri": "v1full://extra"})
	select {
	case uri := <-updated:
		if uri != "v1full://extra" {
			t.Errorf("updated %s", uri)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("subscriber got no resources/updated")
	}
	select {
	case uri := <-other:
		t.Errorf("bystander got an update for %s", uri)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestURLElicitation(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	var got *mcp.ElicitParams
	completed := make(chan string, 1)
	cs := connect(t, s, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			got = req.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			completed <- req.Params.ElicitationID
		},
	})
	res := callTool(t, cs, "elicit_url", map[string]any{"url": "https://auth.example/x", "elicitationId": "el-1"})
	if res.IsError || resultText(t, res) != "action=accept" {
		t.Errorf("elicit_url = %q", resultText(t, res))
	}
	if got == nil || got.Mode != "url" || got.URL != "https://auth.example/x" || got.ElicitationID != "el-1" {
		t.Errorf("client got %+v", got)
	}
	select {
	case id := <-completed:
		if id != "el-1" {
			t.Errorf("completed %s", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/elicitation/complete")
	}

	// A client with form elicitation only refuses URL mode cleanly.
	formOnly := connect(t, s, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	res = callTool(t, formOnly, "elicit_url", map[string]any{"url": "https://auth.example/x", "elicitationId": "el-2"})
	if !res.IsError || !strings.Contains(resultText(t, res), `"url"`) {
		t.Errorf("form-only client: %+v", res)
	}
}

// TestWaitingForTheClientIsNotRunningTime: the call timeout bounds the
// plugin's running time; a person answering an elicitation is bounded by
// the elicitation's own timeout instead.
func TestWaitingForTheClientIsNotRunningTime(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{CallTimeout: 300 * time.Millisecond})})
	slow := connect(t, s, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-time.After(800 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	res := callTool(t, slow, "elicit_form", map[string]any{})
	if res.IsError || resultText(t, res) != `action=accept, content={"name":"Ada"}` {
		t.Errorf("slow answer within no elicitation timeout: %q", resultText(t, res))
	}

	start := time.Now()
	res = callTool(t, slow, "elicit_form", map[string]any{"timeout_ms": 100})
	if !res.IsError || !strings.Contains(resultText(t, res), "within 100ms") {
		t.Errorf("elicitation timeout: %q", resultText(t, res))
	}
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Errorf("elicitation timeout took %v", d)
	}

	// Running time still counts.
	res = callTool(t, slow, "sleep_ms", map[string]any{"ms": 2000})
	if !res.IsError || !strings.Contains(resultText(t, res), "time limit") {
		t.Errorf("sleep_ms past the call timeout: %q", resultText(t, res))
	}
}

func TestPanicIsAToolError(t *testing.T) {
	cs := connect(t, newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})}), nil)
	if res := callTool(t, cs, "panic", map[string]any{}); !res.IsError {
		t.Errorf("panic: %+v", res)
	}
	if res := callTool(t, cs, "structured", map[string]any{"a": 2, "b": 3}); res.IsError || res.StructuredContent == nil {
		t.Errorf("after panic, structured = %+v", res)
	} else if sum := res.StructuredContent.(map[string]any)["sum"]; sum != 5.0 {
		t.Errorf("sum = %v", sum)
	}
}

// TestRequestIDAndMeta sends a tools/call with a known JSON-RPC id over raw
// HTTP and checks the plugin saw that id, the _meta and the progress token.
func TestRequestIDAndMeta(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	ts := httptest.NewServer(s.HTTPHandler(nil))
	defer ts.Close()

	session := ""
	post := func(body string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+server.Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		// The answer is one SSE event (or nothing, for a notification).
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"result"`) {
				io.Copy(io.Discard, resp.Body)
				return data
			}
		}
		return ""
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	answer := post(`{"jsonrpc":"2.0","id":4242,"method":"tools/call","params":{"name":"echo_context","arguments":{},"_meta":{"progressToken":"p-9","trace":"abc"}}}`)

	var msg struct {
		Result mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &msg); err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	var seen struct {
		ID            string         `json:"id"`
		Meta          map[string]any `json:"meta"`
		ProgressToken any            `json:"progressToken"`
	}
	if err := json.Unmarshal([]byte(resultText(t, &msg.Result)), &seen); err != nil {
		t.Fatal(err)
	}
	if seen.ID != "4242" || seen.Meta["trace"] != "abc" || seen.ProgressToken != "p-9" {
		t.Errorf("plugin saw %+v", seen)
	}
}

// TestSessionsAreIsolated calls the sampling tool from two sessions at once
// over HTTP: each sampling request goes to the client that made the call.
func TestSessionsAreIsolated(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: fixture(t)})
	ts := httptest.NewServer(s.HTTPHandler(nil))
	defer ts.Close()
	var wg sync.WaitGroup
	for _, who := range []string{"alice", "bob", "carol"} {
		wg.Go(func() {
			client := mcp.NewClient(&mcp.Implementation{Name: who, Version: "1"}, &mcp.ClientOptions{
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					time.Sleep(50 * time.Millisecond)
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: who}}, nil
				},
			})
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + server.Path}, sessionOpts)
			if err != nil {
				t.Error(err)
				return
			}
			defer cs.Close()
			for range 3 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "who?"}})
				if err != nil {
					t.Error(err)
					return
				}
				if got := resultText(t, res); got != "LLM response: "+who {
					t.Errorf("%s got %q", who, got)
				}
			}
		})
	}
	wg.Wait()
}

// TestRootsListChangedCoalesced: a client sends 20,000
// notifications/roots/list_changed in a row; the plugin runs
// on_roots_list_changed a few times (once for the first, once more for
// those that came meanwhile), not once each, and a call made right after
// them is answered (issue 15.15).
func TestRootsListChangedCoalesced(t *testing.T) {
	p := v1full(t, config.Limits{MaxInstances: 1, CallTimeout: 10 * time.Second})
	s := newServer(t, nil, server.Mount{Plugin: p})
	c := newRawIO(t, s)
	c.start("2025-06-18")
	const n = 20000
	var b strings.Builder
	for range n {
		b.WriteString(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}` + "\n")
	}
	start := time.Now()
	c.write(strings.TrimSuffix(b.String(), "\n"))
	got := c.exchange(call(2, "roots_changed_count", `{}`), "2")
	t.Logf("a call after %d notifications answered in %v: %s", n, time.Since(start).Round(time.Millisecond), last(got))
	waitIdle(t, p, 30*time.Second)
	var res struct {
		Result struct{ Content []struct{ Text string } }
	}
	answer := last(c.exchange(call(3, "roots_changed_count", `{}`), "3"))
	if json.Unmarshal([]byte(answer), &res); len(res.Result.Content) == 0 {
		t.Fatalf("roots_changed_count: %s", answer)
	}
	runs, err := strconv.Atoi(res.Result.Content[0].Text)
	if err != nil || runs < 1 || runs > 10 {
		t.Errorf("on_roots_list_changed ran %d times (%v) for %d notifications, want 1 to 10", runs, err, n)
	}
}
