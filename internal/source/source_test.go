package source_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/source/registrytest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	registrytest.Cleanup()
	os.Exit(code)
}

// module returns a small fake WebAssembly module, distinct per label.
func module(label string) []byte {
	return append([]byte("\x00asm\x01\x00\x00\x00"), "hangar test module "+label...)
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// logBuffer collects log output.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newResolver(t *testing.T) (*source.Resolver, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	return &source.Resolver{
		CacheDir: t.TempDir(),
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}, logs
}

func ociPlugin(name, src string, v *config.Verify) config.Plugin {
	return config.Plugin{Name: name, Source: src, Kind: config.SourceOCI, Verify: v}
}

var unverified = &config.Verify{Disabled: true}

func push(t *testing.T, r *source.Resolver, wasm []byte, dst string) source.Pushed {
	t.Helper()
	p, err := r.Push(context.Background(), wasm, "plugin.wasm", dst)
	if err != nil {
		t.Fatalf("push %s: %v", dst, err)
	}
	return p
}

func readArtifact(t *testing.T, a source.Artifact) []byte {
	t.Helper()
	b, err := a.Read()
	if err != nil {
		t.Fatalf("read artifact: %v", err)
	}
	return b
}

func TestPushPull(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	wasm := module("hello")

	pusher, _ := newResolver(t)
	pushed := push(t, pusher, wasm, reg.Ref("hangar/hello:1.0"))
	if want := reg.Ref("hangar/hello@" + pushed.Manifest.Digest.String()); pushed.Reference != want {
		t.Errorf("Reference = %s, want %s", pushed.Reference, want)
	}
	if pushed.Layer.Digest.Encoded() != sum(wasm) || pushed.Layer.MediaType != source.LayerMediaType ||
		pushed.Manifest.ArtifactType != source.ArtifactType || pushed.Manifest.MediaType != ocispec.MediaTypeImageManifest {
		t.Errorf("pushed = %+v", pushed)
	}
	// The manifest has no timestamp: pushing again gives the same digest.
	if again := push(t, pusher, wasm, reg.Ref("hangar/hello:1.0")); again.Manifest.Digest != pushed.Manifest.Digest {
		t.Errorf("second push: manifest %s, first %s", again.Manifest.Digest, pushed.Manifest.Digest)
	}

	// What was pushed is an ordinary OCI artifact: check it with oras itself.
	repo, err := remote.NewRepository(reg.Host + "/hangar/hello")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	_, raw, err := oras.FetchBytes(ctx, repo, "1.0", oras.DefaultFetchBytesOptions)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != source.ArtifactType || m.Config.MediaType != ocispec.MediaTypeEmptyJSON || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != source.LayerMediaType || m.Layers[0].Annotations[ocispec.AnnotationTitle] != "plugin.wasm" {
		t.Errorf("manifest = %s", raw)
	}

	for _, src := range []string{reg.Ref("hangar/hello:1.0"), pushed.Reference, reg.Ref("hangar/hello:1.0@" + pushed.Manifest.Digest.String())} {
		r, logs := newResolver(t)
		a, err := r.Resolve(ctx, ociPlugin("hello", src, unverified))
		if err != nil {
			t.Fatalf("resolve %s: %v", src, err)
		}
		if !bytes.Equal(readArtifact(t, a), wasm) || a.Digest != "sha256:"+sum(wasm) || a.Manifest != pushed.Manifest.Digest.String() || a.Source != src {
			t.Errorf("resolve %s = %+v", src, a)
		}
		if want := filepath.Join(r.CacheDir, "blobs", "sha256", sum(wasm)); a.Path != want {
			t.Errorf("cached at %s, want %s", a.Path, want)
		}
		if !strings.Contains(logs.String(), "signature verification is disabled") {
			t.Errorf("no warning for verify: false; log:\n%s", logs)
		}
	}

	// Pins: the module's sha256.
	r, _ := newResolver(t)
	spec := ociPlugin("hello", pushed.Reference, unverified)
	spec.SHA256 = sum(wasm)
	if _, err := r.Resolve(ctx, spec); err != nil {
		t.Errorf("matching pin: %v", err)
	}
	spec.SHA256 = sum([]byte("other"))
	if _, err := r.Resolve(ctx, spec); !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("wrong pin: %v, want ErrDigestMismatch", err)
	}

	// A digest that is not in the registry.
	missing := reg.Ref("hangar/hello@sha256:" + sum([]byte("nothing")))
	if _, err := r.Resolve(ctx, ociPlugin("hello", missing, unverified)); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing digest: %v", err)
	}
	if _, err := r.Resolve(ctx, ociPlugin("hello", reg.Ref("hangar/hello:nope"), unverified)); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing tag: %v", err)
	}

	// Fetch, for hangar pull: no policy, no lock.
	f, _ := newResolver(t)
	a, err := f.Fetch(ctx, reg.Ref("hangar/hello:1.0"), "")
	if err != nil || a.Manifest != pushed.Manifest.Digest.String() || !bytes.Equal(readArtifact(t, a), wasm) {
		t.Errorf("Fetch = %+v, %v", a, err)
	}
}

