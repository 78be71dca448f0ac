// Package examples_test builds the example plugins from source and drives
// each through Hangar's server with a real MCP client.
package examples_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
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
