// Package catalog keeps what each plugin lists (its tools, resources,
// resource templates and prompts) on disk, so that a server can answer its
// first lists before the plugin is compiled.
//
// An entry is found by a Key: the SHA-256 of the module and a hash of every
// part of the plugin's configuration that reaches the plugin (its config
// values, limits, grants and prefix). A changed module or configuration
// finds no entry. Entries live in one directory beside the compilation
// cache, one file each, written atomically. Every entry carries the SHA-256
// of its content and the key it was written under; one that does not match
// (a flipped byte, a truncated write, an edit, a file copied under another
// name) is removed and reported absent, never used.
//
// A catalog is a guess about what the plugin will list, never the last
// word: the server reads the lists from the plugin once it is loaded and
// tells clients when they differ (see docs/startup.md).
package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/atomicfile"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// Version numbers the format of entries; it names the directory, so that
// another format is never read as this one.
const Version = 1

// MaxEntry bounds the size of an entry that is read or written.
const MaxEntry = 16 << 20

// ErrCorrupt reports an entry that failed its checks; Get removes it.
var ErrCorrupt = errors.New("catalog entry failed its checksum or does not match its key")

// Key identifies what a plugin lists: its module and the configuration it
// runs with.
type Key struct {
	Module [sha256.Size]byte // SHA-256 of the module's bytes
	Config [sha256.Size]byte // see ConfigHash
}

// KeyOf returns the key of a plugin whose module is wasm.
func KeyOf(wasm []byte, spec config.Plugin) Key {
	return Key{Module: sha256.Sum256(wasm), Config: ConfigHash(spec)}
}

// String is the key as a file name: the SHA-256 of both halves, in hex.
func (k Key) String() string {
	h := sha256.New()
	h.Write(k.Module[:])
	h.Write(k.Config[:])
	return hex.EncodeToString(h.Sum(nil))
}

// ConfigHash hashes the parts of a plugin's configuration that the plugin
// can see or that shape what the server offers: config values, limits,
// grants (environment values included) and prefix. Where the module comes
// from (path, source, pin, signature policy, lock file) is left out: the
// module's own digest stands for it. The plugin's name is left out too; it
// never reaches the plugin.
func ConfigHash(spec config.Plugin) [sha256.Size]byte {
	v := struct {
		Prefix string
		Config map[string]string
		Limits config.Limits
		Grants config.Grants
	}{spec.Prefix, spec.Config, spec.Limits, spec.Grants}
	b, err := json.Marshal(v) // map keys sorted: the same configuration, the same bytes
	if err != nil {
		panic(fmt.Sprintf("catalog: hashing a configuration: %v", err)) // plain data: cannot fail
	}
	return sha256.Sum256(b)
}

// Store is a directory of catalog entries. The nil *Store keeps nothing.
type Store struct {
	dir string
}

