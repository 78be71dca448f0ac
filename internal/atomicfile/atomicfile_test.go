package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hangar-mcp/hangar/internal/atomicfile"
)

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	file := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer"} {
		if err := atomicfile.Write(dir, file, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != content {
			t.Errorf("read %q, %v; want %q", b, err, content)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v, %v", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	// A failed write leaves no temporary file and the old content.
	if err := atomicfile.Write(dir, filepath.Join(dir, "missing", "f"), []byte("x")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind after a failure: %v", entries)
	}
}
