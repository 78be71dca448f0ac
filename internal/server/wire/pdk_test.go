package wire_test

import (
	"testing"

	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/pdk"
)

// TestTaskMetaKeyAsPDK: the _meta key a tool's task policy travels under
// is written by the PDK and read by the edges; the PDK imports nothing of
// the server, so each has a copy, held equal here.
func TestTaskMetaKeyAsPDK(t *testing.T) {
	if wire.MetaTask != pdk.TaskMetaKey {
		t.Errorf("wire.MetaTask %q, pdk.TaskMetaKey %q", wire.MetaTask, pdk.TaskMetaKey)
	}
}

// TestAppConstantsAsPDK: the MCP Apps extension's name, a view's MIME type
// and the _meta keys of a tool's view are written by the PDK and read by
// the core; each has a copy, held equal here.
func TestAppConstantsAsPDK(t *testing.T) {
	for _, c := range []struct{ name, wire, pdk string }{
		{"ExtensionUI", wire.ExtensionUI, pdk.AppExtension},
		{"AppMIMEType", wire.AppMIMEType, pdk.AppMIMEType},
		{"MetaUI", wire.MetaUI, pdk.AppMetaKey},
		{"MetaUIResourceURI", wire.MetaUIResourceURI, pdk.AppResourceURIMetaKey},
	} {
		if c.wire != c.pdk {
			t.Errorf("wire.%s %q, the PDK's %q", c.name, c.wire, c.pdk)
		}
	}
}
