//go:build unix

package config

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestModuleNotRegular: a device or a FIFO as a module is refused by
// validation, with no attempt to read it (which would hang or exhaust
// memory).
func TestModuleNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "p.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "/dev/zero is a device, not a regular file",
		fifo:        fifo + " is a FIFO, not a regular file",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := parse(t, "plugins:\n  - name: a\n    path: "+path+"\n")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want %q", path, err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: validation hangs", path)
		}
	}
	// Load refuses a configuration file that is not a regular file.
	if _, err := Load(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load(FIFO): %v", err)
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load(/dev/zero): %v", err)
	}
}
