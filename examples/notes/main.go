//go:build wasip1

// Command notes is a Hangar plugin keeping notes in memory. It shows
// resources, a resource template, a prompt, completion and change
// notifications.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hangar-mcp/hangar/pdk"
)

const (
	listURI      = "notes://list"
	noteTemplate = "notes://note/{id}"
	markdown     = "text/markdown"
)

var notes = newStore()

func init() {
	pdk.AddTool(&pdk.Tool{
		Name:        "add_note",
		Title:       "Add note",
		Description: "Store a note. It becomes the resource notes://note/{id}.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"title": {"type": "string", "description": "Short title"},
				"text": {"type": "string", "description": "Body of the note, in Markdown"}
			},
			"required": ["title", "text"]
		}`),
	}, addNote)
	pdk.AddTool(&pdk.Tool{
		Name:        "delete_note",
		Title:       "Delete note",
		Description: "Delete a note by id.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"id": {"type": "string"}},
			"required": ["id"]
		}`),
		Annotations: &pdk.ToolAnnotations{IdempotentHint: true},
	}, deleteNote)

	pdk.AddResource(&pdk.Resource{
		URI:         listURI,
		Name:        "notes",
		Title:       "All notes",
		Description: "The list of notes, with their ids and titles.",
		MIMEType:    markdown,
	}, readList)
	pdk.AddResourceTemplate(&pdk.ResourceTemplate{
		URITemplate: noteTemplate,
		Name:        "note",
		Title:       "Note",
		Description: "A note by id.",
		MIMEType:    markdown,
	}, readNote)

	pdk.AddPrompt(&pdk.Prompt{
		Name:        "summarize_note",
		Title:       "Summarize a note",
		Description: "Ask the model to summarize a note.",
		Arguments: []*pdk.PromptArgument{
			{Name: "id", Description: "Id of the note", Required: true},
		},
	}, summarizeNote)

	pdk.SetCompletionHandler(completeNoteID)
}

func noteURI(id string) string {
	return "notes://note/" + id
}

func addNote(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.Title) == "" {
		return nil, errors.New("title must not be empty")
	}
	n := notes.add(args.Title, args.Text)
	pdk.AddResource(&pdk.Resource{URI: noteURI(n.ID), Name: "note-" + n.ID, Title: n.Title, MIMEType: markdown},
		func(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
			return noteContents(req.URI, n.ID)
		})
	ctx.NotifyResourceListChanged()
	ctx.NotifyResourceUpdated(listURI)
	return &pdk.CallToolResult{Content: []pdk.Content{
		&pdk.TextContent{Text: fmt.Sprintf("Added note %s.", n.ID)},
		&pdk.ResourceLink{URI: noteURI(n.ID), Name: "note-" + n.ID, Title: n.Title, MIMEType: markdown},
	}}, nil
}

func deleteNote(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		ID string `json:"id"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if !notes.remove(args.ID) {
		return nil, fmt.Errorf("no note with id %q", args.ID)
	}
	pdk.RemoveResources(noteURI(args.ID))
	ctx.NotifyResourceListChanged()
	ctx.NotifyResourceUpdated(listURI)
	ctx.NotifyResourceUpdated(noteURI(args.ID))
	return pdk.TextResult(fmt.Sprintf("Deleted note %s.", args.ID)), nil
}

func readList(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
	var b strings.Builder
	b.WriteString("# Notes\n\n")
	list := notes.list()
	if len(list) == 0 {
		b.WriteString("No notes yet.\n")
	}
	for _, n := range list {
		fmt.Fprintf(&b, "- [%s](%s) %s\n", n.ID, noteURI(n.ID), n.Title)
	}
	return textResource(req.URI, b.String()), nil
}

// readNote serves the note template: reads of notes://note/{id}.
func readNote(_ *pdk.Context, req *pdk.ReadResourceRequest) (*pdk.ReadResourceResult, error) {
	return noteContents(req.URI, req.Vars["id"])
}

// noteContents returns the note with the given id as the contents of uri.
func noteContents(uri, id string) (*pdk.ReadResourceResult, error) {
	n := notes.get(id)
	if n == nil {
		return nil, fmt.Errorf("no note with id %q", id)
	}
	return textResource(uri, renderNote(n)), nil
}

func renderNote(n *note) string {
	return fmt.Sprintf("# %s\n\n%s\n\n_Created %s_\n", n.Title, n.Text, n.Created.Format("2006-01-02 15:04 MST"))
}

func textResource(uri, text string) *pdk.ReadResourceResult {
	return &pdk.ReadResourceResult{Contents: []pdk.ResourceContents{
		&pdk.TextResourceContents{URI: uri, MIMEType: markdown, Text: text},
	}}
}

func summarizeNote(_ *pdk.Context, req *pdk.GetPromptRequest) (*pdk.GetPromptResult, error) {
	id := req.Arguments["id"]
	n := notes.get(id)
	if n == nil {
		return nil, fmt.Errorf("no note with id %q", id)
	}
	return &pdk.GetPromptResult{
		Description: "Summarize note " + id,
		Messages: []*pdk.PromptMessage{
			{Role: pdk.RoleUser, Content: &pdk.EmbeddedResource{
				Resource: &pdk.TextResourceContents{URI: noteURI(id), MIMEType: markdown, Text: renderNote(n)},
			}},
			{Role: pdk.RoleUser, Content: &pdk.TextContent{Text: "Summarize the note above in at most three bullet points."}},
		},
	}, nil
}

// completeNoteID completes the id argument of summarize_note and the id
// variable of the note template.
func completeNoteID(_ *pdk.Context, req *pdk.CompleteRequest) (*pdk.CompleteResult, error) {
	ref := req.Ref
	isNoteID := req.Argument.Name == "id" &&
		(ref.Type == pdk.RefPrompt && ref.Name == "summarize_note" ||
			ref.Type == pdk.RefResource && ref.URI == noteTemplate)
	if !isNoteID {
		return nil, nil
	}
	ids := notes.idsWithPrefix(req.Argument.Value)
	return &pdk.CompleteResult{Completion: pdk.Completion{Values: ids, Total: len(ids)}}, nil
}

// main is required by the toolchain; Hangar never calls it.
func main() {}
