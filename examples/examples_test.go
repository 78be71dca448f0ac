// Package examples_test builds the example plugins from source and drives
// each through Hangar's server with a real MCP client.
package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/tasks"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

// serve loads the example in dir and returns a client session to a server
// offering it.
func serve(t *testing.T, dir string, opts plugin.Options, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	e, err := plugin.NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./examples/"+dir))
	if err != nil {
		t.Fatal(err)
	}
	opts.Name = dir
	p, err := e.Load(ctx, wasm, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	s, err := server.New(ctx, []server.Mount{{Plugin: p}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "examples", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		t.Fatalf("%s: tool error %q", name, text)
	}
	return text
}

func TestHello(t *testing.T) {
	cs := serve(t, "hello", plugin.Options{Config: map[string]string{"greeting": "Ahoy"}}, nil)
	if got := call(t, cs, "greet", map[string]any{"name": "Ada"}); got != "Ahoy, Ada!" {
		t.Errorf("greet = %q", got)
	}
	if got := call(t, cs, "hash", map[string]any{"text": "abc", "algorithm": "md5"}); got != "900150983cd24fb0d6963f7d28e17f72" {
		t.Errorf("md5(abc) = %q", got)
	}
	if got := call(t, cs, "hash", map[string]any{"text": "abc"}); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("sha256(abc) = %q", got)
	}
	if got := call(t, cs, "base64", map[string]any{"text": "hangar"}); got != "aGFuZ2Fy" {
		t.Errorf("base64 = %q", got)
	}
	if got := call(t, cs, "base64", map[string]any{"text": "aGFuZ2Fy", "decode": true}); got != "hangar" {
		t.Errorf("base64 decode = %q", got)
	}
	uuids := strings.Split(call(t, cs, "uuid", map[string]any{"count": 3}), "\n")
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if len(uuids) != 3 || uuids[0] == uuids[1] {
		t.Errorf("uuid = %q", uuids)
	}
	for _, u := range uuids {
		if !v4.MatchString(u) {
			t.Errorf("%q is not a version 4 UUID", u)
		}
	}
}

func TestNotes(t *testing.T) {
	changed := make(chan struct{}, 10)
	// Default limits: the notes live in the plugin's memory, and Hangar
	// keeps one instance of a plugin that does not declare itself
	// stateless.
	cs := serve(t, "notes", plugin.Options{}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- struct{}{} },
	})
	ctx := context.Background()
	added := call(t, cs, "add_note", map[string]any{"title": "Groceries", "text": "eggs, flour"})
	id := regexp.MustCompile(`\d+`).FindString(added)
	if id == "" {
		t.Fatalf("add_note = %q: no id", added)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/list_changed after add_note")
	}

	list, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://list"})
	if err != nil || !strings.Contains(list.Contents[0].Text, "Groceries") {
		t.Fatalf("notes://list = %+v, %v", list, err)
	}
	note, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://note/" + id})
	if err != nil || !strings.Contains(note.Contents[0].Text, "eggs, flour") {
		t.Fatalf("note %s = %+v, %v", id, note, err)
	}
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize_note", Arguments: map[string]string{"id": id}})
	if err != nil || len(prompt.Messages) == 0 {
		t.Fatalf("summarize_note = %+v, %v", prompt, err)
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "notes://note/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: id[:1]},
	})
	if err != nil || len(comp.Completion.Values) != 1 || comp.Completion.Values[0] != id {
		t.Errorf("complete id = %+v, %v", comp, err)
	}
}

// TestNotesKeepsStateByDefault: with the default configuration every call
// sees every note added before it, and resources/list offers exactly the
// notes added (a plugin whose instances split its state would lose some).
func TestNotesKeepsStateByDefault(t *testing.T) {
	cs := serve(t, "notes", plugin.Options{}, nil)
	ctx := context.Background()
	var titles, want []string
	for i := range 6 {
		title := fmt.Sprintf("note %d", i)
		added := call(t, cs, "add_note", map[string]any{"title": title, "text": "text of " + title})
		id := regexp.MustCompile(`\d+`).FindString(added)
		titles = append(titles, title)
		want = append(want, "notes://note/"+id)

		list, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://list"})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range titles {
			if !strings.Contains(list.Contents[0].Text, tt) {
				t.Errorf("after adding %q: notes://list lacks %q:\n%s", title, tt, list.Contents[0].Text)
			}
		}
		var got []string
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(r.URI, "notes://note/") {
				got = append(got, r.URI)
			}
		}
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(want))
		if !slices.Equal(got, sorted) {
			t.Errorf("after adding %q: resources %v, want %v", title, got, sorted)
		}
	}
}

