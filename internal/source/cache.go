package source

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Cache is a content-addressed store of modules: the module whose SHA-256
// is <hex> lives in Dir/blobs/sha256/<hex>. Entries are written to a
// temporary file and renamed into place, so a reader never sees a partial
// entry, and are hashed again whenever they are looked up, so a corrupted
// or edited entry is never used. The zero Dir is not usable.
type Cache struct {
	Dir string
}

// Path returns where the entry for the SHA-256 hex digest h lives.
func (c Cache) Path(h string) string {
	return filepath.Join(c.Dir, "blobs", "sha256", h)
}

// Lookup returns the path of the entry for h if it is present and its
// content still hashes to h. An entry that does not is removed, and Lookup
// reports it absent.
func (c Cache) Lookup(h string) (string, bool) {
	if c.Dir == "" || !isHex64(h) {
		return "", false
	}
	p := c.Path(h)
	got, err := hashFile(p)
	if err != nil {
		return "", false
	}
	if got != h {
		os.Remove(p) // corrupt: fetch it again
		return "", false
	}
	return p, true
}

// Put copies r into the cache and returns the entry's SHA-256 (hex) and
// path. When want is not empty the content must hash to it, or Put stores
// nothing and returns an error wrapping ErrDigestMismatch. At most max
// bytes are read (max <= 0: no limit); longer content is an error wrapping
// ErrTooLarge.
func (c Cache) Put(r io.Reader, want string, max int64) (h, path string, err error) {
	if c.Dir == "" {
		return "", "", errors.New("no cache directory")
	}
	dir := filepath.Join(c.Dir, "blobs", "sha256")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	src := r
	if max > 0 {
		src = io.LimitReader(r, max+1)
	}
	n, err := io.Copy(io.MultiWriter(tmp, sum), src)
	if err != nil {
		return "", "", err
	}
	if max > 0 && n > max {
		return "", "", fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	h = hex.EncodeToString(sum.Sum(nil))
	if want != "" && h != want {
		return "", "", fmt.Errorf("%w: the content has sha256 %s, expected %s", ErrDigestMismatch, h, want)
	}
	if err := tmp.Sync(); err != nil {
		return "", "", err
	}
	if err := tmp.Close(); err != nil {
		return "", "", err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return "", "", err
	}
	path = c.Path(h)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", "", err
	}
	return h, path, nil
}

// hashFile returns the SHA-256 of a file, in hex.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if fi.IsDir() {
		return "", &fs.PathError{Op: "read", Path: path, Err: errors.New("is a directory")}
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