func TestPushRefusals(t *testing.T) {
	r, _ := newResolver(t)
	ctx := context.Background()
	// No registry is needed to refuse these.
	if _, err := r.Push(ctx, []byte("not wasm"), "x.wasm", "oci://127.0.0.1:1/a:1"); err == nil || !strings.Contains(err.Error(), "not a WebAssembly module") {
		t.Errorf("non-wasm: %v", err)
	}
	if _, err := r.Push(ctx, module("a"), "x.wasm", "oci://127.0.0.1:1/a@sha256:"+sum(nil)); err == nil || !strings.Contains(err.Error(), "push to a tag") {
		t.Errorf("digest reference: %v", err)
	}
	if _, err := r.Push(ctx, module("a"), "x.wasm", "127.0.0.1:1/a:1"); err == nil || !strings.Contains(err.Error(), `must start with "oci://"`) {
		t.Errorf("no scheme: %v", err)
	}
}

// TestTagMovesLock: a locked plugin keeps its manifest when the tag moves,
// from the cache or, with the cache gone, by digest from the registry;
// Update follows the tag.
func TestTagMovesLock(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	v1, v2 := module("v1"), module("v2")
	tag := reg.Ref("hangar/moving:stable")
	pusher, _ := newResolver(t)
	p1 := push(t, pusher, v1, tag)

	lockPath := filepath.Join(t.TempDir(), "hangar.lock")
	cache := t.TempDir()
	resolve := func(update bool) source.Artifact {
		t.Helper()
		lock, err := source.LoadLock(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		r := &source.Resolver{CacheDir: cache, Lock: lock, Update: update}
		a, err := r.Resolve(ctx, ociPlugin("moving", tag, unverified))
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.Save(); err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := resolve(false); !bytes.Equal(readArtifact(t, a), v1) || a.Locked {
		t.Fatalf("first resolve = %+v", a)
	}
	data, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	var lf struct {
		Version int
		Plugins map[string]source.LockEntry
	}
	if err := json.Unmarshal(data, &lf); err != nil {
		t.Fatal(err)
	}
	want := source.LockEntry{Source: tag, SHA256: sum(v1), Manifest: p1.Manifest.Digest.String(), Verify: "disabled"}
	if lf.Version != 1 || lf.Plugins["moving"] != want {
		t.Errorf("lock file:\n%s\nwant entry %+v", data, want)
	}

	p2 := push(t, pusher, v2, tag) // the tag moves
	if a := resolve(false); !bytes.Equal(readArtifact(t, a), v1) || !a.Locked || a.Manifest != p1.Manifest.Digest.String() {
		t.Errorf("after the tag moved, from the cache: %+v", a)
	}
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	if a := resolve(false); !bytes.Equal(readArtifact(t, a), v1) || !a.Locked {
		t.Errorf("after the tag moved, cache emptied: %+v", a)
	}
	// Without the lock, the tag's new target.
	free, _ := newResolver(t)
	if a, err := free.Resolve(ctx, ociPlugin("moving", tag, unverified)); err != nil || !bytes.Equal(readArtifact(t, a), v2) {
		t.Errorf("without a lock: %+v, %v", a, err)
	}
	// Update re-resolves the tag and rewrites the lock.
	if a := resolve(true); !bytes.Equal(readArtifact(t, a), v2) || a.Manifest != p2.Manifest.Digest.String() {
		t.Errorf("update: %+v", a)
	}
	if a := resolve(false); !bytes.Equal(readArtifact(t, a), v2) || !a.Locked {
		t.Errorf("after update: %+v", a)
	}
	// A different source for the same name ignores the entry.
	lock, _ := source.LoadLock(lockPath)
	r := &source.Resolver{CacheDir: cache, Lock: lock}
	if a, err := r.Resolve(ctx, ociPlugin("moving", p1.Reference, unverified)); err != nil || !bytes.Equal(readArtifact(t, a), v1) || a.Locked {
		t.Errorf("changed source: %+v, %v", a, err)
	}
}

// TestOffline: with the lock and the cache, no registry is needed, even
// with the registry gone; what they lack is ErrOffline.
func TestOffline(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	wasm := module("offline")
	tag := reg.Ref("hangar/offline:1")
	pusher, _ := newResolver(t)
	push(t, pusher, wasm, tag)

	lockPath := filepath.Join(t.TempDir(), "hangar.lock")
	cache := t.TempDir()
	lock, err := source.LoadLock(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	r := &source.Resolver{CacheDir: cache, Lock: lock}
	if _, err := r.Resolve(ctx, ociPlugin("p", tag, unverified)); err != nil {
		t.Fatal(err)
	}
	if err := lock.Save(); err != nil {
		t.Fatal(err)
	}
	reg.Stop()

	for _, offline := range []bool{false, true} {
		lock, _ := source.LoadLock(lockPath)
		r := &source.Resolver{CacheDir: cache, Lock: lock, Offline: offline}
		a, err := r.Resolve(ctx, ociPlugin("p", tag, unverified))
		if err != nil || !bytes.Equal(readArtifact(t, a), wasm) || !a.Locked {
			t.Errorf("offline=%v, registry stopped: %+v, %v", offline, a, err)
		}
	}
	off := &source.Resolver{CacheDir: cache, Lock: lock, Offline: true}
	if _, err := off.Resolve(ctx, ociPlugin("other", tag, unverified)); !errors.Is(err, source.ErrOffline) {
		t.Errorf("not in the lock: %v, want ErrOffline", err)
	}
	off.CacheDir = t.TempDir()
	if _, err := off.Resolve(ctx, ociPlugin("p", tag, unverified)); !errors.Is(err, source.ErrOffline) {
		t.Errorf("not in the cache: %v, want ErrOffline", err)
	}
	if _, err := off.Fetch(ctx, tag, ""); !errors.Is(err, source.ErrOffline) {
		t.Errorf("Fetch offline: %v, want ErrOffline", err)
	}
	// A policy other than the locked one needs the registry again.
	other := ociPlugin("p", tag, &config.Verify{Issuer: "https://issuer.test", Subject: "ci@example.test"})
	off.CacheDir = cache
	if _, err := off.Resolve(ctx, other); !errors.Is(err, source.ErrOffline) {
		t.Errorf("other policy: %v, want ErrOffline", err)
	}
}

// TestTampered: content changed in the registry's storage is refused, and
// not cached.
func TestTampered(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	wasm := module("tampered")
	pusher, _ := newResolver(t)
	pushed := push(t, pusher, wasm, reg.Ref("hangar/tampered:1"))
	pushedManifest := push(t, pusher, module("manifest"), reg.Ref("hangar/tampered-manifest:1"))

	flip := func(path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= 0x20 // same size, different content
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flip(reg.BlobPath(pushed.Layer.Digest.Encoded()))
	for _, src := range []string{reg.Ref("hangar/tampered:1"), pushed.Reference} {
		r, _ := newResolver(t)
		_, err := r.Resolve(ctx, ociPlugin("t", src, unverified))
		if !errors.Is(err, source.ErrDigestMismatch) || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("tampered module via %s: %v, want ErrDigestMismatch", src, err)
		}
		if _, ok := (source.Cache{Dir: r.CacheDir}).Lookup(pushed.Layer.Digest.Encoded()); ok {
			t.Error("the tampered module was cached")
		}
		if entries, _ := os.ReadDir(filepath.Join(r.CacheDir, "blobs", "sha256")); len(entries) != 0 {
			t.Errorf("cache holds %d files after a refused pull", len(entries))
		}
	}

	// The registry parses manifests: keep it valid JSON of the same size.
	mpath := reg.BlobPath(pushedManifest.Manifest.Digest.Encoded())
	raw, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(raw, []byte(`"plugin.wasm"`), []byte(`"plugiN.wasm"`), 1)
	if bytes.Equal(edited, raw) {
		t.Fatalf("manifest without the title annotation: %s", raw)
	}
	if err := os.WriteFile(mpath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{reg.Ref("hangar/tampered-manifest:1"), pushedManifest.Reference} {
		r, _ := newResolver(t)
		if _, err := r.Resolve(ctx, ociPlugin("t", src, unverified)); !errors.Is(err, source.ErrDigestMismatch) {
			t.Errorf("tampered manifest via %s: %v, want ErrDigestMismatch", src, err)
		}
	}
}

// TestWrongMediaType pushes artifacts that are not Hangar plugins with oras
// directly; Resolve refuses each.
func TestWrongMediaType(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	repo, err := remote.NewRepository(reg.Host + "/hangar/other")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	wasm := module("other")
	pushBlob := func(mediaType string, data []byte) ocispec.Descriptor {
		t.Helper()
		d := content.NewDescriptorFromBytes(mediaType, data)
		if err := repo.Push(ctx, d, bytes.NewReader(data)); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatal(err)
		}
		return d
	}
	good := pushBlob(source.LayerMediaType, wasm)
	empty := pushBlob(ocispec.MediaTypeEmptyJSON, ocispec.DescriptorEmptyJSON.Data)
	for _, tc := range []struct {
		tag, artifactType string
		config            ocispec.Descriptor
		layers            []ocispec.Descriptor
		want              string
	}{
		{"other-type", "application/vnd.example.other", empty, []ocispec.Descriptor{good}, `artifactType is "application/vnd.example.other"`},
		{"no-type", "", empty, []ocispec.Descriptor{good}, `artifactType is ""`},
		{"config-type", source.ArtifactType, pushBlob("application/vnd.example.config+json", []byte("{}")), []ocispec.Descriptor{good},
			`the config's media type is "application/vnd.example.config+json"`},
		{"layer-type", source.ArtifactType, empty, []ocispec.Descriptor{pushBlob("application/octet-stream", wasm)}, `the layer's media type is "application/octet-stream"`},
		{"two-layers", source.ArtifactType, empty, []ocispec.Descriptor{good, pushBlob(source.LayerMediaType, module("second"))}, "2 layers, want exactly one"},
		{"no-layers", source.ArtifactType, empty, []ocispec.Descriptor{}, "0 layers, want exactly one"},
	} {
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: tc.artifactType, Config: tc.config, Layers: tc.layers}
		m.SchemaVersion = 2
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
		if err := repo.PushReference(ctx, desc, bytes.NewReader(raw), tc.tag); err != nil {
			t.Fatalf("%s: %v", tc.tag, err)
		}
		r, _ := newResolver(t)
		_, err = r.Resolve(ctx, ociPlugin("o", reg.Ref("hangar/other:"+tc.tag), unverified))
		if !errors.Is(err, source.ErrMediaType) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMediaType with %q", tc.tag, err, tc.want)
		}
	}
	// An image index is not a plugin either.
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	idx.SchemaVersion = 2
	raw, _ := json.Marshal(idx)
	d := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, raw)
	if err := repo.PushReference(ctx, d, bytes.NewReader(raw), "index"); err != nil {
		t.Fatal(err)
	}
	r, _ := newResolver(t)
	if _, err := r.Resolve(ctx, ociPlugin("o", reg.Ref("hangar/other:index"), unverified)); !errors.Is(err, source.ErrMediaType) {
		t.Errorf("index: %v, want ErrMediaType", err)
	}
}

