package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/testutil/mcpschema"
)

// The MCP clients of the 2026-07-28 tests, each over HTTP and over stdio,
// against `hangar serve` with the plugins of config2026: every message
// Hangar sends on their connections is validated (mcpschema).

const (
	v2026     = mcpschema.Version
	logLevel  = "io.modelcontextprotocol/logLevel"
	rootURI   = "file:///work/project"
	userName  = "Ada"
	userAge   = 36
	modelName = "test-model"
	sampled   = "Paris"
)

// config2026 writes the configuration of the 2026 client tests: the
// plugin of internal/mrtr's tests (elicitation, sampling and roots inside
// tools, a prompt and a resource), the conformance example (logging and
// progress), notes (resource changes) and v1full (tool list changes).
func config2026(t *testing.T, extra string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf(`%splugins:
  - {name: mrtr, path: %s}
  - {name: conformance, path: %s}
  - {name: notes, path: %s}
  - {name: v1full, path: %s}
`, extra, testutil.BuildPlugin(t, "./internal/testplugins/mrtr"),
		testutil.BuildPlugin(t, "./examples/conformance"),
		testutil.BuildPlugin(t, "./examples/notes"),
		testutil.BuildPlugin(t, "./internal/testplugins/v1full")))
}

// serveHTTP2026 starts `hangar serve --http` with cfg and returns its MCP
// endpoint.
func serveHTTP2026(t *testing.T, cfg, cache string) (string, *hangarProc) {
	t.Helper()
	cmd := exec.Command(hangar, "serve", "--config", cfg, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	p := startCmd(t, cmd)
	url := p.waitLog(t, mcpURLRE)[1] + "/mcp"
	p.waitLog(t, readyRE) // the plugins compiled: no call waits for them
	return url, p
}

// readyRE is the log line saying every plugin has compiled.
var readyRE = regexp.MustCompile(`msg=ready `)

// serveStdio2026 starts `hangar serve` with cfg on stdio and returns its
// stdin and stdout, tapped by conv.
func serveStdio2026(t *testing.T, cfg, cache string, conv *mcpschema.Conversation) (io.WriteCloser, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(hangar, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	logs := &testutil.SyncBuffer{}
	cmd.Stderr = logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		stdin.Close() // end of input: hangar stops
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("hangar serve (stdio) did not stop when its stdin closed")
		}
		if t.Failed() {
			t.Logf("hangar serve (stdio) stderr:\n%s", logs)
		}
	})
	// The plugins compiled: no call waits for them.
	for deadline := time.Now().Add(3 * time.Minute); !readyRE.MatchString(logs.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hangar serve (stdio) not ready after 3 minutes:\n%s", logs)
		}
	}
	return conv.Stdio(stdin, stdout)
}

// observed is what a client's handlers saw.
type observed struct {
	mu           sync.Mutex
	elicitations []string // their messages
	samplings    []string // the text of their first message
	logs         []string // the data of log messages
	progress     []float64
	notes        map[string]int // change notifications by method
	updated      []string       // URIs of resources/updated
	progressAt   []time.Time    // when each progress notification came
	name         string         // the name elicitations answer; userName when ""
}

func newObserved() *observed { return &observed{notes: map[string]int{}} }

