package stateless

import (
	"reflect"
	"testing"
)

// TestCapabilitiesKeepExtensions: the extensions a 2026-07-28 request
// declares reach the core (it serves a UI host the tools only views call);
// an extension's settings must be an object.
func TestCapabilitiesKeepExtensions(t *testing.T) {
	ui := map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}}
	caps, err := capabilities(map[string]any{"extensions": map[string]any{
		"io.modelcontextprotocol/ui":    ui,
		"io.modelcontextprotocol/tasks": map[string]any{},
		"com.example/off":               nil,
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"io.modelcontextprotocol/ui": ui, "io.modelcontextprotocol/tasks": map[string]any{}}
	if !reflect.DeepEqual(caps.Extensions, want) {
		t.Errorf("extensions %v, want %v", caps.Extensions, want)
	}
	if caps, err := capabilities(map[string]any{}); err != nil || caps.Extensions != nil {
		t.Errorf("no extensions: %v %v", caps.Extensions, err)
	}
	for _, bad := range []any{"ui", []any{}, map[string]any{"io.modelcontextprotocol/ui": true}} {
		if _, err := capabilities(map[string]any{"extensions": bad}); err == nil {
			t.Errorf("extensions %v accepted", bad)
		}
	}
}
