package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestPrefixReachesEveryURI serves examples/notes under the prefix "notes":
// the resource link add_note returns, the embedded resource of the
// summarize_note prompt and the URI of resources/updated all carry the
// prefix, and the client can read, subscribe to and complete what it is
// given, while the plugin sees its own URIs.
func TestPrefixReachesEveryURI(t *testing.T) {
	// The notes keep their state in instance memory: one instance.
	p := loadPlugin(t, "notes", testutil.BuildPlugin(t, "./examples/notes"), config.Limits{MaxInstances: 1})
	s := newServer(t, nil, server.Mount{Plugin: p, Prefix: "notes"})
	updated := make(chan string, 8)
	cs := connect(t, s, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	ctx := context.Background()

	callTool(t, cs, "notes_add_note", map[string]any{"title": "first", "text": "one"})
	res := callTool(t, cs, "notes_add_note", map[string]any{"title": "second", "text": "two"})
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("add_note = %+v", res)
	}
	link, ok := res.Content[1].(*mcp.ResourceLink)
	if !ok {
		t.Fatalf("content[1] is %T, want a resource link", res.Content[1])
	}
	if link.URI != "notes+notes://note/2" {
		t.Errorf("link URI = %q, want notes+notes://note/2", link.URI)
	}

	// The link is readable as returned, and the contents carry it back.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	if err != nil {
		t.Fatalf("reading the returned link %s: %v", link.URI, err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].URI != link.URI || !strings.Contains(rr.Contents[0].Text, "# second") {
		t.Errorf("read %s = %+v", link.URI, rr.Contents)
	}

	// resources/list agrees with the link once the plugin's change is applied.
	waitFor(t, "the new note listed", func() bool {
		for r, err := range cs.Resources(ctx, nil) {
			if err == nil && r.URI == link.URI {
				return true
			}
		}
		return false
	}, nil)

	// The prompt's embedded resource carries the prefix and reads back.
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "notes_summarize_note", Arguments: map[string]string{"id": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	emb, ok := pr.Messages[0].Content.(*mcp.EmbeddedResource)
	if !ok || emb.Resource == nil {
		t.Fatalf("prompt message 0 = %#v, want an embedded resource", pr.Messages[0].Content)
	}
	if emb.Resource.URI != link.URI {
		t.Errorf("embedded resource URI = %q, want %q", emb.Resource.URI, link.URI)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: emb.Resource.URI}); err != nil {
		t.Errorf("reading the embedded resource's URI: %v", err)
	}

	// Completion refs are stripped before the plugin sees them: the plugin
	// completes only its own prompt name and template.
	for _, ref := range []*mcp.CompleteReference{
		{Type: "ref/prompt", Name: "notes_summarize_note"},
		{Type: "ref/resource", URI: "notes+notes://note/{id}"},
	} {
		cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "2"}})
		if err != nil {
			t.Fatalf("complete %+v: %v", ref, err)
		}
		if strings.Join(cr.Completion.Values, ",") != "2" {
			t.Errorf("complete %+v = %v, want [2]", ref, cr.Completion.Values)
		}
	}

	// A subscription to the returned link hears of the note's deletion
	// under the same URI.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: link.URI}); err != nil {
		t.Fatalf("subscribing to %s: %v", link.URI, err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "notes://note/2"}); err == nil {
		t.Error("subscribing to the unprefixed URI succeeded")
	}
	callTool(t, cs, "notes_delete_note", map[string]any{"id": "2"})
	select {
	case uri := <-updated:
		if uri != link.URI {
			t.Errorf("resources/updated for %q, want %q", uri, link.URI)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/updated for the deleted note")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: link.URI}); err != nil {
		t.Errorf("unsubscribing: %v", err)
	}
}