func (o *observed) add(f func(o *observed)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

func (o *observed) get(f func(o *observed) bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return f(o)
}

// elicitAnswer is the user's answer to an elicitation with this schema:
// the age when asked for one, else the name.
func (o *observed) elicitAnswer(schema any) map[string]any {
	b, _ := json.Marshal(schema)
	if strings.Contains(string(b), `"age"`) {
		return map[string]any{"age": userAge}
	}
	if o.name != "" {
		return map[string]any{"name": o.name}
	}
	return map[string]any{"name": userName}
}

// waitFor polls cond for up to 15 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// client2026 is an MCP client under test, connected.
type client2026 interface {
	version() string
	// call calls a tool with args and _meta fields and returns its first
	// text; a tool error is an error.
	call(ctx context.Context, name string, args, meta map[string]any) (string, error)
	prompt(ctx context.Context, name string) (string, error)
	read(ctx context.Context, uri string) (string, error)
	tools(ctx context.Context) ([]string, error)
	// listen opens subscriptions to tool and resource list changes and to
	// the updates of uri.
	listen(ctx context.Context, uri string) error
}

// The go-sdk client.

type sdkClient struct{ cs *mcp.ClientSession }

// sdkOpts say how a go-sdk client is made: with the handlers of
// elicitation, sampling and roots (capable), and with those of list
// changes (then it opens subscriptions/listen as it connects).
type sdkOpts struct{ capable, listen bool }

func connectSDK(t *testing.T, o *observed, tr mcp.Transport, so sdkOpts) *sdkClient {
	t.Helper()
	opts := &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			o.add(func(o *observed) { o.logs = append(o.logs, fmt.Sprint(r.Params.Data)) })
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			o.add(func(o *observed) {
				o.progress = append(o.progress, r.Params.Progress)
				o.progressAt = append(o.progressAt, time.Now())
			})
		},
	}
	if so.listen {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
			o.add(func(o *observed) { o.notes["notifications/tools/list_changed"]++ })
		}
		opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) {
			o.add(func(o *observed) { o.notes["notifications/resources/list_changed"]++ })
		}
		opts.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			o.add(func(o *observed) { o.updated = append(o.updated, r.Params.URI) })
		}
	}
	capable := so.capable
	if capable {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			o.add(func(o *observed) { o.elicitations = append(o.elicitations, r.Params.Message) })
			return &mcp.ElicitResult{Action: "accept", Content: o.elicitAnswer(r.Params.RequestedSchema)}, nil
		}
		opts.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := ""
			if tc, ok := r.Params.Messages[0].Content.(*mcp.TextContent); ok {
				text = tc.Text
			}
			o.add(func(o *observed) { o.samplings = append(o.samplings, text) })
			return &mcp.CreateMessageResult{Model: modelName, Role: "assistant", Content: &mcp.TextContent{Text: sampled}}, nil
		}
	} else {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-2026-test", Version: "1"}, opts)
	if capable {
		c.AddRoots(&mcp.Root{URI: rootURI, Name: "project"})
	}
	cs, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("go-sdk client: connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &sdkClient{cs: cs}
}

func (c *sdkClient) version() string { return c.cs.InitializeResult().ProtocolVersion }

func (c *sdkClient) call(ctx context.Context, name string, args, meta map[string]any) (string, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		return "", err
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed: %s", name, text)
	}
	return text, nil
}

func (c *sdkClient) prompt(ctx context.Context, name string) (string, error) {
	res, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
	if err != nil {
		return "", err
	}
	if tc, ok := res.Messages[0].Content.(*mcp.TextContent); ok {
		return tc.Text, nil
	}
	return "", fmt.Errorf("prompt %s: %T content", name, res.Messages[0].Content)
}

func (c *sdkClient) read(ctx context.Context, uri string) (string, error) {
	res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	return res.Contents[0].Text, nil
}

func (c *sdkClient) tools(ctx context.Context) ([]string, error) {
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, nil
}

// listen: the go-sdk opened the list-changes subscription when it
// connected (it has the handlers, and the server's capabilities say lists
// change); Subscribe opens one for the resource.
func (c *sdkClient) listen(ctx context.Context, uri string) error {
	return c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
}

// The mcp-go client.

type mcpgoClient struct{ c *mcpgoclient.Client }

type mcpgoHandlers struct{ o *observed }

func (h mcpgoHandlers) Elicit(_ context.Context, r mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	h.o.add(func(o *observed) { o.elicitations = append(o.elicitations, r.Params.Message) })
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: h.o.elicitAnswer(r.Params.RequestedSchema)}}, nil
}

func (h mcpgoHandlers) CreateMessage(_ context.Context, r mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	b, _ := json.Marshal(r.Messages[0].Content)
	var tc struct{ Text string }
	json.Unmarshal(b, &tc)
	h.o.add(func(o *observed) { o.samplings = append(o.samplings, tc.Text) })
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent(sampled)},
		Model:           modelName,
	}, nil
}

func (h mcpgoHandlers) ListRoots(context.Context, mcpgo.ListRootsRequest) (*mcpgo.ListRootsResult, error) {
	return &mcpgo.ListRootsResult{Roots: []mcpgo.Root{{URI: rootURI, Name: "project"}}}, nil
}

