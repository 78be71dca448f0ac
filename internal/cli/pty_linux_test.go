package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The frictions of issue 26 that need a terminal (friction_test.go has
// the others).

// openPTY opens a pseudo-terminal, closed at the end of the test, and
// returns its two ends. Its size is 0x0 until set.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// setSize sets the size of the terminal tty.
func setSize(t *testing.T, tty *os.File, cols, rows uint16) {
	t.Helper()
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatal(err)
	}
}

// TestStdioHintOnTerminal: hangar serve over stdio, started by hand on a
// terminal, says it waits for an MCP client on stdin; started by a client
// (stdin a pipe) it says nothing of the kind.
func TestStdioHintOnTerminal(t *testing.T) {
	isolate(t)
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	master, tty := openPTY(t)

	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"serve", "--stdio", wasm},
			&Env{Stdin: tty, Stdout: io.Discard, Stderr: &stderr})
	}()
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(stderr.String(), "waiting for an MCP client"); {
		if time.Now().After(deadline) {
			t.Fatalf("no hint that serve waits on stdin:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), `level=INFO msg="serving MCP over stdio: waiting for an MCP client's JSON-RPC messages on stdin.`) {
		t.Errorf("the hint, at INFO:\n%s", stderr.String())
	}
	master.Close() // the end of the terminal: stdin ends
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop at the end of stdin")
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	var out bytes.Buffer
	Main(context.Background(), []string{"serve", "--stdio", wasm}, &Env{Stdin: r, Stdout: io.Discard, Stderr: &out})
	if strings.Contains(out.String(), "waiting for an MCP client") {
		t.Errorf("the hint with stdin a pipe:\n%s", out.String())
	}
}

// TestBarsNeedATerminalSize: progress bars are drawn on a terminal that
// reports its width; on one that reports 0x0 (a pseudo-terminal whose size
// was never set), where bars show nothing, progress is logged instead.
func TestBarsNeedATerminalSize(t *testing.T) {
	_, tty := openPTY(t)
	if canDrawBars(tty) {
		t.Error("bars on a terminal of size 0x0")
	}
	setSize(t, tty, 80, 24)
	if !canDrawBars(tty) {
		t.Error("no bars on a terminal of 80x24")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if canDrawBars(f) || canDrawBars(&bytes.Buffer{}) {
		t.Error("bars on a file")
	}
}
