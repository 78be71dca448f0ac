package cli

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/source/registrytest"
	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/verify"
)

// Keyless test identities.
const (
	testIssuer   = "https://token.actions.example.test"
	testIdentity = "https://github.com/acme/plugins/.github/workflows/release.yml@refs/tags/v1"
)

// TestServeVerified loads signed oci:// plugins through loadPlugins, the
// path serve takes, with the verifier pluginVerifier wires in: a plugin
// signed with the configured key (or by the configured keyless identity)
// loads; unsigned ones, ones signed with another key, by another identity
// or under another trusted root are refused.
func TestServeVerified(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	isolate(t)

	// push uploads the plugin to repository repo (tag 1), made distinct
	// from the others by a custom section naming repo, and returns the
	// repository and the manifest's descriptor.
	modules := t.TempDir()
	push := func(repo string) (*remote.Repository, ocispec.Descriptor) {
		t.Helper()
		wasm := filepath.Join(modules, strings.ReplaceAll(repo, "/", "_")+".wasm")
		os.WriteFile(wasm, withCustomSection(mustRead(t, legacy), "hangar-test", repo), 0o644)
		if _, errOut, code := hangar(t, "push", wasm, reg.Ref(repo+":1")); code != 0 {
			t.Fatalf("push %s: %s", repo, errOut)
		}
		r, err := remote.NewRepository(reg.Host + "/" + repo)
		if err != nil {
			t.Fatal(err)
		}
		r.PlainHTTP = true
		desc, err := r.Resolve(ctx, "1")
		if err != nil {
			t.Fatal(err)
		}
		return r, desc
	}
	attach := func(r *remote.Repository, m ocispec.Descriptor, b []byte) {
		t.Helper()
		if _, err := verify.Attach(ctx, r, m, b); err != nil {
			t.Fatal(err)
		}
	}

	key, otherKey := newP256(t), newP256(t)
	keys := t.TempDir()
	pubFile := writePublicKeyPEM(t, keys, "cosign.pub", key.Public())

	signedRepo, signed := push("hangar/signed")
	attach(signedRepo, signed, signBundle(t, signed, key, &verify.SignOptions{Name: reg.Host + "/hangar/signed"}))
	push("hangar/unsigned")
	otherRepo, other := push("hangar/other")
	attach(otherRepo, other, signBundle(t, other, otherKey, nil))

	// Keyless: a virtual Sigstore (a CA and a timestamp authority in
	// memory) and its trusted root as a file.
	vs := newVirtualSigstore(t)
	rootFile := filepath.Join(keys, "trusted_root.json")
	writeTrustedRoot(t, rootFile, vs)
	keylessRepo, keyless := push("hangar/keyless")
	attach(keylessRepo, keyless, keylessBundle(t, vs, keyless, testIssuer, testIdentity))

	engine, err := plugin.NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	// load writes a configuration with one plugin (in a new directory:
	// no lock file yet) and loads it as serve does; it returns the lock
	// entry written for the plugin.
	load := func(src, verifyYAML string) (source.LockEntry, error) {
		t.Helper()
		dir := t.TempDir()
		for _, f := range []string{pubFile, rootFile} {
			os.WriteFile(filepath.Join(dir, filepath.Base(f)), mustRead(t, f), 0o644)
		}
		path := filepath.Join(dir, "hangar.yaml")
		os.WriteFile(path, []byte(fmt.Sprintf("plugins:\n  - name: p\n    source: %s\n    verify: %s\n", src, verifyYAML)), 0o644)
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		ps, err := loadPlugins(ctx, engine, cfg.Plugins, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			return source.LockEntry{}, err
		}
		defer closeAll(ctx, ps)
		list, err := ps[0].ListTools(ctx, nil)
		if err != nil || len(list) == 0 {
			t.Fatalf("tools: %v, %v", list, err)
		}
		var lf struct{ Plugins map[string]source.LockEntry }
		if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "hangar.lock")), &lf); err != nil {
			t.Fatal(err)
		}
		return lf.Plugins["p"], nil
	}
	// refused checks that err wraps source.ErrUnsigned and want.
	refused := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, source.ErrUnsigned) || !errors.Is(err, want) {
			t.Errorf("%s: %v; want %v and %v", what, err, source.ErrUnsigned, want)
		} else {
			t.Logf("%s: refused as expected: %v", what, err)
		}
	}
	keyPolicy := "{key: ./cosign.pub}"
	keylessPolicy := "{issuer: " + testIssuer + ", subject: '" + testIdentity + "', trusted_root: ./trusted_root.json}"

	// Keys.
	e, err := load(reg.Ref("hangar/signed:1"), keyPolicy)
	if err != nil {
		t.Fatalf("signed with the key: %v", err)
	}
	if e.Manifest != signed.Digest.String() || e.Verify != "key sha256:"+hexSHA256(mustRead(t, pubFile)) {
		t.Errorf("lock entry of a verified plugin: %+v", e)
	}
	_, err = load(reg.Ref("hangar/unsigned:1"), keyPolicy)
	refused("unsigned", err, verify.ErrUnsigned)
	_, err = load(reg.Ref("hangar/other:1"), keyPolicy)
	refused("signed with another key", err, verify.ErrSignatureMismatch)
	// The signature of one plugin copied onto another does not verify it.
	attach(otherRepo, other, signBundle(t, signed, key, nil))
	_, err = load(reg.Ref("hangar/other:1"), keyPolicy)
	refused("a signature of another manifest", err, verify.ErrSignatureMismatch)
	// A keyless signature does not satisfy a key policy.
	_, err = load(reg.Ref("hangar/keyless:1"), keyPolicy)
	refused("keyless signature, key policy", err, verify.ErrSignatureMismatch)
	// verify: false loads anything.
	if e, err := load(reg.Ref("hangar/unsigned:1"), "false"); err != nil || e.Verify != "disabled" {
		t.Errorf("verify: false: %+v, %v", e, err)
	}

	// Keyless.
	e, err = load(reg.Ref("hangar/keyless:1"), keylessPolicy)
	if err != nil {
		t.Fatalf("keyless: %v", err)
	}
	if e.Manifest != keyless.Digest.String() || !strings.Contains(e.Verify, "subject "+testIdentity) {
		t.Errorf("lock entry of a keyless plugin: %+v", e)
	}
	subjectRe := "{issuer: " + testIssuer + `, subject_regexp: 'https://github\.com/acme/plugins/\.github/workflows/release\.yml@refs/tags/v.*', trusted_root: ./trusted_root.json}`
	if _, err := load(reg.Ref("hangar/keyless:1"), subjectRe); err != nil {
		t.Errorf("keyless, subject_regexp: %v", err)
	}
	_, err = load(reg.Ref("hangar/keyless:1"), "{issuer: "+testIssuer+", subject: someone@example.test, trusted_root: ./trusted_root.json}")
	refused("another subject", err, verify.ErrIdentityMismatch)
	_, err = load(reg.Ref("hangar/keyless:1"), "{issuer: https://issuer.example.test, subject: '"+testIdentity+"', trusted_root: ./trusted_root.json}")
	refused("another issuer", err, verify.ErrIdentityMismatch)
	_, err = load(reg.Ref("hangar/unsigned:1"), keylessPolicy)
	refused("unsigned, keyless policy", err, verify.ErrUnsigned)
	_, err = load(reg.Ref("hangar/signed:1"), keylessPolicy)
	refused("key signature, keyless policy", err, verify.ErrSignatureMismatch)

	// Under the trusted root of another Sigstore instance, neither the
	// certificate nor the timestamp verifies; a file that is no trusted
	// root is ErrNoTrustedRoot. (TestTrustedRootCache checks that a
	// changed file is parsed again.)
	writeTrustedRoot(t, rootFile, newVirtualSigstore(t))
	_, err = load(reg.Ref("hangar/keyless:1"), keylessPolicy)
	refused("another trusted root", err, verify.ErrSignatureMismatch)
	os.WriteFile(rootFile, []byte(`{"mediaType": "not a trusted root"}`), 0o644)
	_, err = load(reg.Ref("hangar/keyless:1"), keylessPolicy)
	refused("a broken trusted root", err, verify.ErrNoTrustedRoot)
	writeTrustedRoot(t, rootFile, vs)
	if _, err := load(reg.Ref("hangar/keyless:1"), keylessPolicy); err != nil {
		t.Errorf("keyless, the trusted root restored: %v", err)
	}

	// pull --config verifies the same way.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cosign.pub"), mustRead(t, pubFile), 0o644)
	cfgPath := filepath.Join(dir, "hangar.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("plugins:\n  - name: s\n    source: %s\n    verify: %s\n", reg.Ref("hangar/signed:1"), keyPolicy)), 0o644)
	if out, errOut, code := hangar(t, "pull", "--config", cfgPath); code != 0 || !strings.Contains(out, "locked 1 plugins") {
		t.Errorf("pull --config, signed: exit %d\n%s%s", code, out, errOut)
	}
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("plugins:\n  - name: u\n    source: %s\n    verify: %s\n", reg.Ref("hangar/unsigned:1"), keyPolicy)), 0o644)
	if _, errOut, code := hangar(t, "pull", "--config", cfgPath); code != 1 || !strings.Contains(errOut, "no signature") {
		t.Errorf("pull --config, unsigned: exit %d, %s", code, errOut)
	}
}

