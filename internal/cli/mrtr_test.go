package cli

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
)

// TestServerOptionsMRTR: the mrtr section reaches the server; --replica
// overrides its replica.
func TestServerOptionsMRTR(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	cfg := &config.Config{MRTR: config.MRTR{Replica: "r1", StateKey: key, PreviousStateKeys: [][]byte{key}, ParkTimeout: time.Minute, MaxParked: 5, MaxParkedPerPrincipal: 2, PeerURL: "http://{replica}:1/mcp", Peers: map[string]string{"r2": "http://b/mcp"}}}
	sv := &service{log: slog.New(slog.DiscardHandler), cfg: cfg}
	var o server.Options
	sv.serverOptions(&o, "")
	if o.Replica != "r1" || !bytes.Equal(o.StateKey, key) || len(o.PreviousStateKeys) != 1 || o.ParkTimeout != time.Minute || o.MaxParked != 5 || o.MaxParkedPerPrincipal != 2 || o.PeerURL != "http://{replica}:1/mcp" || o.Peers["r2"] == "" {
		t.Errorf("options = %+v", o)
	}
	sv.serverOptions(&o, "r9")
	if o.Replica != "r9" {
		t.Errorf("--replica r9 gave replica %q", o.Replica)
	}
}
