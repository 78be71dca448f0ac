package cli

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// servingCacheDir returns the compilation cache directory to serve from,
// given the configured one, and a function that removes what it made. A
// cache that cannot be written (one warmed into a container image whose root
// file system is read-only) serves as it is while every plugin is in it; but
// wazero fails to compile a module it cannot then store, as happens when the
// image runs on a CPU with other features than the one that warmed it, or
// with a plugin the image lacks. So a read-only cache is copied to a
// temporary directory, and served from there: the warm entries are used, and
// whatever must be compiled can be stored (the catalog cache beside it too).
// If no copy can be made (no writable temporary directory), the read-only
// cache is used as it is, and a plugin missing from it fails to load. The
// returned function removes the copy; call it once the engine is closed.
func servingCacheDir(dir string, log *slog.Logger) (string, func()) {
	keep := func() {}
	if dir == "" || writable(dir) {
		return dir, keep
	}
	if _, err := os.Stat(dir); err != nil {
		return dir, keep // missing: it is created, or the start says why
	}
	tmp, err := os.MkdirTemp("", "hangar-compiled-")
	if err == nil {
		err = copyTree(dir, tmp)
	}
	if err != nil {
		log.Warn("the compilation cache is read-only and cannot be copied to a temporary directory: a plugin missing from it will fail to compile; make TMPDIR writable", "cache_dir", dir, "error", err)
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return dir, keep
	}
	log.Info("the compilation cache is read-only: serving from a writable copy", "cache_dir", dir, "copy", tmp)
	return tmp, func() { os.RemoveAll(tmp) }
}

// copyTree copies the directories and regular files under src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return fmt.Errorf("copying %s: %w", path, err)
		}
		return out.Close()
	})
}
