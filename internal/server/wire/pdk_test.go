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
