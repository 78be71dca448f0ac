package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
)

// The go-sdk's client speaks 2026-07-28 first: it asks server/discover,
// then sends every request with its _meta, and retries an input_required
// answer by itself with its handlers' answers.

// modernClient is a go-sdk client with handlers for sampling, elicitation
// and roots, and one for tool list changes, which makes it listen.
func modernClient(changed chan<- string) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			if changed != nil {
				changed <- "tools"
			}
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	return c
}

// modernClientSessions connects a 2026-07-28 client to s over stdio and
// over HTTP.
func modernClientSessions(t *testing.T, s *server.Server, changed chan<- string) map[string]*mcp.ClientSession {
	return clientSessions(t, s, func() *mcp.Client { return modernClient(changed) })
}

// clientSessions connects clients made by newClient to s over stdio and
// over HTTP, letting them choose the version.
func clientSessions(t *testing.T, s *server.Server, newClient func() *mcp.Client) map[string]*mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	out := map[string]*mcp.ClientSession{}
	sc, cc := net.Pipe()
	ss, err := s.ConnectIO(ctx, sc, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := newClient().Connect(ctx, &mcp.IOTransport{Reader: cc, Writer: cc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	out["stdio"] = cs
	cs, err = newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: serveHTTP(t, s, nil), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	out["http"] = cs
	return out
}

// TestModernGoSDKClient: the go-sdk client negotiates 2026-07-28 over
// stdio and HTTP, on both paths, and the plugins' sampling, elicitation and
// roots complete through multi round-trip requests.
func TestModernGoSDKClient(t *testing.T) {
	for _, fast := range []bool{true, false} {
		s := newServer(t, &server.Options{DisableFastPath: !fast}, server.Mount{Plugin: fixture(t)}, server.Mount{Plugin: v1full(t, config.Limits{})})
		for name, cs := range modernClientSessions(t, s, nil) {
			where := fmt.Sprintf("%s fast=%v", name, fast)
			if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("%s: negotiated %s", where, v)
			}
			if got := resultText(t, callTool(t, cs, "test_sampling", map[string]any{"prompt": "the answer?"})); got != "LLM response: forty-two" {
				t.Errorf("%s: test_sampling = %q", where, got)
			}
			if got := resultText(t, callTool(t, cs, "test_elicitation", map[string]any{"message": "who?"})); !strings.Contains(got, "ada") {
				t.Errorf("%s: test_elicitation = %q", where, got)
			}
			var roots mcp.ListRootsResult
			if err := json.Unmarshal([]byte(resultText(t, callTool(t, cs, "list_roots", map[string]any{}))), &roots); err != nil || len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///work" {
				t.Errorf("%s: list_roots = %+v %v", where, roots, err)
			}
			// Reads and prompts too.
			if res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil || len(res.Contents) != 1 {
				t.Errorf("%s: resources/read = %v %v", where, res, err)
			}
			if res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "test_simple_prompt"}); err != nil || len(res.Messages) == 0 {
				t.Errorf("%s: prompts/get = %v %v", where, res, err)
			}
		}
	}
}

// TestModernGoSDKClientMRTREverywhere: prompts/get and resources/read ask
// the client too, over both transports.
func TestModernGoSDKClientMRTREverywhere(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: mrtrPlugin(t)})
	named := func() *mcp.Client {
		return mcp.NewClient(&mcp.Implementation{Name: "n", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			},
		})
	}
	for name, cs := range clientSessions(t, s, named) {
		ctx := context.Background()
		p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ask_prompt"})
		if err != nil || !strings.Contains(fmt.Sprint(p.Messages[0].Content), "hello") {
			t.Errorf("%s: ask_prompt = %v %v", name, p, err)
		}
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mrtr://ask"})
		if err != nil || !strings.Contains(r.Contents[0].Text, "hello") {
			t.Errorf("%s: mrtr://ask = %v %v", name, r, err)
		}
	}
}

// TestModernGoSDKClientListens: a 2026-07-28 client with a tool list
// handler listens (subscriptions/listen), and hears of a plugin's change.
func TestModernGoSDKClientListens(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	changed := make(chan string, 8)
	sessions := modernClientSessions(t, s, changed)
	callTool(t, sessions["stdio"], "enable_extra_tool", map[string]any{})
	for range 2 { // each client hears of it
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no tools/list_changed reached a listening client")
		}
	}
}
