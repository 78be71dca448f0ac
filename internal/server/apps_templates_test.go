package server_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server"
)

// TestAppTemplateUnderPrefix: a ui:// resource template of a prefixed
// plugin (internal/testplugins/views' ui://item/{id}, under v) is listed
// as ui://v+item/{id}; a URI it matches reaches the plugin as the
// plugin's own (ui://item/42) and comes back under the prefix, with the
// tool-prefix tag, on the fast path and through the go-sdk.
func TestAppTemplateUnderPrefix(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			s := appServer(t, &server.Options{DisableFastPath: !fast})
			cs := connect(t, s, &mcp.ClientOptions{Capabilities: uiHostCaps()})
			ctx := context.Background()

			var uis []string
			for rt, err := range cs.ResourceTemplates(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(rt.URITemplate, "ui://") {
					uis = append(uis, rt.URITemplate)
				}
			}
			if want := []string{"ui://v+item/{id}"}; !reflect.DeepEqual(uis, want) {
				t.Errorf("ui:// templates listed: %q, want %q", uis, want)
			}

			const uri = "ui://v+item/42"
			r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(r.Contents) != 1 {
				t.Fatalf("reading %s: %v %v", uri, r, err)
			}
			c := r.Contents[0]
			if want := "<head>" + prefixTag("v") + "</head><p>ui://item/42 42</p>"; c.URI != uri || c.MIMEType != viewMIME || c.Text != want {
				t.Errorf("%s: URI %q, type %q, text %q; want %q, %q, %q", uri, c.URI, c.MIMEType, c.Text, uri, viewMIME, want)
			}

			// The plugin's own form is not served: no plugin offers it
			// unprefixed.
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://item/42"}); err == nil {
				t.Error("ui://item/42, the template's URI without the prefix, was read")
			}
		})
	}
}
