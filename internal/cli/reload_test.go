package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
)

// TestFileWatchStatsBeforeReading: an unchanged configuration is not read
// again, however often it is checked; a change of content, size, time or
// inode is noticed; a rewrite with the same content is not a change.
func TestFileWatchStatsBeforeReading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hangar.yaml")
	write := func(s string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	write("plugins: []\n", t0)

	var w fileWatch
	if !w.changed(path) {
		t.Fatal("first check reports no change")
	}
	for range 100 {
		if w.changed(path) {
			t.Fatal("unchanged file reported as changed")
		}
	}
	if w.hashes != 1 {
		t.Fatalf("unchanged file read %d times, want 1", w.hashes)
	}

	// Same size, new content, new time.
	write("plugins: {}\n", t0.Add(time.Second))
	if !w.changed(path) {
		t.Error("changed content not noticed")
	}
	// Same content, touched: read once, not a change.
	write("plugins: {}\n", t0.Add(2*time.Second))
	if w.changed(path) {
		t.Error("rewrite with the same content reported as a change")
	}
	// New content, same size and time, new inode (replaced by rename).
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("plugins: [1]\n"[:12]), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(tmp, t0.Add(2*time.Second), t0.Add(2*time.Second))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if !w.changed(path) {
		t.Error("file replaced by rename not noticed")
	}
	// Removed, then back.
	os.Remove(path)
	if !w.changed(path) {
		t.Error("removal not noticed")
	}
	n := w.hashes
	for range 10 {
		w.changed(path)
	}
	if w.hashes != n {
		t.Errorf("missing file read %d times", w.hashes-n)
	}
}

// TestConnectionsFor: the default connection cap leaves a quarter of the
// open-file limit (at least 64 descriptors) to everything else.
func TestConnectionsFor(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  int
	}{
		{1024, 768},
		{20000, 15000},
		{200, 136},
		{64, 16},
		{1 << 40, 1_000_000},
	} {
		if got := connectionsFor(tc.limit); got != tc.want {
			t.Errorf("connectionsFor(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
	if n := connectionLimit(); n < 16 || n > 1_000_000 {
		t.Errorf("connectionLimit() = %d", n)
	}
}

// TestFileWatchDoesNotReadOddFiles: a configuration replaced by a link to
// /dev/zero, a FIFO or a file larger than a configuration may be is
// noticed as a change without being read (reading /dev/zero would never
// end, opening a FIFO would wait for a writer).
func TestFileWatchDoesNotReadOddFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hangar.yaml")
	if err := os.WriteFile(path, []byte("plugins: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var w fileWatch
	w.changed(path)
	replace := func(what string, create func(tmp string) error) {
		t.Helper()
		tmp := filepath.Join(dir, "next")
		if err := create(tmp); err != nil {
			t.Skipf("%s: %v", what, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		done := make(chan bool, 1)
		go func() { done <- w.changed(path) }()
		select {
		case changed := <-done:
			if !changed {
				t.Errorf("%s: not noticed", what)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the watch is still reading it after 30s", what)
		}
	}
	replace("a link to /dev/zero", func(tmp string) error { return os.Symlink("/dev/zero", tmp) })
	replace("a FIFO", func(tmp string) error { return syscall.Mkfifo(tmp, 0o600) })
	big := func(b byte) func(string) error {
		return func(tmp string) error {
			return os.WriteFile(tmp, bytes.Repeat([]byte{b}, config.MaxFileSize+1), 0o600)
		}
	}
	replace("an oversized file", big('#'))
	// Not read: another oversized file of the same size is no change.
	tmp := filepath.Join(dir, "next")
	big(' ')(tmp)
	os.Rename(tmp, path)
	if w.changed(path) {
		t.Error("an oversized file was read")
	}
}

// TestReloadErrorsOnePerLine: a reload that fails with several problems logs
// each on a line of its own, never with escaped newlines.
func TestReloadErrorsOnePerLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hangar.yaml")
	if err := os.WriteFile(path, []byte("plugins:\n  - name: a\n    pathh: x.wasm\n  - name: B\n    path: missing.wasm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r := &reloader{path: path, log: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := r.reload(context.Background()); err == nil {
		t.Fatal("reload of a broken file succeeded")
	}
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want one record per problem (4), got:\n%s", logs.String())
	}
	for _, want := range []string{`unknown key \"pathh\"`, `invalid plugin name \"B\"`, "missing.wasm"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "time=") || !strings.Contains(l, `level=ERROR msg="reload failed; the previous plugins go on serving" error="`+path+":") {
			t.Errorf("unexpected record %q", l)
		}
		if strings.Contains(l, `\n`) {
			t.Errorf("escaped newline in %q", l)
		}
	}

	logs.Reset()
	logErrorLines(r.log, "m", errors.Join(errors.New("one"), errors.New("two\n\nthree")))
	if got := strings.Count(logs.String(), "\n"); got != 3 || strings.Contains(logs.String(), `\n`) {
		t.Errorf("joined errors: %d records:\n%s", got, logs.String())
	}
}
