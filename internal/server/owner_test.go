package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
