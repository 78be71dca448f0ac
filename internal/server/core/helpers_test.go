package core_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

// load is servertest.Load.
func load(t testing.TB, name, pkg string, limits config.Limits) *plugin.Plugin {
	t.Helper()
	return servertest.Load(t, name, pkg, limits)
}

// newCore returns a core serving mounts, told of its offers by listeners.
func newCore(t testing.TB, mounts []core.Mount, listeners ...core.Listener) *core.Core {
	t.Helper()
	c := core.New(&core.Options{Logger: servertest.Logger()})
	for _, l := range listeners {
		c.Listen(l)
	}
	if err := c.Reload(context.Background(), mounts); err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeHost is a client sink: it answers sampling, elicitation and roots,
// and records what a plugin sends the client, and whether the core
// flushed it.
type fakeHost struct {
	mu       sync.Mutex
	sampled  []string // the text of each sampling request's first message
	elicited []string // each elicitation's message
	logs     []any    // each log message's data
	progress []*mcp.ProgressNotificationParams
	flushes  int
}

func (h *fakeHost) CreateMessage(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	text := ""
	if len(p.Messages) > 0 {
		if c, ok := p.Messages[0].Content.(*mcp.TextContent); ok {
			text = c.Text
		}
	}
	h.sampled = append(h.sampled, text)
	return &mcp.CreateMessageResult{Model: "fake", Role: "assistant", Content: &mcp.TextContent{Text: "heard " + text}}, nil
}

func (h *fakeHost) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.elicited = append(h.elicited, p.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
}

func (h *fakeHost) ListRoots(context.Context) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///work", Name: "work"}}}, nil
}

func (h *fakeHost) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, p.Data)
	return nil
}

func (h *fakeHost) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress = append(h.progress, p)
	return nil
}

func (h *fakeHost) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return nil
}

// Flush implements core.Flusher.
func (h *fakeHost) Flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushes++
}

// event is what a recorder was told.
type event struct {
	what string // "offer", "withdraw", "changed", "updated"
	kind core.Kind
	key  string
	list plugin.ListKind
}

// recorder is a core.Listener that records what it is told, and refuses
// the items named in refuse.
type recorder struct {
	mu     sync.Mutex
	events []event
	refuse map[string]bool
}

func (r *recorder) Offer(item any) error {
	var (
		kind core.Kind
		key  string
	)
	switch it := item.(type) {
	case *mcp.Tool:
		kind, key = core.Tools, it.Name
	case *mcp.Prompt:
		kind, key = core.Prompts, it.Name
	case *mcp.Resource:
		kind, key = core.Resources, it.URI
	case *mcp.ResourceTemplate:
		kind, key = core.Templates, it.URITemplate
	default:
		return errors.New("not an item")
	}
	if r.refuse[key] {
		return errors.New("refused by the recorder")
	}
	r.add(event{what: "offer", kind: kind, key: key})
	return nil
}

func (r *recorder) Withdraw(kind core.Kind, keys ...string) {
	for _, k := range keys {
		r.add(event{what: "withdraw", kind: kind, key: k})
	}
}

func (r *recorder) ListChanged(k plugin.ListKind) { r.add(event{what: "changed", list: k}) }

func (r *recorder) ResourceUpdated(uri string) error {
	r.add(event{what: "updated", key: uri})
	return nil
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// offered returns the keys of kind the recorder holds: offered and not
// withdrawn since.
func (r *recorder) offered(kind core.Kind) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := map[string]bool{}
	for _, e := range r.events {
		if e.kind != kind {
			continue
		}
		switch e.what {
		case "offer":
			held[e.key] = true
		case "withdraw":
			delete(held, e.key)
		}
	}
	return held
}

// count counts the events that match e in what, list and key (those set).
func (r *recorder) count(e event) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.events {
		if x.what == e.what && (e.list == 0 || x.list == e.list) && (e.key == "" || x.key == e.key) {
			n++
		}
	}
	return n
}

// principal returns the token info internal/auth gives a bearer token
// allowed plugins (config.AllPlugins for all).
func principal(t *testing.T, plugins ...string) *sdkauth.TokenInfo {
	t.Helper()
	const token = "core-test-token-with-enough-characters"
	sum := sha256.Sum256([]byte(token))
	a, err := auth.New(&config.Auth{Tokens: []config.Token{{ID: "t", SHA256: hex.EncodeToString(sum[:]), Plugins: plugins}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ti *sdkauth.TokenInfo
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	a.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ti = sdkauth.TokenInfoFromContext(r.Context())
	})).ServeHTTP(httptest.NewRecorder(), r)
	if ti == nil {
		t.Fatal("the token was refused")
	}
	return ti
}

// text is the text of a tool result's content, joined.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// eventually fails the test unless cond holds within 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func args(v map[string]any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
