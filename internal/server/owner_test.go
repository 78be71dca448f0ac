package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
)

const (
	aliceToken = "alice-0123456789abcdef0123456789abcdef"
	bobToken   = "bob-0123456789abcdef0123456789abcdef01"
)

// TestForeignDeleteKeepsCalls: bob's DELETE of alice's session is refused
// (403) and ends nothing: her call in progress answers its result, and her
// session goes on (issue 15.10). Before, the DELETE cancelled her calls
// before the go-sdk refused it.
func TestForeignDeleteKeepsCalls(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 2, CallTimeout: time.Minute})
	s := newServer(t, nil, server.Mount{Plugin: p})
	a, err := auth.New(&config.Auth{Tokens: []config.Token{
		{ID: "alice", SHA256: sha(aliceToken), Plugins: []string{"*"}},
		{ID: "bob", SHA256: sha(bobToken), Plugins: []string{"*"}},
	}}, &auth.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{Auth: a}))
	t.Cleanup(ts.Close)
	alice, err := httpConnect(t, ts.URL, aliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep_ms", Arguments: map[string]any{"ms": 2000}})
		if err == nil && (res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "slept 2000ms") {
			err = fmt.Errorf("answered %+v", res.Content)
		}
		done <- err
	}()
	waitBusy(t, p)

	req, _ := http.NewRequest(http.MethodDelete, ts.URL+server.Path, nil)
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Authorization", "Bearer "+bobToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob's DELETE of alice's session: HTTP %d, want 403", resp.StatusCode)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("alice's call after bob's DELETE: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("alice's call not answered")
	}
	if _, err := alice.ListTools(context.Background(), nil); err != nil {
		t.Errorf("alice's tools/list after bob's DELETE: %v", err)
	}
}

// TestBusyErrorNamesTheHolder: a call that finds its plugin busy for its
// whole wait is told which request of which session holds it, by the
// first characters of the session's ID (issue 15.9, the server's half).
// Three sessions call a plugin of one instance whose calls take 900 ms of
// their 1 s: the third waits for the second, which got the instance after
// the first.
func TestBusyErrorNamesTheHolder(t *testing.T) {
	p := floodPlugin(t, "flood", config.Limits{MaxInstances: 1, CallTimeout: time.Second})
	s := newServer(t, nil, server.Mount{Plugin: p})
	url := serveHTTP(t, s, nil)
	var clients [3]*mcp.ClientSession
	for i := range clients {
		clients[i] = httpClient(t, url)
	}
	results := make([]chan string, 3)
	for i, cs := range clients {
		results[i] = make(chan string, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep_ms", Arguments: map[string]any{"ms": 900}})
			if err != nil {
				results[i] <- "error: " + err.Error()
				return
			}
			results[i] <- resultText(t, res)
		}()
		time.Sleep(50 * time.Millisecond)
	}
	third := <-results[2]
	<-results[0]
	<-results[1]
	if !strings.Contains(third, "held by request ") {
		t.Fatalf("the third call: %q, want a busy error naming the holder", third)
	}
	named := false
	for _, cs := range clients[:2] {
		named = named || strings.Contains(third, "of session "+cs.ID()[:8]+"...")
	}
	if !named || strings.Contains(third, clients[0].ID()) || strings.Contains(third, clients[1].ID()) {
		t.Errorf("the busy error %q names no session by the start of its ID, or a whole ID", third)
	}
}