// TestTrustedRootCache: trusted roots are parsed once per content, safely
// from many goroutines, and read again when the file changes.
func TestTrustedRootCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trusted_root.json")
	writeTrustedRoot(t, path, newVirtualSigstore(t))
	c := &trustedRoots{}
	const n = 16
	got := make([]root.TrustedMaterial, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tm, err := c.load(path)
			if err != nil {
				t.Error(err)
			}
			got[i] = tm
		})
	}
	wg.Wait()
	for _, tm := range got[1:] {
		if tm != got[0] || tm == nil {
			t.Fatal("the trusted root was parsed more than once")
		}
	}
	writeTrustedRoot(t, path, newVirtualSigstore(t))
	tm, err := c.load(path)
	if err != nil || tm == got[0] {
		t.Errorf("after the file changed: %v (same material: %v)", err, tm == got[0])
	}
	if _, err := c.load(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, verify.ErrNoTrustedRoot) {
		t.Errorf("missing file: %v", err)
	}
}

// withCustomSection appends a custom section to a WebAssembly module.
func withCustomSection(wasm []byte, name, content string) []byte {
	uleb := func(b []byte, n int) []byte {
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if n == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	body := append(uleb(nil, len(name)), name...)
	body = append(body, content...)
	out := append(slices.Clip(wasm), 0) // section id 0: custom
	out = uleb(out, len(body))
	return append(out, body...)
}

func newP256(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writePublicKeyPEM writes a PEM public key ("PUBLIC KEY", PKIX) to
// dir/name and returns its path.
func writePublicKeyPEM(t *testing.T, dir, name string, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// signBundle returns the signature bundle of manifest m by priv.
func signBundle(t *testing.T, m ocispec.Descriptor, priv crypto.Signer, opts *verify.SignOptions) []byte {
	t.Helper()
	kp, err := verify.NewKeypair(priv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := verify.SignBundle(m, kp, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newVirtualSigstore(t *testing.T) *ca.VirtualSigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// writeTrustedRoot writes the trusted root of vs's certificate and
// timestamp authorities (no transparency or CT logs, so signatures need a
// certificate and an RFC 3161 timestamp only) to path.
func writeTrustedRoot(t *testing.T, path string, vs *ca.VirtualSigstore) {
	t.Helper()
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil, vs.TimestampingAuthorities(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixedCertificate hands out one certificate.
type fixedCertificate []byte

func (c fixedCertificate) GetCertificate(context.Context, sign.Keypair, *sign.CertificateProviderOptions) ([]byte, error) {
	return c, nil
}

// keylessBundle signs m with a certificate vs issues for identity from
// issuer, and adds an RFC 3161 timestamp of the signature by vs's
// timestamp authority.
func keylessBundle(t *testing.T, vs *ca.VirtualSigstore, m ocispec.Descriptor, issuer, identity string) []byte {
	t.Helper()
	cert, priv, err := vs.GenerateLeafCert(identity, issuer)
	if err != nil {
		t.Fatal(err)
	}
	data := signBundle(t, m, priv.(crypto.Signer), &verify.SignOptions{
		Bundle: sign.BundleOptions{CertificateProvider: fixedCertificate(cert.Raw)},
	})
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	sig := b.GetDsseEnvelope().GetSignatures()[0].GetSig()
	ts, err := vs.TimestampResponse(sig)
	if err != nil {
		t.Fatal(err)
	}
	b.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
		Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts}},
	}
	out, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
