package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
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

// TestFastPathMatchesSDKClients drives both servers of the differential
// tests with go-sdk clients, over stdio and Streamable HTTP: the results,
// errors and notifications the clients see are the same.
func TestFastPathMatchesSDKClients(t *testing.T) {
	tgs := diffTargets(t)
	type callSpec struct {
		name string
		args any
		meta mcp.Meta
	}
	calls := []callSpec{
		{"test_simple_text", map[string]any{}, nil},
		{"echo_context", map[string]any{}, mcp.Meta{"trace": "t-1"}},
		{"structured", map[string]any{"a": 1.5, "b": 2}, nil},
		{"structured", map[string]any{"a": "one"}, nil},
		{"no_such_tool", map[string]any{}, nil},
		{"test_error_handling", map[string]any{}, nil},
		{"trap", map[string]any{}, nil},
		{"test_tool_with_progress", map[string]any{}, mcp.Meta{"progressToken": "p-1"}},
		{"test_tool_with_logging", map[string]any{}, nil},
		{"test_sampling", map[string]any{"prompt": "hello?"}, nil},
		{"test_elicitation", map[string]any{"message": "who?"}, nil},
		{"list_roots", map[string]any{}, nil},
		{"c_test_multiple_content_types", map[string]any{}, nil},
	}
	reads := []string{"test://static-text", "c+test://template/9/data", "test://nothing-here"}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			var results, notes [2][]string
			for i, tg := range tgs {
				var mu sync.Mutex
				note := func(s string) {
					mu.Lock()
					notes[i] = append(notes[i], s)
					mu.Unlock()
				}
				client := mcp.NewClient(&mcp.Implementation{Name: "diff", Version: "1"}, &mcp.ClientOptions{
					CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
						return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
					},
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
					},
					ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
						note("progress " + mustJSON(req.Params))
					},
					LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
						note("log " + mustJSON(req.Params))
					},
				})
				client.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
				var cs *mcp.ClientSession
				if transport == "stdio" {
					cs = connectClient(t, tg.s, client)
				} else {
					var err error
					cs, err = client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: serveHTTP(t, tg.s, nil), MaxRetries: -1}, sessionOpts)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { cs.Close() })
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
					t.Fatal(err)
				}
				before := server.FastServed()
				record := func(v any, err error) {
					if err != nil {
						results[i] = append(results[i], "error: "+err.Error())
						return
					}
					results[i] = append(results[i], mustJSON(v))
				}
				for _, c := range calls {
					record(cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args, Meta: c.meta}))
				}
				for _, uri := range reads {
					record(cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}))
				}
				// A call the client cancels: the plugin is interrupted, and
				// the session goes on.
				cctx, stop := context.WithCancel(ctx)
				go func() {
					waitBusy(t, tg.v1)
					stop()
				}()
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "spin", Arguments: map[string]any{}})
				record(nil, err)
				waitIdle(t, tg.v1, 30*time.Second)
				record(cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}}))

				served := server.FastServed() - before
				if (i == 0) != (served > 0) {
					t.Errorf("%s: the fast path served %d calls", tg.name, served)
				}
			}
			compare(t, [][]string{results[0]}, [][]string{results[1]})
			for i := range notes {
				slices.Sort(notes[i])
			}
			compare(t, [][]string{notes[0]}, [][]string{notes[1]})
			if len(notes[0]) == 0 {
				t.Error("no notifications")
			}
		})
	}
}

