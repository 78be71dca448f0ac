package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	tmp, err := c.temp()
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

// tempPrefix starts the names of files being written into the cache.
const tempPrefix = ".tmp-"

// temp creates a temporary file in the cache, marked as being written
// until it is closed, so that clean leaves it alone.
func (c Cache) temp() (*os.File, error) {
	dir := filepath.Join(c.Dir, "blobs", "sha256")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return nil, err
	}
	holdTemp(f)
	return f, nil
}

// clean removes the temporary files of downloads that did not finish, as
// when hangar was killed during one: content never verified, never used.
// A file another process is still writing is kept.
func (c Cache) clean() {
	if c.Dir == "" {
		return
	}
	dir := filepath.Join(c.Dir, "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err == nil && abandonedTemp(p, fi) {
			os.Remove(p)
		}
	}
}

// A verification record says that this machine verified an OCI manifest
// under a signature policy and found the module with the given SHA-256 in
// it. Records live in Dir/verified/<hex SHA-256 of policy and manifest>,
// written only after the signature check passed; they bind a lock entry's
// module digest to the manifest that was verified, so that an edited lock
// file cannot make a plugin serve another cached module.
type verification struct {
	Manifest string `json:"manifest"`
	Policy   string `json:"policy"`
	SHA256   string `json:"sha256"`
}

func (c Cache) recordPath(manifest, policy string) string {
	k := sha256.Sum256([]byte(policy + "\n" + manifest))
	return filepath.Join(c.Dir, "verified", hex.EncodeToString(k[:]))
}

// recordVerified records that manifest, verified under policy (a policyID),
// holds the module with SHA-256 module. Failing to record is harmless: the
// manifest is verified again next time.
func (c Cache) recordVerified(manifest, policy, module string) {
	if c.Dir == "" {
		return
	}
	data, err := json.Marshal(verification{Manifest: manifest, Policy: policy, SHA256: module})
	if err != nil {
		return
	}
	p := c.recordPath(manifest, policy)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	_ = writeFileAtomic(p, data, 0o644)
}

// verifiedModule returns the module SHA-256 recorded for manifest verified
// under policy, if any.
func (c Cache) verifiedModule(manifest, policy string) (string, bool) {
	if c.Dir == "" {
		return "", false
	}
	b, err := ReadModule(c.recordPath(manifest, policy), 4<<10)
	if err != nil {
		return "", false
	}
	var v verification
	if json.Unmarshal(b, &v) != nil || v.Manifest != manifest || v.Policy != policy || !isHex64(v.SHA256) {
		return "", false
	}
	return v.SHA256, true
}

// hashFile returns the SHA-256 of a regular file, in hex. Devices, FIFOs
// and directories are refused (ErrNotRegular) without being read.
func hashFile(path string) (string, error) { return hashRegular(path, 0) }

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