func connectMCPGo(t *testing.T, o *observed, tr mcpgotransport.Interface, capable bool) *mcpgoClient {
	t.Helper()
	var opts []mcpgoclient.ClientOption
	if capable {
		h := mcpgoHandlers{o}
		opts = append(opts, mcpgoclient.WithElicitationHandler(h), mcpgoclient.WithSamplingHandler(h), mcpgoclient.WithRootsHandler(h))
	}
	c := mcpgoclient.NewClient(tr, opts...)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("mcp-go client: start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		b, _ := json.Marshal(n.Params)
		var p struct {
			Data     any     `json:"data"`
			Progress float64 `json:"progress"`
			URI      string  `json:"uri"`
		}
		json.Unmarshal(b, &p)
		o.add(func(o *observed) {
			switch n.Method {
			case "notifications/message":
				o.logs = append(o.logs, fmt.Sprint(p.Data))
			case "notifications/progress":
				o.progress = append(o.progress, p.Progress)
				o.progressAt = append(o.progressAt, time.Now())
			case "notifications/resources/updated":
				o.updated = append(o.updated, p.URI)
			default:
				o.notes[n.Method]++
			}
		})
	})
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-go-2026-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("mcp-go client: initialize: %v", err)
	}
	return &mcpgoClient{c: c}
}

func (c *mcpgoClient) version() string { return c.c.ProtocolVersion() }

func mcpgoMeta(meta map[string]any) *mcpgo.Meta {
	if meta == nil {
		return nil
	}
	m := &mcpgo.Meta{AdditionalFields: map[string]any{}}
	for k, v := range meta {
		if k == "progressToken" {
			m.ProgressToken = v
		} else {
			m.AdditionalFields[k] = v
		}
	}
	return m
}

func (c *mcpgoClient) call(ctx context.Context, name string, args, meta map[string]any) (string, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments, req.Params.Meta = name, args, mcpgoMeta(meta)
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcpgo.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed: %s", name, text)
	}
	return text, nil
}

func (c *mcpgoClient) prompt(ctx context.Context, name string) (string, error) {
	req := mcpgo.GetPromptRequest{}
	req.Params.Name = name
	res, err := c.c.GetPrompt(ctx, req)
	if err != nil {
		return "", err
	}
	if tc, ok := res.Messages[0].Content.(mcpgo.TextContent); ok {
		return tc.Text, nil
	}
	return "", fmt.Errorf("prompt %s: %T content", name, res.Messages[0].Content)
}

func (c *mcpgoClient) read(ctx context.Context, uri string) (string, error) {
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.c.ReadResource(ctx, req)
	if err != nil {
		return "", err
	}
	if tc, ok := res.Contents[0].(mcpgo.TextResourceContents); ok {
		return tc.Text, nil
	}
	return "", fmt.Errorf("resource %s: %T contents", uri, res.Contents[0])
}

func (c *mcpgoClient) tools(ctx context.Context) ([]string, error) {
	res, err := c.c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, nil
}

// listen runs mcp-go's Listen, which returns only when the stream ends
// (here, when ctx does): an early end is a failure.
func (c *mcpgoClient) listen(ctx context.Context, uri string) error {
	errc := make(chan error, 1)
	go func() {
		errc <- c.c.Listen(ctx, mcpgo.SubscriptionFilter{ToolsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: []string{uri}})
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("subscriptions/listen ended at once: %w", err)
	case <-time.After(300 * time.Millisecond):
		return nil
	}
}

