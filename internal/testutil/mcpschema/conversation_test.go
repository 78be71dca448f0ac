package mcpschema

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB whose Errorf records instead of failing, to
// test what a Conversation reports.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

const (
	info   = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hangar","version":"1"}}`
	modern = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
)

// expect checks that c found exactly the problems containing want, in
// order.
func expect(t *testing.T, c *Conversation, want ...string) {
	t.Helper()
	got := c.Errors()
	if len(got) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d: %s\nwant one with %q", i, got[i], want[i])
		}
	}
}

// A stdio conversation: the requests tell what each response answers, and
// the rules across messages hold.
func TestConversationStdio(t *testing.T) {
	c := NewConversation(&recorder{TB: t})
	client := func(s string) { c.Client([]byte(s)) }
	server := func(s string) { c.Server([]byte(s)) }

	client(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{` + modern + `,"progressToken":"p1","io.modelcontextprotocol/logLevel":"info"}}}`)
	client(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"_meta":{` + modern + `},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["x://a"]}}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"notifications":{"toolsListChanged":true}}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"uri":"x://a"}}`)
	server(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],` + info + `}}`)
	expect(t, c)
	if got := c.Counts(); got["tools/call complete"] != 1 || got["notifications/tools/list_changed"] != 1 || c.Total() != 6 {
		t.Errorf("counts %v", got)
	}

	// The call is over: its progress and log messages have nowhere to go.
	server(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":2}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"late"}}`)
	// Not asked for, untagged, tagged with a request that is no
	// subscription, a second acknowledgment.
	server(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	client(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{` + modern + `}}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":3}}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"notifications":{}}}`)
	// A log message for a request that did not ask for one.
	server(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"unasked"}}`)
	// A response to tools/list with a tools/call result.
	server(`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[],` + info + `}}`)
	// A subscription that notifies before its acknowledgment, and ends
	// without its id.
	client(`{"jsonrpc":"2.0","id":"s","method":"subscriptions/listen","params":{"_meta":{` + modern + `},"notifications":{"resourcesListChanged":true}}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"s"}}}`)
	server(`{"jsonrpc":"2.0","id":"s","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"h","version":"1"},"io.modelcontextprotocol/subscriptionId":"t"}}}`)
	// The server cancels subscription 2: fine on stdio.
	server(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	server(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}`)
	expect(t, c,
		"progress with token \"p1\", which no request in progress sent",
		"a log message for a request without io.modelcontextprotocol/logLevel",
		"subscription 2 did not ask for it",
		"a change notification outside a subscriptions/listen stream",
		"tagged with subscription 3, which is not open",
		`subscription 2 acknowledged twice`,
		"a log message for a request without",
		"not a valid ListToolsResult",
		`before its acknowledgment`,
		`the end of subscription "s" carries subscriptionId t`,
		"tagged with subscription 2, which is not open",
	)

	// A connection that fell back to initialize is counted, not checked.
	legacy := NewConversation(&recorder{TB: t})
	legacy.Client([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`))
	legacy.Server([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}`))
	if legacy.Legacy() != 1 || legacy.Total() != 0 || len(legacy.Errors()) != 0 {
		t.Errorf("legacy: %d legacy, %d checked, %v", legacy.Legacy(), legacy.Total(), legacy.Errors())
	}
}

// Stdio taps a process's pipes: what passes through is unchanged, and
// split into lines however it is written and read.
func TestConversationStdioTap(t *testing.T) {
	c := NewConversation(&recorder{TB: t})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stdin, stdout := c.Stdio(inW, outR)
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + modern + `}}}` + "\n"
	resp := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"public",` + info + `}}` + "\n"
	go func() {
		for _, part := range []string{req[:10], req[10:]} {
			stdin.Write([]byte(part))
		}
	}()
	if b, err := io.ReadAll(io.LimitReader(inR, int64(len(req)))); err != nil || string(b) != req {
		t.Fatalf("stdin passed %q, %v", b, err)
	}
	go func() {
		outW.Write([]byte(resp[:7]))
		outW.Write([]byte(resp[7:] + resp))
		outW.Close()
	}()
	if b, err := io.ReadAll(stdout); err != nil || string(b) != resp+resp {
		t.Fatalf("stdout passed %q, %v", b, err)
	}
	// The second response answers a request no longer in progress: a
	// result that answers nothing.
	expect(t, c, "a result that answers no request")
	if c.Counts()["tools/list complete"] != 1 {
		t.Errorf("counts %v", c.Counts())
	}
}