// TestStdioFramingMatchesSDK: the fast path takes whole lines only; lines
// it does not take reach the go-sdk as they were, whatever their framing.
func TestStdioFramingMatchesSDK(t *testing.T) {
	tgs := diffTargets(t)
	steps := []struct {
		msg, id string
		fast    bool
	}{
		{call(2, "test_simple_text", `{}`) + "\r", "2", true},                                         // CRLF
		{"   " + call(3, "test_simple_text", `{}`), "3", false},                                       // leading white space
		{`{"jsonrpc":"2.0","id":4,"method":"tools/list"`, "null", false},                              // not a whole message: refused at once
		{call(4, "test_simple_text", `{}`), "4", true},                                                // and the next line served
		{call(5, "echo_context", fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 200<<10))), "5", true}, // longer than the reader's buffer
		{call(6, "echo_context", fmt.Sprintf(`{"pad":%q}`, strings.Repeat("y", 5<<20))), "6", false},  // longer than the fast path reads
		{call(7, "test_simple_text", `{}`) + call(8, "test_simple_text", `{}`), "null", false},        // two on a line: refused (the go-sdk ended the session)
		{call(9, "test_simple_text", `{}`), "9", true},                                                // and the session goes on
	}
	var runs [2][][]string
	for i, tg := range tgs {
		c := newRawIO(t, tg.s)
		c.start("2025-11-25")
		before := server.FastServed()
		var want int64
		for _, st := range steps {
			runs[i] = append(runs[i], c.exchange(st.msg, st.id))
			if st.fast && i == 0 {
				want++
			}
		}
		if served := server.FastServed() - before; served != want {
			t.Errorf("%s: the fast path served %d calls, want %d", tg.name, served, want)
		}
	}
	compare(t, runs[0], runs[1])
	if two := runs[0][len(runs[0])-2]; !strings.Contains(two[len(two)-1], `"code":-32700`) {
		t.Errorf("two messages on a line: %q, want a parse error", two)
	}
}

// TestRequestIDReachesPlugins: the JSON-RPC id of a call reaches the
// plugin over every transport, on both paths.
func TestRequestIDReachesPlugins(t *testing.T) {
	numeric := regexp.MustCompile(`^[1-9][0-9]*$`)
	seenID := func(t *testing.T, res *mcp.CallToolResult) string {
		t.Helper()
		var seen struct{ ID string }
		if err := json.Unmarshal([]byte(resultText(t, res)), &seen); err != nil {
			t.Fatal(err)
		}
		return seen.ID
	}
	for _, disable := range []bool{false, true} {
		s := newServer(t, &server.Options{DisableFastPath: disable}, server.Mount{Plugin: v1full(t, config.Limits{})})
		ts := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{LegacySSE: true}))
		t.Cleanup(ts.Close)
		clients := map[string]mcp.Transport{
			"http": &mcp.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1},
			"sse":  &mcp.SSEClientTransport{Endpoint: ts.URL + server.SSEPath},
		}
		for name, tr := range clients {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), tr, sessionOpts)
			if err != nil {
				t.Fatal(err)
			}
			if id := seenID(t, callTool(t, cs, "echo_context", map[string]any{})); !numeric.MatchString(id) {
				t.Errorf("fast path disabled %v, %s: the plugin saw id %q", disable, name, id)
			}
			cs.Close()
		}
		if id := seenID(t, callTool(t, connect(t, s, nil), "echo_context", map[string]any{})); !numeric.MatchString(id) {
			t.Errorf("fast path disabled %v, stdio: the plugin saw id %q", disable, id)
		}

		// In a batch (2025-03-26), a call's id reaches the plugin when the
		// batch has no other call of the same tool.
		c := &rawHTTP{t: t, url: ts.URL + server.Path, hc: http.DefaultClient}
		c.start("2025-03-26")

		// A request the fast path does not take for its headers.
		resp, err := c.do("POST", call(77, "echo_context", `{}`), map[string]string{"Accept": "*/*"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, line := range c.events(resp.Body, false) {
			if _, data, ok := strings.Cut(line, "data: "); ok {
				var msg struct{ Result mcp.CallToolResult }
				if json.Unmarshal([]byte(data), &msg) == nil && len(msg.Result.Content) > 0 {
					ids = append(ids, seenID(t, &msg.Result))
				}
			}
		}
		resp.Body.Close()
		if !slices.Equal(ids, []string{"77"}) {
			t.Errorf("fast path disabled %v, Accept */*: the plugin saw ids %q", disable, ids)
		}
		for _, tc := range []struct {
			batch string
			want  []string
		}{
			{`[` + call(5, "echo_context", `{}`) + `,` + call(6, "log_levels", `{}`) + `]`, []string{"5"}},
			{`[` + call(7, "echo_context", `{}`) + `,` + call(8, "echo_context", `{}`) + `]`, []string{"", ""}},
		} {
			var ids []string
			for _, line := range c.exchange(tc.batch, "batch") {
				_, data, ok := strings.Cut(line, "data: ")
				if !ok || !strings.Contains(data, "echo_context") && !strings.Contains(data, `\"id\"`) {
					continue
				}
				var msg struct{ Result mcp.CallToolResult }
				if err := json.Unmarshal([]byte(data), &msg); err == nil && len(msg.Result.Content) > 0 {
					ids = append(ids, seenID(t, &msg.Result))
				}
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("fast path disabled %v, batch %s: the plugin saw ids %q, want %q", disable, tc.batch, ids, tc.want)
			}
		}
	}
}