// Open returns the store beside a compilation cache in cacheDir, or nil
// when cacheDir is "" (no disk cache). The directory is created when the
// first entry is written.
func Open(cacheDir string) *Store {
	if cacheDir == "" {
		return nil
	}
	return &Store{dir: filepath.Join(cacheDir, fmt.Sprintf("catalog-v%d", Version))}
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// entry is the JSON of an entry, after its checksum line.
type entry struct {
	Version   int                     `json:"version"`
	Module    string                  `json:"module"`
	Config    string                  `json:"config"`
	Tools     []*mcp.Tool             `json:"tools"`
	Resources []*mcp.Resource         `json:"resources"`
	Templates []*mcp.ResourceTemplate `json:"resourceTemplates"`
	Prompts   []*mcp.Prompt           `json:"prompts"`
}

func (s *Store) path(k Key) string { return filepath.Join(s.dir, k.String()+".json") }

// Get returns the lists stored under k: every list kind, with Seq 0. It
// returns nil and no error when there is no entry, and ErrCorrupt (after
// removing the entry) when the entry fails its checks.
func (s *Store) Get(k Key) (*plugin.Lists, error) {
	if s == nil {
		return nil, nil
	}
	file := s.path(k)
	fi, err := os.Lstat(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := readEntry(file, fi, k)
	if err != nil {
		os.Remove(file)
		return nil, err
	}
	return l, nil
}

func readEntry(file string, fi os.FileInfo, k Key) (*plugin.Lists, error) {
	if !fi.Mode().IsRegular() || fi.Size() > MaxEntry {
		return nil, fmt.Errorf("%w: not a regular file of at most %d bytes", ErrCorrupt, MaxEntry)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	sum, body, ok := bytes.Cut(b, []byte("\n"))
	got := sha256.Sum256(body)
	if !ok || string(sum) != hex.EncodeToString(got[:]) {
		return nil, fmt.Errorf("%w: checksum", ErrCorrupt)
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if e.Version != Version || e.Module != hex.EncodeToString(k.Module[:]) || e.Config != hex.EncodeToString(k.Config[:]) {
		return nil, fmt.Errorf("%w: written for another module or configuration", ErrCorrupt)
	}
	for _, t := range e.Tools {
		if t == nil || t.Name == "" || t.InputSchema == nil {
			return nil, fmt.Errorf("%w: a tool without a name or input schema", ErrCorrupt)
		}
	}
	for _, r := range e.Resources {
		if r == nil || r.URI == "" {
			return nil, fmt.Errorf("%w: a resource without a URI", ErrCorrupt)
		}
	}
	for _, t := range e.Templates {
		if t == nil || t.URITemplate == "" {
			return nil, fmt.Errorf("%w: a resource template without a URI template", ErrCorrupt)
		}
	}
	for _, p := range e.Prompts {
		if p == nil || p.Name == "" {
			return nil, fmt.Errorf("%w: a prompt without a name", ErrCorrupt)
		}
	}
	return &plugin.Lists{Read: plugin.AllLists, Tools: e.Tools, Resources: e.Resources, Templates: e.Templates, Prompts: e.Prompts}, nil
}

// Put stores l, which must hold every list kind, under k, replacing what
// was there. Lists larger than MaxEntry are not stored.
func (s *Store) Put(k Key, l *plugin.Lists) error {
	if s == nil {
		return nil
	}
	if l.Read != plugin.AllLists {
		return fmt.Errorf("catalog: storing lists %s: want all of them", l.Read)
	}
	body, err := json.Marshal(entry{
		Version:   Version,
		Module:    hex.EncodeToString(k.Module[:]),
		Config:    hex.EncodeToString(k.Config[:]),
		Tools:     l.Tools,
		Resources: l.Resources,
		Templates: l.Templates,
		Prompts:   l.Prompts,
	})
	if err != nil {
		return fmt.Errorf("catalog: encoding lists: %w", err)
	}
	sum := sha256.Sum256(body)
	data := append([]byte(hex.EncodeToString(sum[:])+"\n"), body...)
	if len(data) > MaxEntry {
		return fmt.Errorf("catalog: lists of %d bytes: more than %d", len(data), MaxEntry)
	}
	if old, err := os.ReadFile(s.path(k)); err == nil && bytes.Equal(old, data) {
		return nil // as stored: a cache warmed into a read-only image stays untouched
	}
	return atomicfile.Write(s.dir, s.path(k), data)
}

// Differ reports which kinds of list differ between a and b, comparing
// their JSON with object keys in one order, so that a schema written with
// its keys in another order is no difference.
func Differ(a, b *plugin.Lists) plugin.ListSet {
	var d plugin.ListSet
	if !sameJSON(a.Tools, b.Tools) {
		d |= plugin.ToolList.Set()
	}
	if !sameJSON(a.Resources, b.Resources) || !sameJSON(a.Templates, b.Templates) {
		d |= plugin.ResourceList.Set()
	}
	if !sameJSON(a.Prompts, b.Prompts) {
		d |= plugin.PromptList.Set()
	}
	return d
}

func sameJSON(a, b any) bool {
	ca, erra := canonical(a)
	cb, errb := canonical(b)
	return erra == nil && errb == nil && bytes.Equal(ca, cb)
}

// canonical is v as JSON with object keys sorted and empty lists as null.
func canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return nil, err
	}
	if l, ok := x.([]any); ok && len(l) == 0 {
		x = nil
	}
	return json.Marshal(x)
}