// Over HTTP, each exchange is checked with its request, its status and
// headers, JSON and event streams alike.
func TestConversationHTTP(t *testing.T) {
	type answer struct {
		status      int
		contentType string
		header      map[string]string
		body        string
	}
	answers := map[string]answer{
		"good json":   {200, "application/json", nil, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],` + info + `}}`},
		"good stream": {200, "text/event-stream", nil, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n: keep-alive\ndata: \"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\",\"content\":[]," + info + "}}\r\n\r\n"},
		"session":     {200, "application/json", map[string]string{"Mcp-Session-Id": "abc"}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],` + info + `}}`},
		"event ids":   {200, "text/event-stream", nil, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\",\"content\":[]," + info + "}}\n\n"},
		"mismatch":    {200, "application/json", nil, `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"x"}}`},
		"not found":   {400, "application/json", nil, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`},
		"other id":    {200, "application/json", nil, `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[],` + info + `}}`},
		"no info":     {200, "application/json", nil, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`},
		"plain":       {200, "text/plain", nil, `ok`},
		"legacy":      {200, "application/json", nil, `{"jsonrpc":"2.0","id":1,"result":{}}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Query().Get("a")]
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	defer srv.Close()

	for _, c := range []struct {
		answer  string
		logged  bool
		version string
		want    []string
	}{
		{"good json", false, "2026-07-28", nil},
		{"good stream", true, "2026-07-28", nil},
		{"good stream", false, "2026-07-28", []string{"a log message for a request without"}},
		{"session", false, "2026-07-28", []string{"carries Mcp-Session-Id"}},
		{"event ids", false, "2026-07-28", []string{"an SSE event id"}},
		{"mismatch", false, "2026-07-28", []string{"HTTP status 200, want 400"}},
		{"not found", false, "2026-07-28", []string{"HTTP status 400, want 404"}},
		{"other id", false, "2026-07-28", []string{"a response with id 2 in the exchange of request 1"}},
		{"no info", false, "2026-07-28", []string{"serverInfo"}},
		{"plain", false, "2026-07-28", []string{`status 200 and Content-Type "text/plain"`}},
		{"legacy", false, "2025-11-25", nil},
	} {
		t.Run(c.answer, func(t *testing.T) {
			conv := NewConversation(&recorder{TB: t})
			hc := &http.Client{Transport: conv.RoundTripper(nil)}
			meta := `"io.modelcontextprotocol/protocolVersion":"` + c.version + `","io.modelcontextprotocol/clientCapabilities":{}`
			if c.logged {
				meta += `,"io.modelcontextprotocol/logLevel":"debug"`
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{` + meta + `}}}`
			req, _ := http.NewRequest("POST", srv.URL+"?a="+strings.ReplaceAll(c.answer, " ", "+"), strings.NewReader(body))
			req.Header.Set("Mcp-Protocol-Version", c.version)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != answers[c.answer].body {
				t.Errorf("the client read %q", got)
			}
			expect(t, conv, c.want...)
			if c.answer == "legacy" && (conv.Legacy() != 1 || conv.Total() != 0) {
				t.Errorf("legacy %d, total %d", conv.Legacy(), conv.Total())
			}
			if c.answer == "good stream" && c.logged && conv.Total() != 2 {
				t.Errorf("counts %v", conv.Counts())
			}
		})
	}
}
