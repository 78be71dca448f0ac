//go:build unix

package source_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/source"
)

// TestModuleNotRegular: a device or a FIFO as a module is refused at once,
// never read (reading /dev/zero ran until memory ran out; opening a FIFO
// waited for a writer).
func TestModuleNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "p.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	dir := t.TempDir()
	for _, path := range []string{"/dev/zero", fifo, dir} {
		done := make(chan error, 2)
		go func() {
			_, err := (&source.Resolver{}).Resolve(context.Background(), config.Plugin{Name: "p", Source: path, Kind: config.SourceFile, Path: path})
			done <- err
			_, err = source.ReadModule(path, 0)
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if !errors.Is(err, source.ErrNotRegular) {
					t.Errorf("%s: %v, want ErrNotRegular", path, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: still reading after 30s", path)
			}
		}
	}
	big := filepath.Join(dir, "big.wasm")
	os.WriteFile(big, make([]byte, 100), 0o644)
	if _, err := source.ReadModule(big, 99); !errors.Is(err, source.ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if b, err := source.ReadModule(big, 100); err != nil || len(b) != 100 {
		t.Errorf("at the cap: %d bytes, %v", len(b), err)
	}
	r := &source.Resolver{MaxSize: 99}
	if _, err := r.Resolve(context.Background(), config.Plugin{Name: "p", Source: big, Kind: config.SourceFile, Path: big}); !errors.Is(err, source.ErrTooLarge) {
		t.Errorf("Resolve over the cap: %v", err)
	}
}
