package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeStopsDuringFetch: serve resolving a plugin from a registry that
// accepts connections and never answers stops as soon as its context ends
// (SIGINT and SIGTERM end it), instead of waiting for the fetch.
func TestServeStopsDuringFetch(t *testing.T) {
	isolate(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("plugins:\n  - name: s\n    source: oci://%s/hangar/p:1\n    verify: false\n", ln.Addr())), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan string, 1)
	go func() {
		var o, e strings.Builder
		Main(ctx, []string{"serve", "--stdio", "--config", cfg}, &Env{Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e})
		done <- e.String()
	}()
	// Wait until the fetch is under way, then stop.
	select {
	case c := <-accepted:
		accepted <- c
	case <-time.After(60 * time.Second):
		t.Fatal("serve never connected to the registry")
	}
	start := time.Now()
	cancel()
	select {
	case errOut := <-done:
		took := time.Since(start)
		if !strings.Contains(errOut, "plugin s") {
			t.Errorf("stderr: %s", errOut)
		}
		t.Logf("stopped %v after cancel: %s", took, strings.TrimSpace(errOut))
	case <-time.After(30 * time.Second):
		t.Fatal("serve still fetching 30s after its context ended")
	}
}
