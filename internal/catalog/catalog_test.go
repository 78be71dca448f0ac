package catalog_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/catalog"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

func lists() *plugin.Lists {
	return &plugin.Lists{
		Read: plugin.AllLists,
		Seq:  7,
		Tools: []*mcp.Tool{{
			Name:        "greet",
			Description: "says hello",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		}},
		Resources: []*mcp.Resource{{URI: "notes://all", Name: "all"}},
		Templates: []*mcp.ResourceTemplate{{URITemplate: "notes://{id}", Name: "note"}},
		Prompts:   []*mcp.Prompt{{Name: "hello"}},
	}
}

func spec() config.Plugin {
	return config.Plugin{Name: "p", Path: "/a/p.wasm", Source: "/a/p.wasm", Limits: config.DefaultLimits(), Config: map[string]string{"k": "v"}}
}

func TestRoundTrip(t *testing.T) {
	s := catalog.Open(t.TempDir())
	k := catalog.KeyOf([]byte("\x00asm module"), spec())
	if l, err := s.Get(k); l != nil || err != nil {
		t.Fatalf("empty store: %v, %v", l, err)
	}
	if err := s.Put(k, lists()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(k)
	if err != nil || got == nil {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if got.Seq != 0 || got.Read != plugin.AllLists {
		t.Errorf("Seq %d Read %s, want 0 and all: a cached reading is no reading of the plugin", got.Seq, got.Read)
	}
	if d := catalog.Differ(got, lists()); d != 0 {
		t.Errorf("stored and read back differ in %s", d)
	}
	if fi, err := os.Stat(s.Dir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store directory: %v, %v", fi, err)
	}
	// The nil store keeps nothing.
	var none *catalog.Store
	if err := none.Put(k, lists()); err != nil {
		t.Error(err)
	}
	if l, err := none.Get(k); l != nil || err != nil {
		t.Errorf("nil store: %v, %v", l, err)
	}
	if catalog.Open("") != nil {
		t.Error(`Open("") is not the nil store`)
	}
}

// TestKey: everything that reaches the plugin is in the key; where the
// module comes from and the plugin's name are not.
func TestKey(t *testing.T) {
	wasm := []byte("\x00asm module")
	base := catalog.KeyOf(wasm, spec())
	same := spec()
	same.Name, same.Path, same.Source, same.LockFile = "other", "/b/q.wasm", "/b/q.wasm", "/b/hangar.lock"
	if catalog.KeyOf(wasm, same) != base {
		t.Error("the name or the place of the module changed the key")
	}
	for name, edit := range map[string]func(*config.Plugin){
		"config":  func(p *config.Plugin) { p.Config = map[string]string{"k": "w"} },
		"prefix":  func(p *config.Plugin) { p.Prefix = "x" },
		"memory":  func(p *config.Plugin) { p.Limits.MemoryPages /= 2 },
		"timeout": func(p *config.Plugin) { p.Limits.CallTimeout = time.Second },
		"env":     func(p *config.Plugin) { p.Grants.Env = map[string]string{"A": "b"} },
		"hosts":   func(p *config.Plugin) { p.Grants.AllowedHosts = []string{"example.com"} },
		"paths":   func(p *config.Plugin) { p.Grants.AllowedPaths = []config.Mount{{Host: "/d", Guest: "/d"}} },
		"read-only": func(p *config.Plugin) {
			p.Grants.AllowedPaths = []config.Mount{{Host: "/d", Guest: "/d", ReadOnly: true}}
		},
		"instances":  func(p *config.Plugin) { p.Limits.MaxInstances = 3 },
		"max output": func(p *config.Plugin) { p.Limits.MaxOutput = 1 },
	} {
		s := spec()
		edit(&s)
		if catalog.KeyOf(wasm, s) == base {
			t.Errorf("a change of %s kept the key", name)
		}
	}
	if catalog.KeyOf([]byte("\x00asm other"), spec()) == base {
		t.Error("another module kept the key")
	}
}

// TestCorruptEntries: an entry that fails its checks is removed and never
// used; a new Put writes a good one again.
func TestCorruptEntries(t *testing.T) {
	s := catalog.Open(t.TempDir())
	k := catalog.KeyOf([]byte("\x00asm module"), spec())
	other := catalog.KeyOf([]byte("\x00asm other"), spec())
	file := filepath.Join(s.Dir(), k.String()+".json")
	for name, corrupt := range map[string]func(b []byte) []byte{
		"flipped byte": func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-10] },
		"no checksum":  func(b []byte) []byte { return b[65:] },
		"empty":        func([]byte) []byte { return nil },
		"edited, with its checksum fixed": func(b []byte) []byte {
			// A consistent entry under the wrong name: written for another key.
			if err := s.Put(other, lists()); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(s.Dir(), other.String()+".json"))
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	} {
		if err := s.Put(k, lists()); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, corrupt(b), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := s.Get(k)
		if l != nil || !errors.Is(err, catalog.ErrCorrupt) {
			t.Errorf("%s: Get = %v, %v; want ErrCorrupt", name, l, err)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the entry was not removed: %v", name, err)
		}
	}
	// A directory or a symbolic link in an entry's place is not read.
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Get(k); l != nil || !errors.Is(err, catalog.ErrCorrupt) {
		t.Errorf("symbolic link: Get = %v, %v", l, err)
	}
	if err := s.Put(k, lists()); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Get(k); l == nil || err != nil {
		t.Errorf("rewritten entry: Get = %v, %v", l, err)
	}
}

// TestDiffer: the kinds of list whose content differs, whatever the order
// of keys in the JSON of schemas.
func TestDiffer(t *testing.T) {
	a, b := lists(), lists()
	b.Tools[0].InputSchema = json.RawMessage(`{"required":["name"],"properties":{"name":{"type":"string"}},"type":"object"}`)
	if d := catalog.Differ(a, b); d != 0 {
		t.Errorf("reordered keys: differ in %s", d)
	}
	b.Tools[0].Description = "says hi"
	b.Templates = nil
	if d := catalog.Differ(a, b); d != plugin.ToolList.Set()|plugin.ResourceList.Set() {
		t.Errorf("differ in %s, want tools+resources", d)
	}
	empty := &plugin.Lists{Read: plugin.AllLists, Tools: []*mcp.Tool{}}
	if d := catalog.Differ(empty, &plugin.Lists{Read: plugin.AllLists}); d != 0 {
		t.Errorf("an empty list and none differ in %s", d)
	}
}
