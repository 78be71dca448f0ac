package source_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/source/registrytest"
	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/verify"
)

// signer is a key pair for signing plugins in tests, with its public key
// in a file for a verify: {key: ...} policy.
type signer struct {
	kp     *verify.Keypair
	policy *config.Verify
}

func newSigner(t *testing.T) signer {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := verify.NewKeypair(priv)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return signer{kp: kp, policy: &config.Verify{Key: path}}
}

// sign attaches a signature of the manifest ref (oci://host/repo@digest or
// :tag) resolves to.
func (s signer) sign(t *testing.T, reg *registrytest.Registry, repo, reference string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	r := remoteRepo(t, reg, repo)
	desc, err := r.Resolve(ctx, reference)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify.Sign(ctx, r, desc, s.kp, nil); err != nil {
		t.Fatal(err)
	}
	return desc
}

func remoteRepo(t *testing.T, reg *registrytest.Registry, repo string) *remote.Repository {
	t.Helper()
	r, err := remote.NewRepository(reg.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = true
	return r
}

func verifying(t *testing.T, cache string, lock *source.Lock) *source.Resolver {
	t.Helper()
	r, _ := newResolver(t)
	r.CacheDir, r.Lock, r.Verifier = cache, lock, &verify.Verifier{}
	return r
}

func editLock(t *testing.T, path, name string, edit func(*source.LockEntry)) {
	t.Helper()
	var lf struct {
		Version int                         `json:"version"`
		Plugins map[string]source.LockEntry `json:"plugins"`
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &lf); err != nil {
		t.Fatal(err)
	}
	e := lf.Plugins[name]
	edit(&e)
	lf.Plugins[name] = e
	data, _ = json.Marshal(lf)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLockBoundToVerifiedManifest: editing hangar.lock to name another
// cached module (or another, unsigned, manifest) does not make a plugin
// with a key policy serve it: the manifest is verified again and the
// module must be the one it holds.
func TestLockBoundToVerifiedManifest(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	key := newSigner(t)
	good, evil := module("signed"), module("unsigned")
	pusher, _ := newResolver(t)
	push(t, pusher, good, reg.Ref("hangar/bound:1"))
	key.sign(t, reg, "hangar/bound", "1")
	pe := push(t, pusher, evil, reg.Ref("hangar/bound:evil")) // same repository, unsigned

	dir := t.TempDir()
	lockPath := filepath.Join(dir, "hangar.lock")
	cache := t.TempDir()
	spec := ociPlugin("p", reg.Ref("hangar/bound:1"), key.policy)
	resolve := func() (source.Artifact, error) {
		t.Helper()
		lock, err := source.LoadLock(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		a, err := verifying(t, cache, lock).Resolve(ctx, spec)
		if err == nil {
			if err := lock.Save(); err != nil {
				t.Fatal(err)
			}
		}
		return a, err
	}
	a, err := resolve()
	if err != nil || !bytes.Equal(readArtifact(t, a), good) {
		t.Fatalf("signed: %+v, %v", a, err)
	}
	if a, err := resolve(); err != nil || !a.Locked {
		t.Fatalf("locked: %+v, %v", a, err)
	}
	// The unsigned module gets into the cache (hangar pull does that).
	if _, err := (&source.Resolver{CacheDir: cache}).Fetch(ctx, reg.Ref("hangar/bound:evil"), ""); err != nil {
		t.Fatal(err)
	}

	// 1. The lock names the unsigned module under the signed manifest.
	editLock(t, lockPath, "p", func(e *source.LockEntry) { e.SHA256 = sum(evil) })
	_, err = resolve()
	if !errors.Is(err, source.ErrDigestMismatch) || !strings.Contains(err.Error(), "hangar.lock names module sha256 "+sum(evil)) {
		t.Errorf("lock edited to another module: %v", err)
	}
	// Offline, it cannot verify again: refused too.
	lock, _ := source.LoadLock(lockPath)
	r := verifying(t, cache, lock)
	r.Offline = true
	if _, err := r.Resolve(ctx, spec); !errors.Is(err, source.ErrOffline) || !strings.Contains(err.Error(), "must be checked again") {
		t.Errorf("lock edited, offline: %v", err)
	}

	// 2. The lock names the unsigned manifest and its module.
	editLock(t, lockPath, "p", func(e *source.LockEntry) { e.SHA256, e.Manifest = sum(evil), pe.Manifest.Digest.String() })
	if _, err := resolve(); !errors.Is(err, source.ErrUnsigned) || !errors.Is(err, verify.ErrUnsigned) {
		t.Errorf("lock edited to an unsigned manifest: %v", err)
	}

	// 3. Restored, it serves the signed module from the cache again.
	editLock(t, lockPath, "p", func(e *source.LockEntry) { e.SHA256, e.Manifest = sum(good), a.Manifest })
	if a, err := resolve(); err != nil || !a.Locked || !bytes.Equal(readArtifact(t, a), good) {
		t.Errorf("restored lock: %+v, %v", a, err)
	}
}

// stallListener accepts connections and never answers.
func stallListener(t *testing.T) string {
	t.Helper()
	addr, closeAll, err := testutil.StallListener()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	return addr
}

// TestFetchDeadline: a registry that accepts and never answers, and an
// HTTPS source that drips its body, end with ErrTimeout at the Resolver's
// deadline; cancelling the context (as SIGTERM does) stops them at once.
func TestFetchDeadline(t *testing.T) {
	stalled := stallListener(t)
	drip := httptest.NewTLSServer(http.HandlerFunc(testutil.Drip))
	defer drip.Close()

	specs := map[string]config.Plugin{
		"stalled registry": ociPlugin("s", "oci://"+stalled+"/hangar/p:1", unverified),
		"dripping https":   {Name: "d", Source: drip.URL + "/p.wasm", Kind: config.SourceHTTPS, SHA256: sum([]byte("x"))},
	}
	for name, spec := range specs {
		r, _ := newResolver(t)
		r.HTTPClient = drip.Client()
		r.Timeout = 2 * time.Second
		start := time.Now()
		_, err := r.Resolve(context.Background(), spec)
		took := time.Since(start)
		if !errors.Is(err, source.ErrTimeout) {
			t.Errorf("%s: %v, want ErrTimeout", name, err)
		}
		if took > 30*time.Second {
			t.Errorf("%s: took %v with a 2s deadline", name, took)
		}
		t.Logf("%s: %v after %v", name, err, took)

		// Cancelled: stops at once, whatever the deadline.
		r.Timeout = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start = time.Now()
		_, err = r.Resolve(ctx, spec)
		if !errors.Is(err, context.Canceled) || errors.Is(err, source.ErrTimeout) {
			t.Errorf("%s, cancelled: %v, want context.Canceled", name, err)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%s: cancelled, but took %v", name, took)
		}
	}
	// Nothing unverified is left in the cache.
}

// TestAbandonedDownload: a temporary file left by a killed download is
// removed by the next fetch; one a live download holds is not.
func TestAbandonedDownload(t *testing.T) {
	wasm := module("tmp")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(wasm) }))
	defer srv.Close()
	r, _ := newResolver(t)
	r.HTTPClient = srv.Client()
	blobs := filepath.Join(r.CacheDir, "blobs", "sha256")
	os.MkdirAll(blobs, 0o755)
	left := filepath.Join(blobs, ".tmp-123456")
	os.WriteFile(left, []byte("half a download"), 0o644)
	if _, err := r.Fetch(context.Background(), srv.URL+"/p.wasm", sum(wasm)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("abandoned temporary file kept: %v", err)
	}
	entries, _ := os.ReadDir(blobs)
	if len(entries) != 1 || entries[0].Name() != sum(wasm) {
		t.Errorf("cache holds %v", entries)
	}
}