// TestReports runs the reports example's tools as tasks
// (io.modelcontextprotocol/tasks), as a 2026-07-28 client that declares
// the extension sees them over HTTP: build_report from working to
// completed, archive_reports through input_required, tasks/update and
// completed, and a cancelled build_report. A client without the extension
// gets the result directly.
func TestReports(t *testing.T) {
	ctx := context.Background()
	e, err := plugin.NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./examples/reports"))
	if err != nil {
		t.Fatal(err)
	}
	// Two instances: the cancelled call must not hold up the others.
	p, err := e.Load(ctx, wasm, plugin.Options{Name: "reports", Limits: config.Limits{MaxInstances: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	s, err := server.New(ctx, []server.Mount{{Plugin: p}}, &server.Options{Tasks: &tasks.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.HTTPHandler(nil))
	t.Cleanup(ts.Close)
	c := &client2026{t: t, url: ts.URL + server.Path}

	// Without the extension: the result, after the work.
	res := c.call("tools/call", "build_report", map[string]any{"name": "build_report",
		"arguments": map[string]any{"period": "2026-Q3", "sections": 2, "seconds_per_section": 0.1}}, nil)
	if res["resultType"] != "complete" || !strings.Contains(fmt.Sprint(res["content"]), "section 2 of 2: done") {
		t.Fatalf("build_report without the extension: %v", res)
	}

	withTasks := map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	res = c.call("tools/call", "build_report", map[string]any{"name": "build_report",
		"arguments": map[string]any{"period": "2026-Q3", "sections": 2, "seconds_per_section": 0.5}}, withTasks)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || res["status"] != "working" || id == "" {
		t.Fatalf("build_report as a task: %v", res)
	}
	done := c.waitTask(id, "completed", withTasks)
	if r, _ := done["result"].(map[string]any); r["isError"] == true || !strings.Contains(fmt.Sprint(r["content"]), "Report 2026-Q3") {
		t.Fatalf("completed: %v", done)
	}

	withElicit := map[string]any{"elicitation": map[string]any{}, "extensions": withTasks["extensions"]}
	res = c.call("tools/call", "archive_reports", map[string]any{"name": "archive_reports",
		"arguments": map[string]any{"period": "2026-Q3"}}, withElicit)
	id, _ = res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("archive_reports as a task: %v", res)
	}
	in := c.waitTask(id, "input_required", withElicit)
	reqs, _ := in["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("input_required: %v", in)
	}
	for key, r := range reqs {
		q, _ := r.(map[string]any)
		params, _ := q["params"].(map[string]any)
		if q["method"] != "elicitation/create" || params["message"] != "Archive every report of 2026-Q3?" {
			t.Fatalf("input request %s: %v", key, q)
		}
		res = c.call("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, withElicit)
		if res["resultType"] != "complete" {
			t.Fatalf("tasks/update: %v", res)
		}
	}
	done = c.waitTask(id, "completed", withElicit)
	if r, _ := done["result"].(map[string]any); !strings.Contains(fmt.Sprint(r["content"]), "archived the reports of 2026-Q3") {
		t.Fatalf("completed: %v", done)
	}

	res = c.call("tools/call", "build_report", map[string]any{"name": "build_report",
		"arguments": map[string]any{"period": "2026", "sections": 20, "seconds_per_section": 60}}, withTasks)
	id, _ = res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("build_report as a task: %v", res)
	}
	if res = c.call("tasks/cancel", id, map[string]any{"taskId": id}, withTasks); res["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %v", res)
	}
	c.waitTask(id, "cancelled", withTasks)
}

// client2026 speaks MCP 2026-07-28 over HTTP by hand.
type client2026 struct {
	t   *testing.T
	url string
	id  int
}

// call sends a request, with Mcp-Name name and the client capabilities
// caps, and returns its result; a JSON-RPC error fails the test.
func (c *client2026) call(method, name string, params, caps map[string]any) map[string]any {
	c.t.Helper()
	if caps == nil {
		caps = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "examples", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	c.id++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest("POST", c.url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _, err := testutil.ReadMCPAnswer(resp, nil)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	res, ok := answer["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("%s: %v", method, answer)
	}
	return res
}

// waitTask polls tasks/get until the task has status, and returns its
// last answer.
func (c *client2026) waitTask(id, status string, caps map[string]any) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := c.call("tasks/get", id, map[string]any{"taskId": id}, caps)
		if res["status"] == status {
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s: %v, want status %s", id, res, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
