package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// raw speaks MCP over HTTP by hand, as a hostile client may: it can stop
// reading a response, drop its connection or delete its session mid-call.
// Each raw client has connections of its own.
type raw struct {
	url string
	hc  *http.Client
	tr  *http.Transport
	sid string
	seq atomic.Int64
}

func (a *A) raw(url string) *raw {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	a.Cleanup(tr.CloseIdleConnections)
	return &raw{url: url, tr: tr, hc: &http.Client{Transport: tr}}
}

// post sends one JSON-RPC message and returns the response, unread.
func (c *raw) post(ctx context.Context, method string, params any, notification bool) (*http.Response, error) {
	var id any
	if !notification {
		id = c.seq.Add(1)
	}
	return testutil.PostMCP(ctx, c.hc, c.url, c.sid, method, params, id)
}

// initialize opens a session; it returns the HTTP status and the body of
// the answer.
func (c *raw) initialize(ctx context.Context) (int, string, error) {
	c.sid = ""
	resp, err := c.post(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "attacker", "version": "1"},
	}, false)
	if err != nil {
		return 0, "", err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(body), nil
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	resp, err = c.post(ctx, "notifications/initialized", nil, true)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	return http.StatusOK, string(body), nil
}

// mustInitialize opens a session or ends the attack.
func (c *raw) mustInitialize(a *A) {
	if code, body, err := c.initialize(a.ctx); err != nil || code != http.StatusOK {
		a.Fatalf("initialize: %d %s %v", code, body, err)
	}
}

// call posts a request and reads its answer: the JSON-RPC response after
// any notifications on the SSE stream, or an error if the stream ended
// without one.
func (c *raw) call(ctx context.Context, method string, params any) (map[string]any, []map[string]any, error) {
	resp, err := c.post(ctx, method, params, false)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp, nil)
}

// readAnswer reads a response to a request: its notifications, then the
// answer. Each notification is also handed to seen, if not nil.
func readAnswer(resp *http.Response, seen func(map[string]any)) (map[string]any, []map[string]any, error) {
	return testutil.ReadMCPAnswer(resp, seen)
}

func (c *raw) delete(ctx context.Context) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, "DELETE", c.url, nil)
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// toolCall is the params of tools/call.
func toolCall(name string, args map[string]any, token string) map[string]any {
	p := map[string]any{"name": name, "arguments": args}
	if token != "" {
		p["_meta"] = map[string]any{"progressToken": token}
	}
	return p
}

// errorMessage is the message of a JSON-RPC error answer, or "".
func errorMessage(answer map[string]any) string {
	if e, ok := answer["error"].(map[string]any); ok {
		return fmt.Sprint(e["message"])
	}
	return ""
}

// resultText is the text of a tools/call answer's first content block and
// whether the result is an error.
func resultText(answer map[string]any) (string, bool) {
	r, _ := answer["result"].(map[string]any)
	content, _ := r["content"].([]any)
	isErr, _ := r["isError"].(bool)
	if len(content) == 0 {
		return "", isErr
	}
	c, _ := content[0].(map[string]any)
	text, _ := c["text"].(string)
	return text, isErr
}

// client connects a go-sdk MCP client over Streamable HTTP, in a session
// of 2025-11-25: the attacks that use it are on sessions (2026-07-28 has
// none; its attacks are in a_mcp2026.go).
func (a *A) client(url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "attack", Version: "1"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		a.Fatalf("connecting to %s: %v", url, err)
	}
	a.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns the text of its result, failing on an
// error or an error result.
func callText(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
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
		return text, fmt.Errorf("error result: %s", text)
	}
	return text, nil
}

// echo checks that the flood plugin's echo tool answers through cs within
// limit, and returns how long it took.
func (a *A) echo(cs *mcp.ClientSession, limit time.Duration) time.Duration {
	ctx, cancel := context.WithTimeout(a.ctx, limit)
	defer cancel()
	start := time.Now()
	text, err := callText(ctx, cs, "echo", map[string]any{"text": "still served"})
	if err != nil || text != "still served" {
		a.Fatalf("echo: %q, %v", text, err)
	}
	return time.Since(start)
}

// writeFile replaces path's content at once (a new file renamed over it),
// so that a server watching it never reads half of it.
func (a *A) writeFile(path, content string) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		a.Fatalf("%v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		a.Fatalf("%v", err)
	}
}

// config writes a configuration file in a new directory and returns its
// path.
func (a *A) config(content string) string {
	path := filepath.Join(a.TempDir(), "hangar.yaml")
	a.writeFile(path, content)
	return path
}
