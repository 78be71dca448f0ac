package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// LockVersion is the version of the lock file format written and read.
const LockVersion = 1

// A Lock records what each plugin's source resolved to, so that later runs
// load exactly the same modules: an oci:// tag that moves in the registry
// keeps serving the locked manifest, and with the module in the cache no
// network is needed. It is kept in a JSON file, the configuration's lock
// file (hangar.lock for hangar.yaml, team.lock for team.yaml):
//
//	{
//	  "version": 1,
//	  "plugins": {
//	    "hello": {
//	      "source": "oci://registry.example/hangar/hello:1.0",
//	      "sha256": "<hex SHA-256 of the .wasm module>",
//	      "manifest": "sha256:<hex digest of the OCI manifest>",
//	      "verify": "key sha256:<hex SHA-256 of the key file>"
//	    }
//	  }
//	}
//
// Entries are keyed by plugin name; an entry applies only while the
// plugin's source, as written in the configuration, is the same. A Lock is
// safe for concurrent use.
type Lock struct {
	path string

	mu      sync.Mutex
	entries map[string]LockEntry
	changed map[string]bool // names put or deleted since the last load or save
}

// LockEntry is what one plugin's source resolved to.
type LockEntry struct {
	// Source is the plugin's source as written in the configuration.
	Source string `json:"source"`
	// SHA256 is the module's SHA-256, 64 lower-case hex digits.
	SHA256 string `json:"sha256"`
	// Manifest is the digest of the OCI manifest ("sha256:<hex>"), for
	// oci:// sources only.
	Manifest string `json:"manifest,omitempty"`
	// Verify identifies the signature policy the manifest was checked
	// against, for oci:// sources only: "disabled", "key sha256:<hex of the
	// key file>", or the keyless issuer and subject with "trusted_root
	// sha256:<hex of the trusted root file>". An entry locked under another
	// policy is resolved (and verified) again.
	Verify string `json:"verify,omitempty"`
}

type lockFile struct {
	Version int                  `json:"version"`
	Plugins map[string]LockEntry `json:"plugins"`
}

// lockFileMu serializes read-merge-write cycles on each lock file within
// the process.
var lockFileMu sync.Map // path -> *sync.Mutex

func fileMutex(path string) *sync.Mutex {
	m, _ := lockFileMu.LoadOrStore(path, new(sync.Mutex))
	return m.(*sync.Mutex)
}

// LoadLock reads the lock file at path. A missing file is an empty lock
// (Save creates it); a malformed one is an error.
func LoadLock(path string) (*Lock, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	entries, err := readLockFile(abs)
	if err != nil {
		return nil, err
	}
	return &Lock{path: abs, entries: entries, changed: map[string]bool{}}, nil
}

func readLockFile(path string) (map[string]LockEntry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]LockEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s; fix it, or delete it to resolve every source again", ErrBadLock, path, fmt.Sprintf(format, args...))
	}
	var lf lockFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lf); err != nil {
		return nil, bad("%v", err)
	}
	if dec.More() {
		return nil, bad("extra data after the JSON object")
	}
	if lf.Version != LockVersion {
		return nil, bad("version %d, want %d", lf.Version, LockVersion)
	}
	for name, e := range lf.Plugins {
		switch {
		case e.Source == "":
			return nil, bad("plugin %q: no source", name)
		case !isHex64(e.SHA256):
			return nil, bad("plugin %q: sha256 %q is not 64 lower-case hexadecimal digits", name, e.SHA256)
		case e.Manifest != "" && !isDigest(e.Manifest):
			return nil, bad("plugin %q: manifest %q is not a sha256:<hex> digest", name, e.Manifest)
		case strings.HasPrefix(e.Source, "oci://") && e.Manifest == "":
			return nil, bad("plugin %q: an oci source needs a manifest digest", name)
		}
	}
	if lf.Plugins == nil {
		lf.Plugins = map[string]LockEntry{}
	}
	return lf.Plugins, nil
}

func isDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	return ok && isHex64(h)
}

// Path returns the lock file's absolute path.
func (l *Lock) Path() string { return l.path }

// Get returns the entry for a plugin.
func (l *Lock) Get(name string) (LockEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[name]
	return e, ok
}

// Put records the entry for a plugin.
func (l *Lock) Put(name string, e LockEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.entries[name]; ok && old == e {
		return
	}
	l.entries[name] = e
	l.changed[name] = true
}

// Retain removes the entries of plugins not named.
func (l *Lock) Retain(names []string) {
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := range l.entries {
		if !keep[n] {
			delete(l.entries, n)
			l.changed[n] = true
		}
	}
}

// Names returns the names of the locked plugins, sorted.
func (l *Lock) Names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(l.entries))
	for n := range l.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Save writes the entries changed since the lock was loaded (or last
// saved) into the file, keeping the file's other entries, so that two Locks
// on one file in one process do not undo each other's changes. It writes
// nothing when nothing changed. The file is replaced atomically.
func (l *Lock) Save() error {
	fm := fileMutex(l.path)
	fm.Lock()
	defer fm.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.changed) == 0 {
		return nil
	}
	onDisk, err := readLockFile(l.path)
	if err != nil {
		return err
	}
	merged := onDisk
	for n := range l.changed {
		if e, ok := l.entries[n]; ok {
			merged[n] = e
		} else {
			delete(merged, n)
		}
	}
	data, err := json.MarshalIndent(lockFile{Version: LockVersion, Plugins: merged}, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := writeFileAtomic(l.path, data, 0o644); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	l.entries = merged
	l.changed = map[string]bool{}
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
