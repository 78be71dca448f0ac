package plugintest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/pdk"
)

// declared connects a go-sdk client with the options plugintest gives it
// for o to a go-sdk server, and returns the capabilities the server got
// in initialize. (plugintest's own server is Hangar's, whose plugins see
// no capabilities of a session's client.)
func declared(t *testing.T, o *Options) *mcp.ClientCapabilities {
	t.Helper()
	ctx := t.Context()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, clientOptions(o))
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	return ss.InitializeParams().Capabilities
}

// TestClientDeclaresApps checks what the test's client declares: the MCP
// Apps extension besides the go-sdk's defaults (roots) and what the
// test's options add, unless NoApps is set or the test declares the
// extension itself; the test's options are not changed.
func TestClientDeclaresApps(t *testing.T) {
	ui := `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}`
	own := &mcp.ClientCapabilities{Experimental: map[string]any{"x": map[string]any{}}}
	ownUI := &mcp.ClientCapabilities{}
	ownUI.AddExtension(pdk.AppExtension, map[string]any{"mimeTypes": []string{"text/html"}})
	elicit := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }
	tests := []struct {
		name                        string
		o                           *Options
		extensions                  string
		roots, elicit, experimental bool
	}{
		{"default", &Options{}, ui, true, false, false},
		{"NoApps", &Options{NoApps: true}, "null", true, false, false},
		{"with elicitation", &Options{Client: &mcp.ClientOptions{ElicitationHandler: elicit}}, ui, true, true, false},
		{"own capabilities", &Options{Client: &mcp.ClientOptions{Capabilities: own}}, ui, false, false, true},
		{"own extension", &Options{Client: &mcp.ClientOptions{Capabilities: ownUI}}, `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}`, false, false, false},
	}
	for _, tt := range tests {
		caps := declared(t, tt.o)
		b, _ := json.Marshal(caps.Extensions)
		if string(b) != tt.extensions || (caps.RootsV2 != nil) != tt.roots || (caps.Elicitation != nil) != tt.elicit || (caps.Experimental != nil) != tt.experimental {
			t.Errorf("%s: extensions %s, roots %v, elicitation %v, experimental %v; want %s, %v, %v, %v",
				tt.name, b, caps.RootsV2 != nil, caps.Elicitation != nil, caps.Experimental != nil, tt.extensions, tt.roots, tt.elicit, tt.experimental)
		}
	}
	if own.Extensions != nil {
		t.Errorf("the test's Capabilities were changed: %v", own.Extensions)
	}
}
