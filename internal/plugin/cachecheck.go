package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Checking wazero's on-disk compilation cache.
//
// wazero keeps the machine code it compiled in files under
// <dir>/wazero-<version>-<arch>-<os>/, and trusts them when it reads them
// back: a flipped byte in the code made every start fail, and a shifted
// function-offset table made every start crash. Hangar therefore keeps its
// own record of what each entry it saw written hashes to, in
// <dir>/hangar-sums.json, and checks every entry against it before wazero
// opens the directory. An entry that does not match, or that Hangar did not
// record, is deleted, and wazero compiles the module again. The format of
// the entries stays wazero's business.

// sumsFile is the record of entry hashes, in the cache directory.
const sumsFile = "hangar-sums.json"

// staleTemp is the age after which a temporary file of wazero's (a compile
// that did not finish) is removed.
const staleTemp = time.Hour

// cacheSums is the record of a compilation cache directory. The nil
// *cacheSums (an in-memory cache) does nothing.
type cacheSums struct {
	dir string

	mu   sync.Mutex
	sums map[string]string // "wazero-.../<key>" -> SHA-256 hex
}

type sumsRecord struct {
	Version int               `json:"version"`
	Entries map[string]string `json:"entries"`
}

// checkCompiledCache checks the entries of the compilation cache in dir
// against the record, deleting those that do not match or were never
// recorded, and returns the record for Load to extend. It never fails: a
// cache it cannot check is emptied, or at worst left to wazero.
func checkCompiledCache(dir string) *cacheSums {
	c := &cacheSums{dir: dir, sums: readSums(dir)}
	c.mu.Lock()
	defer c.mu.Unlock()
	removed := 0
	seen := map[string]bool{}
	c.walk(func(rel, path string, fi os.FileInfo) {
		if !fi.Mode().IsRegular() {
			if os.RemoveAll(path) == nil {
				removed++
			}
			return
		}
		if strings.HasSuffix(rel, ".tmp") {
			if time.Since(fi.ModTime()) > staleTemp {
				os.Remove(path)
			}
			return
		}
		want, ok := c.sums[rel]
		if ok {
			if got, err := hashEntry(path); err == nil && got == want {
				seen[rel] = true
				return
			}
		}
		if os.Remove(path) == nil {
			removed++
		}
	})
	changed := removed > 0
	for rel := range c.sums {
		if !seen[rel] {
			delete(c.sums, rel)
			changed = true
		}
	}
	if changed {
		// An unchanged record is not written again: a cache warmed at build
		// time (hangar warm) may be on a read-only file system.
		c.save(false)
	}
	if removed > 0 {
		slog.Default().Warn("compilation cache: removed entries that failed their checksum or were not recorded; their modules compile again",
			"dir", dir, "removed", removed)
	}
	return c
}

// record adds the entries written since the last check or record. Load
// calls it after compiling a module.
func (c *cacheSums) record() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	added := false
	c.walk(func(rel, path string, fi os.FileInfo) {
		if !fi.Mode().IsRegular() || strings.HasSuffix(rel, ".tmp") {
			return
		}
		if _, ok := c.sums[rel]; ok {
			return
		}
		if h, err := hashEntry(path); err == nil {
			c.sums[rel] = h
			added = true
		}
	})
	if added {
		c.save(true)
	}
}

// walk calls f for each entry in the cache's wazero-* directories.
func (c *cacheSums) walk(f func(rel, path string, fi os.FileInfo)) {
	tops, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, top := range tops {
		if !top.IsDir() || !strings.HasPrefix(top.Name(), "wazero-") {
			continue
		}
		sub := filepath.Join(c.dir, top.Name())
		entries, err := os.ReadDir(sub)
		if err != nil {
			continue
		}
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				continue
			}
			f(top.Name()+"/"+e.Name(), filepath.Join(sub, e.Name()), fi)
		}
	}
}

// readSums reads the record; a missing or unreadable one is empty.
func readSums(dir string) map[string]string {
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(dir, sumsFile))
	if err != nil {
		return sums
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return sums
	}
	var r sumsRecord
	if json.NewDecoder(io.LimitReader(f, 16<<20)).Decode(&r) != nil || r.Version != 1 {
		return sums
	}
	for k, v := range r.Entries {
		if len(v) == 64 {
			sums[k] = v
		}
	}
	return sums
}

// save writes the record atomically. With merge, entries another process
// recorded meanwhile are kept if their files exist.
func (c *cacheSums) save(merge bool) {
	out := c.sums
	if merge {
		out = readSums(c.dir)
		for rel := range out {
			if _, err := os.Lstat(filepath.Join(c.dir, filepath.FromSlash(rel))); err != nil {
				delete(out, rel)
			}
		}
		for k, v := range c.sums {
			out[k] = v
		}
	}
	data, err := json.Marshal(sumsRecord{Version: 1, Entries: out})
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, "."+sumsFile+".*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(c.dir, sumsFile)) != nil {
		os.Remove(tmp.Name())
	}
}

// hashEntry returns the SHA-256 of a cache entry, in hex.
func hashEntry(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
