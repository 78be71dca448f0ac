//go:build unix

package plugin_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// A FIFO in a granted directory is refused, not opened: opening it would
// wait for a writer, and reading it for data, beyond the call's end.
func TestFIFORefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	p := load(t, sleeper(t), plugin.Options{
		Limits: config.Limits{CallTimeout: 2 * time.Second},
		Grants: config.Grants{AllowedPaths: []config.Mount{{Host: dir, Guest: "/data", ReadOnly: true}}},
	})
	warm(t, p)
	start := time.Now()
	res, err := p.CallTool(context.Background(), nil, "read", json.RawMessage(`{"path":"/data/fifo"}`))
	if d := time.Since(start); d > time.Second {
		t.Errorf("reading a FIFO answered after %v", d)
	}
	if err != nil {
		t.Fatalf("reading a FIFO: %v, want an error result", err)
	}
	if got := text(t, res); !res.IsError || !strings.Contains(got, "not permitted") {
		t.Errorf("reading a FIFO: %q (isError %v), want an EPERM error", got, res.IsError)
	}
}