// run2026 runs the scenario of the 2026 tests with a connected client,
// whose messages conv validated.
func run2026(t *testing.T, c client2026, o *observed, conv *mcpschema.Conversation) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if v := c.version(); v != v2026 {
		t.Fatalf("negotiated protocol version %q, want %s", v, v2026)
	}
	names, err := c.tools(ctx)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, want := range []string{"ask", "sample", "roots", "ask_twice", "test_tool_with_logging", "test_tool_with_progress", "add_note", "enable_extra_tool"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	// A result and the nonce its execution drew: a resumed execution
	// answers with the nonce of the question the client answered.
	type answer struct {
		Nonce   string         `json:"nonce"`
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
		Text    string         `json:"text"`
		Model   string         `json:"model"`
		Roots   []struct {
			URI string `json:"uri"`
		} `json:"roots"`
		First  map[string]any `json:"first"`
		Second map[string]any `json:"second"`
	}
	call := func(name string, args, meta map[string]any) answer {
		t.Helper()
		text, err := c.call(ctx, name, args, meta)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var a answer
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatalf("%s: %q: %v", name, text, err)
		}
		return a
	}
	last := func(list func(o *observed) []string) string {
		var s string
		o.get(func(o *observed) bool {
			if l := list(o); len(l) > 0 {
				s = l[len(l)-1]
			}
			return true
		})
		return s
	}
	elicitations := func(o *observed) []string { return o.elicitations }

	// Elicitation inside a tool call.
	a := call("ask", map[string]any{"message": "Who are you?"}, nil)
	if a.Action != "accept" || a.Content["name"] != userName || last(elicitations) != "Who are you? "+a.Nonce {
		t.Errorf("ask: %+v after the elicitation %q", a, last(elicitations))
	}
	// Sampling.
	a = call("sample", map[string]any{"prompt": "Capital of France?"}, nil)
	if a.Text != sampled || a.Model != modelName || last(func(o *observed) []string { return o.samplings }) != "Capital of France? "+a.Nonce {
		t.Errorf("sample: %+v", a)
	}
	// Roots.
	a = call("roots", nil, nil)
	if len(a.Roots) != 1 || a.Roots[0].URI != rootURI {
		t.Errorf("roots: %+v", a)
	}
	// Two questions in one call; the log messages and progress sent after
	// each resume reach the client.
	a = call("ask_twice", nil, map[string]any{logLevel: "info", "progressToken": "twice"})
	if a.First["name"] != userName || a.Second["age"] != float64(userAge) {
		t.Errorf("ask_twice: %+v", a)
	}
	waitFor(t, "ask_twice's log messages and progress", func() bool {
		return o.get(func(o *observed) bool {
			return slices.ContainsFunc(o.logs, func(s string) bool { return strings.Contains(s, "after first "+a.Nonce) }) &&
				slices.ContainsFunc(o.logs, func(s string) bool { return strings.Contains(s, "after second "+a.Nonce) }) &&
				slices.Contains(o.progress, 1) && slices.Contains(o.progress, 2)
		})
	})
	// A prompt and a resource that elicit.
	for kind, get := range map[string]func() (string, error){
		"prompts/get ask_prompt":    func() (string, error) { return c.prompt(ctx, "ask_prompt") },
		"resources/read mrtr://ask": func() (string, error) { return c.read(ctx, "mrtr://ask") },
	} {
		text, err := get()
		nonce := strings.TrimPrefix(last(elicitations), "name ")
		if err != nil || text != "hello "+userName+" "+nonce {
			t.Errorf("%s: %q, %v (last elicitation %q)", kind, text, err, last(elicitations))
		}
	}

	// Logging and progress of a plain tool: log messages only when the
	// request asks for them (mcpschema checks none comes otherwise).
	nlogs := func() (n int) { o.get(func(o *observed) bool { n = len(o.logs); return true }); return }
	before := nlogs()
	if _, err := c.call(ctx, "test_tool_with_logging", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.call(ctx, "test_tool_with_logging", nil, map[string]any{logLevel: "info"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "test_tool_with_logging's three log messages", func() bool { return nlogs() >= before+3 })
	if _, err := c.call(ctx, "test_tool_with_progress", nil, map[string]any{"progressToken": "plain"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "test_tool_with_progress's progress 0, 50 and 100", func() bool {
		return o.get(func(o *observed) bool { return slices.Contains(o.progress, 50) && slices.Contains(o.progress, 100) })
	})

	// List changes through subscriptions/listen.
	if err := c.listen(ctx, "notes://list"); err != nil {
		t.Fatalf("listen: %v", err)
	}
	waitFor(t, "the subscriptions' acknowledgments", func() bool {
		return conv.Counts()["notifications/subscriptions/acknowledged"] > 0
	})
	if _, err := c.call(ctx, "add_note", map[string]any{"title": "t", "text": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "notes://list updated and the resource list changed", func() bool {
		return o.get(func(o *observed) bool {
			return slices.Contains(o.updated, "notes://list") && o.notes["notifications/resources/list_changed"] > 0
		})
	})
	if _, err := c.call(ctx, "enable_extra_tool", nil, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tool list changed", func() bool {
		return o.get(func(o *observed) bool { return o.notes["notifications/tools/list_changed"] > 0 })
	})
	if names, err := c.tools(ctx); err != nil || !slices.Contains(names, "extra_tool") {
		t.Errorf("tools/list after the change: %v, %v", names, err)
	}
	if _, err := c.call(ctx, "disable_extras", nil, nil); err != nil {
		t.Fatal(err)
	}

	// What went over the wire: all of it at 2026-07-28, all of it valid.
	counts := conv.Counts()
	if conv.Legacy() != 0 {
		t.Errorf("%d exchanges at an earlier revision", conv.Legacy())
	}
	for _, want := range []string{"server/discover complete", "tools/list complete", "tools/call input_required", "tools/call complete",
		"prompts/get input_required", "resources/read input_required", "notifications/message", "notifications/progress",
		"notifications/subscriptions/acknowledged", "notifications/resources/list_changed", "notifications/resources/updated",
		"notifications/tools/list_changed"} {
		if counts[want] == 0 {
			t.Errorf("no %s validated: %v", want, counts)
		}
	}
	t.Logf("%d messages validated: %v", conv.Total(), counts)
}

// TestClients2026 connects real MCP clients to `hangar serve` at
// 2026-07-28: the go-sdk v1.8.0 client and the mcp-go v1.2.1 client, each
// over Streamable HTTP (one server for both) and over stdio (a process
// each). Each negotiates 2026-07-28 (through server/discover); elicitation,
// sampling and roots inside tools, a prompt and a resource complete
// through MRTR (the plugin's execution resumed, not restarted); log
// messages (only when asked for) and progress reach it; list changes
// arrive through subscriptions/listen. A client that declared no
// elicitation gets -32021. Every message Hangar sends on these
// connections is valid by the revision's schema (mcpschema).
func TestClients2026(t *testing.T) {
	cfg := config2026(t, "")
	cache := testutil.ShareCompiledCache(t, t.TempDir())
	url, _ := serveHTTP2026(t, cfg, cache)
	t.Run("go-sdk/http", func(t *testing.T) {
		conv := mcpschema.NewConversation(t)
		hc := &http.Client{Transport: conv.RoundTripper(nil)}
		o := newObserved()
		c := connectSDK(t, o, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, sdkOpts{capable: true, listen: true})
		run2026(t, c, o, conv)

		bare := connectSDK(t, newObserved(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, sdkOpts{})
		if _, err := bare.call(context.Background(), "ask", nil, nil); err == nil || conv.Counts()["tools/call error -32021"] != 1 {
			t.Errorf("ask without the elicitation capability: %v; %v", err, conv.Counts())
		}
	})
	t.Run("go-sdk/stdio", func(t *testing.T) {
		conv := mcpschema.NewConversation(t)
		stdin, stdout := serveStdio2026(t, cfg, cache, conv)
		o := newObserved()
		c := connectSDK(t, o, &mcp.IOTransport{Reader: stdout, Writer: stdin}, sdkOpts{capable: true, listen: true})
		run2026(t, c, o, conv)
	})
	t.Run("mcp-go/http", func(t *testing.T) {
		conv := mcpschema.NewConversation(t)
		hc := &http.Client{Transport: conv.RoundTripper(nil)}
		tr, err := mcpgotransport.NewStreamableHTTP(url, mcpgotransport.WithHTTPBasicClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		o := newObserved()
		c := connectMCPGo(t, o, tr, true)
		run2026(t, c, o, conv)

		tr, _ = mcpgotransport.NewStreamableHTTP(url, mcpgotransport.WithHTTPBasicClient(hc))
		bare := connectMCPGo(t, newObserved(), tr, false)
		if _, err := bare.call(context.Background(), "ask", nil, nil); err == nil || conv.Counts()["tools/call error -32021"] != 1 {
			t.Errorf("ask without the elicitation capability: %v; %v", err, conv.Counts())
		}
	})
	t.Run("mcp-go/stdio", func(t *testing.T) {
		conv := mcpschema.NewConversation(t)
		stdin, stdout := serveStdio2026(t, cfg, cache, conv)
		o := newObserved()
		c := connectMCPGo(t, o, mcpgotransport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))), true)
		run2026(t, c, o, conv)
	})
	t.Run("raw", func(t *testing.T) { rawInputRequired(t, url) })
}

// post2026 sends one request of MCP 2026-07-28, as a well-behaved client
// builds it (its _meta and headers), by hand, and returns the HTTP status
// and the JSON-RPC response (read from a JSON body or an event stream).
// hc may validate the exchange (mcpschema.Conversation.RoundTripper).
// params' _meta, if given, replaces the default; a taskId is sent as
// Mcp-Name, as a tasks/* request's name.
func post2026(t *testing.T, hc *http.Client, url, method string, params map[string]any) (int, map[string]any) {
	t.Helper()
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    v2026,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-2026", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}}
	for k, v := range params {
		p[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v2026)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if uri, ok := params["uri"].(string); ok {
		req.Header.Set("Mcp-Name", uri)
	} else if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	msg, _, err := testutil.ReadMCPAnswer(resp, nil)
	if err != nil {
		t.Fatalf("%s: %v: %q", method, err, b)
	}
	return resp.StatusCode, msg
}

// inputRequired returns the requestState and the one input request's key
// and message of an input_required result, or fails.
func inputRequired(t *testing.T, msg map[string]any) (state, key, message string) {
	t.Helper()
	r, _ := msg["result"].(map[string]any)
	ir, _ := r["inputRequests"].(map[string]any)
	state, _ = r["requestState"].(string)
	if r["resultType"] != "input_required" || state == "" || len(ir) != 1 {
		t.Fatalf("want an input_required result with one input request and a requestState: %v", msg)
	}
	for k, v := range ir {
		key = k
		p, _ := v.(map[string]any)["params"].(map[string]any)
		message, _ = p["message"].(string)
	}
	return state, key, message
}

// resultText is the text of a result's first content block, or "".
func resultText(msg map[string]any) string {
	r, _ := msg["result"].(map[string]any)
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

// rawInputRequired: a raw 2026 tools/call of a tool that elicits is
// answered input_required with inputRequests and requestState, and the
// retry with the answer completes the same execution.
func rawInputRequired(t *testing.T, url string) {
	conv := mcpschema.NewConversation(t)
	hc := &http.Client{Transport: conv.RoundTripper(nil)}
	args := map[string]any{"message": "Name?"}
	status, msg := post2026(t, hc, url, "tools/call", map[string]any{"name": "ask", "arguments": args})
	state, key, question := inputRequired(t, msg)
	if status != http.StatusOK || !strings.HasPrefix(question, "Name? ") {
		t.Errorf("HTTP %d, question %q", status, question)
	}
	status, msg = post2026(t, hc, url, "tools/call", map[string]any{"name": "ask", "arguments": args, "requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": userName}}}})
	var a struct {
		Nonce   string
		Content map[string]any
	}
	json.Unmarshal([]byte(resultText(msg)), &a)
	if status != http.StatusOK || a.Content["name"] != userName || question != "Name? "+a.Nonce {
		t.Errorf("the retry: HTTP %d %v", status, msg)
	}
	if c := conv.Counts(); c["tools/call input_required"] != 1 || c["tools/call complete"] != 1 {
		t.Errorf("validated: %v", c)
	}
}

// TestStdioInitializeAfterDiscover: over stdio, a client that probes with
// server/discover and then falls back to initialize (as the revision tells
// a client to do when the probe's answer is late, and as mcp-go does after
// 5 s, while a server still lists its plugins) gets its session.
func TestStdioInitializeAfterDiscover(t *testing.T) {
	cmd := exec.Command(hangar, "serve", testutil.BuildPlugin(t, "./internal/testplugins/mrtr"))
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	exchange := func(msg string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s: %v", msg, lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", lines.Bytes(), err)
		}
		return m
	}
	discover := exchange(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if discover["result"] == nil {
		t.Fatalf("server/discover: %v", discover)
	}
	init := exchange(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fallback","version":"1"}}}`)
	if r, _ := init["result"].(map[string]any); r["protocolVersion"] != "2025-11-25" {
		t.Errorf("initialize after server/discover: %v; want a 2025-11-25 session", init)
	}
}
