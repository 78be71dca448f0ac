//go:build unix

package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/source"
)

// TestLoadNotRegular: a module path that is a device or a FIFO when it is
// read (configuration validation refuses both; a path can change after
// it) fails at once with ErrNotRegular, at start-up and on reload, with or
// without a lock file, instead of hanging or reading /dev/zero until
// memory runs out.
func TestLoadNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	engine, err := plugin.NewEngine("")
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, path := range []string{"/dev/zero", fifo} {
		for _, lock := range []string{"", filepath.Join(dir, "hangar.lock")} {
			spec := config.Plugin{Name: "p", Source: path, Kind: config.SourceFile, Path: path, LockFile: lock, Limits: config.DefaultLimits()}
			done := make(chan error, 1)
			go func() {
				_, err := loadPlugins(context.Background(), engine, []config.Plugin{spec}, log)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, source.ErrNotRegular) {
					t.Errorf("%s (lock %q): %v, want ErrNotRegular", path, lock, err)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s (lock %q): still loading after 60s", path, lock)
			}
		}
	}
}