type fakeVerifier struct {
	mu    sync.Mutex
	calls []ocispec.Descriptor
	err   error
}

func (f *fakeVerifier) Verify(ctx context.Context, repo oras.ReadOnlyGraphTarget, manifest ocispec.Descriptor, policy config.Verify) error {
	f.mu.Lock()
	f.calls = append(f.calls, manifest)
	f.mu.Unlock()
	if policy.Disabled {
		return errors.New("called with a disabled policy")
	}
	// The repository is usable: the manifest can be fetched from it.
	if _, err := content.FetchAll(ctx, repo, manifest); err != nil {
		return err
	}
	return f.err
}

func TestVerifier(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	pusher, _ := newResolver(t)
	pushed := push(t, pusher, module("signed"), reg.Ref("hangar/signed:1"))
	keyless := &config.Verify{Issuer: "https://issuer.test", Subject: "ci@example.test"}

	v := &fakeVerifier{}
	r, logs := newResolver(t)
	r.Verifier = v
	if _, err := r.Resolve(ctx, ociPlugin("s", reg.Ref("hangar/signed:1"), keyless)); err != nil {
		t.Fatal(err)
	}
	if len(v.calls) != 1 || v.calls[0].Digest != pushed.Manifest.Digest || v.calls[0].ArtifactType != source.ArtifactType ||
		v.calls[0].MediaType != ocispec.MediaTypeImageManifest {
		t.Errorf("verifier calls = %+v", v.calls)
	}
	if strings.Contains(logs.String(), "disabled") {
		t.Errorf("warning for a verified plugin:\n%s", logs)
	}

	// A refusal is ErrUnsigned, and nothing is fetched.
	v = &fakeVerifier{err: errors.New("no matching signature")}
	r, _ = newResolver(t)
	r.Verifier = v
	_, err := r.Resolve(ctx, ociPlugin("s", reg.Ref("hangar/signed:1"), keyless))
	if !errors.Is(err, source.ErrUnsigned) || !strings.Contains(err.Error(), "no matching signature") {
		t.Errorf("refused signature: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(r.CacheDir, "blobs", "sha256")); len(entries) != 0 {
		t.Error("a module whose signature was refused was cached")
	}

	// No verifier: only verify: false works.
	r, _ = newResolver(t)
	if _, err := r.Resolve(ctx, ociPlugin("s", reg.Ref("hangar/signed:1"), keyless)); !errors.Is(err, source.ErrUnsigned) {
		t.Errorf("no verifier: %v, want ErrUnsigned", err)
	}
	if _, err := r.Resolve(ctx, ociPlugin("s", reg.Ref("hangar/signed:1"), nil)); !errors.Is(err, source.ErrUnsigned) {
		t.Errorf("no policy: %v, want ErrUnsigned", err)
	}
	v = &fakeVerifier{}
	r.Verifier = v
	if _, err := r.Resolve(ctx, ociPlugin("s", reg.Ref("hangar/signed:1"), unverified)); err != nil || len(v.calls) != 0 {
		t.Errorf("verify: false: %v, %d verifier calls", err, len(v.calls))
	}

	// A key policy is locked by the key's content: a new key verifies again.
	key := filepath.Join(t.TempDir(), "cosign.pub")
	os.WriteFile(key, []byte("key one"), 0o644)
	lock, _ := source.LoadLock(filepath.Join(t.TempDir(), "hangar.lock"))
	v = &fakeVerifier{}
	r = &source.Resolver{CacheDir: t.TempDir(), Lock: lock, Verifier: v}
	spec := ociPlugin("s", reg.Ref("hangar/signed:1"), &config.Verify{Key: key})
	for range 2 {
		if _, err := r.Resolve(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	if len(v.calls) != 1 {
		t.Errorf("%d verifier calls for a locked plugin, want 1", len(v.calls))
	}
	if e, _ := lock.Get("s"); e.Verify != "key sha256:"+sum([]byte("key one")) {
		t.Errorf("lock entry verify = %q", e.Verify)
	}
	os.WriteFile(key, []byte("key two"), 0o644)
	if _, err := r.Resolve(ctx, spec); err != nil || len(v.calls) != 2 {
		t.Errorf("new key: %v, %d verifier calls, want 2", err, len(v.calls))
	}
}

func TestHTTPS(t *testing.T) {
	ctx := context.Background()
	wasm := module("web")
	mux := http.NewServeMux()
	mux.HandleFunc("/p.wasm", func(w http.ResponseWriter, r *http.Request) { w.Write(wasm) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/p.wasm", http.StatusFound) })
	var plain *httptest.Server
	mux.HandleFunc("/insecure", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/p.wasm", http.StatusFound)
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	plain = httptest.NewServer(mux)
	defer plain.Close()

	web := func(path, pin string) config.Plugin {
		return config.Plugin{Name: "web", Source: srv.URL + path, Kind: config.SourceHTTPS, SHA256: pin}
	}
	r, _ := newResolver(t)
	r.HTTPClient = srv.Client()
	a, err := r.Resolve(ctx, web("/p.wasm", sum(wasm)))
	if err != nil || !bytes.Equal(readArtifact(t, a), wasm) || a.Path != filepath.Join(r.CacheDir, "blobs", "sha256", sum(wasm)) {
		t.Fatalf("good sha256: %+v, %v", a, err)
	}
	// Bad pin: refused, not cached.
	r2, _ := newResolver(t)
	r2.HTTPClient = srv.Client()
	_, err = r2.Resolve(ctx, web("/p.wasm", sum([]byte("else"))))
	if !errors.Is(err, source.ErrDigestMismatch) || !strings.Contains(err.Error(), "refusing to load it") {
		t.Errorf("bad sha256: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(r2.CacheDir, "blobs", "sha256")); len(entries) != 0 {
		t.Error("content with a bad sha256 was cached")
	}
	if _, err := r2.Resolve(ctx, web("/p.wasm", "")); err == nil || !strings.Contains(err.Error(), "needs a sha256 pin") {
		t.Errorf("no pin: %v", err)
	}
	// Redirects: https to https is followed; to http refused.
	if _, err := r2.Resolve(ctx, web("/moved", sum(wasm))); err != nil {
		t.Errorf("https redirect: %v", err)
	}
	r3, _ := newResolver(t)
	r3.HTTPClient = srv.Client()
	if _, err := r3.Resolve(ctx, web("/insecure", sum(wasm))); !errors.Is(err, source.ErrInsecureRedirect) {
		t.Errorf("redirect to http: %v, want ErrInsecureRedirect", err)
	}
	if _, err := r3.Resolve(ctx, web("/missing", sum(wasm))); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	// A size limit.
	r3.MaxSize = 4
	if _, err := r3.Resolve(ctx, web("/p.wasm", sum(wasm))); !errors.Is(err, source.ErrTooLarge) {
		t.Errorf("too large: %v, want ErrTooLarge", err)
	}

	// The cache serves the module with the server gone, offline too.
	srv.Close()
	for _, offline := range []bool{false, true} {
		r.Offline = offline
		if a, err := r.Resolve(ctx, web("/p.wasm", sum(wasm))); err != nil || !bytes.Equal(readArtifact(t, a), wasm) {
			t.Errorf("cached, offline=%v: %+v, %v", offline, a, err)
		}
	}
	r4, _ := newResolver(t)
	r4.Offline = true
	if _, err := r4.Resolve(ctx, web("/p.wasm", sum(wasm))); !errors.Is(err, source.ErrOffline) {
		t.Errorf("offline, not cached: %v, want ErrOffline", err)
	}

	// Fetch without a pin reports the digest.
	srv2 := httptest.NewTLSServer(mux)
	defer srv2.Close()
	f, _ := newResolver(t)
	f.HTTPClient = srv2.Client()
	if a, err := f.Fetch(ctx, srv2.URL+"/p.wasm", ""); err != nil || a.SHA256() != sum(wasm) {
		t.Errorf("Fetch = %+v, %v", a, err)
	}
}

func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.wasm")
	wasm := module("file")
	os.WriteFile(path, wasm, 0o644)
	lock, _ := source.LoadLock(filepath.Join(dir, "hangar.lock"))
	r := &source.Resolver{Lock: lock} // no cache needed for files
	spec := config.Plugin{Name: "f", Source: "p.wasm", Kind: config.SourceFile, Path: path}
	a, err := r.Resolve(context.Background(), spec)
	if err != nil || a.Path != path || a.SHA256() != sum(wasm) {
		t.Fatalf("file: %+v, %v", a, err)
	}
	if e, ok := lock.Get("f"); !ok || e != (source.LockEntry{Source: "p.wasm", SHA256: sum(wasm)}) {
		t.Errorf("lock entry = %+v", e)
	}
	spec.SHA256 = sum(wasm)
	if _, err := r.Resolve(context.Background(), spec); err != nil {
		t.Errorf("matching pin: %v", err)
	}
	spec.SHA256 = sum([]byte("x"))
	if _, err := r.Resolve(context.Background(), spec); !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("pin mismatch: %v", err)
	}
	// A file changed between Resolve and Read is refused.
	os.WriteFile(path, module("changed"), 0o644)
	if _, err := a.Read(); !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("changed file: %v", err)
	}
}

func TestCache(t *testing.T) {
	c := source.Cache{Dir: t.TempDir()}
	wasm := module("cache")
	h, p, err := c.Put(bytes.NewReader(wasm), "", 0)
	if err != nil || h != sum(wasm) || p != c.Path(h) {
		t.Fatalf("Put = %s, %s, %v", h, p, err)
	}
	if got, ok := c.Lookup(h); !ok || got != p {
		t.Errorf("Lookup = %s, %v", got, ok)
	}
	// An edited entry is dropped.
	os.Chmod(p, 0o644)
	os.WriteFile(p, []byte("edited"), 0o644)
	if _, ok := c.Lookup(h); ok {
		t.Error("edited entry used")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("edited entry kept: %v", err)
	}
	if _, _, err := c.Put(bytes.NewReader(wasm), sum([]byte("x")), 0); !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("Put with the wrong digest: %v", err)
	}
	if _, _, err := c.Put(bytes.NewReader(wasm), "", 3); !errors.Is(err, source.ErrTooLarge) {
		t.Errorf("Put over the limit: %v", err)
	}
	if _, ok := c.Lookup("../../etc/passwd"); ok {
		t.Error("Lookup accepted a path")
	}
}

func TestLockFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hangar.lock")
	e := func(s string) source.LockEntry { return source.LockEntry{Source: s, SHA256: sum([]byte(s))} }

	a, err := source.LoadLock(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := source.LoadLock(path)
	a.Put("one", e("1"))
	b.Put("two", e("2"))
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(); err != nil { // merges with what a wrote
		t.Fatal(err)
	}
	c, err := source.LoadLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Names(); strings.Join(got, ",") != "one,two" {
		t.Errorf("names = %v", got)
	}
	c.Retain([]string{"two"})
	c.Save()
	d, _ := source.LoadLock(path)
	if got := d.Names(); strings.Join(got, ",") != "two" {
		t.Errorf("after Retain: %v", got)
	}
	fi1, _ := os.Stat(path)
	d.Put("two", e("2")) // unchanged: no write
	d.Save()
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi1.ModTime()) {
		t.Error("an unchanged lock was rewritten")
	}

	for name, body := range map[string]string{
		"not json":             "plugins = 1",
		"unknown field":        `{"version": 1, "plugins": {}, "extra": true}`,
		"version":              `{"version": 2, "plugins": {}}`,
		"bad sha256":           `{"version": 1, "plugins": {"a": {"source": "x.wasm", "sha256": "abc"}}}`,
		"oci without manifest": `{"version": 1, "plugins": {"a": {"source": "oci://r.test/a:1", "sha256": "` + sum(nil) + `"}}}`,
	} {
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := source.LoadLock(path); !errors.Is(err, source.ErrBadLock) || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("%s: %v, want ErrBadLock", name, err)
		}
	}
}

func TestPlainHTTP(t *testing.T) {
	r := &source.Resolver{}
	for reg, want := range map[string]bool{
		"127.0.0.1:5000":       true,
		"127.1.2.3":            true,
		"localhost:5000":       true,
		"LOCALHOST":            true,
		"[::1]:5000":           true,
		"registry.example:443": false,
		"10.0.0.1:5000":        false,
		"ghcr.io":              false,
		"localhost.evil.test":  false,
	} {
		if got := r.PlainHTTP(reg); got != want {
			t.Errorf("PlainHTTP(%q) = %v, want %v", reg, got, want)
		}
	}
	r.LoopbackTLS = true
	if r.PlainHTTP("127.0.0.1:5000") {
		t.Error("LoopbackTLS ignored")
	}
}