// TestIdleTimeoutCountsFastCalls: a session whose requests all go through
// the fast path lives through a call longer than its idle timeout, and
// expires once idle.
func TestIdleTimeoutCountsFastCalls(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	url := serveHTTP(t, s, &server.HTTPOptions{SessionTimeout: time.Second})
	c := newRawClient(t, url)
	if code, body := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := server.FastServed()
	for range 2 {
		m, err := c.call(ctx, "tools/call", map[string]any{"name": "sleep_ms", "arguments": map[string]any{"ms": 2500}})
		if err != nil || !strings.Contains(fmt.Sprint(m["result"]), "slept 2500ms") {
			t.Fatalf("a call longer than the idle timeout: %v, %v", m, err)
		}
	}
	if served := server.FastServed() - before; served != 2 {
		t.Errorf("the fast path served %d calls, want 2", served)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for range s.MCP().Sessions() {
			n++
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle session did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := c.post(ctx, "tools/call", map[string]any{"name": "echo_context", "arguments": map[string]any{}}, false)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call to the expired session: %d, want 404", resp.StatusCode)
	}
}

// BenchmarkCall measures a tools/call of a cheap tool end to end, over
// stdio and HTTP, with and without the fast path (go test -bench Call
// -benchmem ./internal/server): the difference is the MCP layer.
func BenchmarkCall(b *testing.B) {
	for _, transport := range []string{"stdio", "http"} {
		for _, disable := range []bool{false, true} {
			name := transport + "/fast"
			if disable {
				name = transport + "/go-sdk"
			}
			b.Run(name, func(b *testing.B) {
				p := loadPlugin(b, "conformance", testutil.BuildPlugin(b, "./examples/conformance"), config.Limits{})
				s, err := server.New(context.Background(), []server.Mount{{Plugin: p}}, &server.Options{Logger: quietLogger(), DisableFastPath: disable})
				if err != nil {
					b.Fatal(err)
				}
				var cs *mcp.ClientSession
				if transport == "stdio" {
					cs = connectClient(b, s, mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil))
				} else {
					ts := httptest.NewServer(s.HTTPHandler(nil))
					b.Cleanup(ts.Close)
					cs, err = mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1}, sessionOpts)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { cs.Close() })
				}
				params := &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := cs.CallTool(context.Background(), params); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRawCall measures what the MCP layer adds to a plugin call over
// stdio, without a client library: "plugin" is the plugin call alone,
// "stdio" a tools/call line written to a session and its answer read back
// (go test -run '^$' -bench RawCall -benchmem ./internal/server). The
// difference in allocations is the MCP layer's, fast path and dispatch.
func BenchmarkRawCall(b *testing.B) {
	p := loadPlugin(b, "conformance", testutil.BuildPlugin(b, "./examples/conformance"), config.Limits{})
	b.Run("plugin", func(b *testing.B) {
		args := json.RawMessage(`{}`)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.CallTool(context.Background(), &plugin.Call{ID: "2"}, "test_simple_text", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stdio", func(b *testing.B) {
		s, err := server.New(context.Background(), []server.Mount{{Plugin: p}}, &server.Options{Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		sc, cc := net.Pipe()
		ss, err := s.ConnectIO(context.Background(), sc, sc)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cc.Close(); ss.Close() })
		r := bufio.NewReader(cc)
		roundTrip := func(line string) []byte {
			if _, err := io.WriteString(cc, line+"\n"); err != nil {
				b.Fatal(err)
			}
			if strings.Contains(line, `"id"`) {
				answer, err := r.ReadSlice('\n')
				if err != nil {
					b.Fatal(err)
				}
				return answer
			}
			return nil
		}
		roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
		roundTrip(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`
		if answer := roundTrip(call); !strings.Contains(string(answer), `"result"`) {
			b.Fatalf("answer: %s", answer)
		}
		served := server.FastServed()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			roundTrip(call)
		}
		b.StopTimer()
		if server.FastServed() == served {
			b.Fatal("the fast path served no call")
		}
	})
}
