package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"

	"github.com/hangar-mcp/hangar/internal/verify"
)

// Test identities.
const (
	issuer   = "https://token.actions.example.test"
	identity = "https://github.com/acme/plugins/.github/workflows/release.yml@refs/tags/v1"
)

// pushPlugin stores a plugin artifact (manifest, empty config, one module
// layer) in target and returns its manifest descriptor.
func pushPlugin(t *testing.T, target oras.Target, label string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	wasm := append([]byte("\x00asm\x01\x00\x00\x00"), "hangar verify test "+label...)
	layer, err := oras.PushBytes(ctx, target, "application/vnd.hangar.plugin.layer.v1.wasm", wasm)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := oras.PackManifest(ctx, target, oras.PackManifestVersion1_1, "application/vnd.hangar.plugin.v1",
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	return desc
}

// newStore returns an in-memory OCI store holding one plugin.
func newStore(t *testing.T) (*memory.Store, ocispec.Descriptor) {
	t.Helper()
	s := memory.New()
	return s, pushPlugin(t, s, t.Name())
}

func newKeypair(t *testing.T, priv crypto.Signer) *verify.Keypair {
	t.Helper()
	kp, err := verify.NewKeypair(priv)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func p256(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writePublicKey writes the PEM public key of priv to a file and returns
// its path.
func writePublicKey(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func keyPolicy(t *testing.T, pub crypto.PublicKey) *verify.Policy {
	t.Helper()
	p, err := verify.KeyPolicy(pub)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func keylessPolicy(t *testing.T, iss, subject, subjectRe string) *verify.Policy {
	t.Helper()
	p, err := verify.KeylessPolicy(iss, subject, subjectRe)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSign(t *testing.T, target oras.GraphTarget, m ocispec.Descriptor, kp *verify.Keypair, opts *verify.SignOptions) ocispec.Descriptor {
	t.Helper()
	d, err := verify.Sign(context.Background(), target, m, kp, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// wantErr checks that err wraps want (nil: err is nil).
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("error %v; want %v", err, want)
	case want != nil:
		t.Logf("refused as expected: %v", err)
	}
}

// virtual is a Sigstore instance in memory (sigstore-go's test CA): a
// Fulcio-like CA issuing certificates for any identity, a Rekor-like log,
// a timestamp authority and a CT log key. No network.
type virtual struct {
	*ca.VirtualSigstore
}

func newVirtual(t *testing.T) *virtual {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return &virtual{vs}
}

// trust is the trusted root of a deployment without CT logs: the virtual
// CA cannot embed SCTs, so a root listing CT logs (all of v) requires
// what it cannot make.
func (v *virtual) trust() root.TrustedMaterial { return noCT{v} }

type noCT struct{ root.TrustedMaterial }

func (noCT) CTLogs() map[string]*root.TransparencyLog { return nil }

// keyless returns a keypair with a certificate for subject from iss, and
// the bundle options that put the certificate and (unless noLog) a
// transparency log entry into the bundle.
func (v *virtual) keyless(t *testing.T, iss, subject string, noLog bool) (*verify.Keypair, *verify.SignOptions) {
	t.Helper()
	cert, priv, err := v.GenerateLeafCert(subject, iss)
	if err != nil {
		t.Fatal(err)
	}
	kp := newKeypair(t, priv.(crypto.Signer))
	opts := &verify.SignOptions{Name: "registry.test/hangar/plugin", Bundle: sign.BundleOptions{CertificateProvider: fixedCert(cert.Raw)}}
	if !noLog {
		opts.Bundle.TransparencyLogs = []sign.Transparency{&virtualRekor{v}}
	}
	return kp, opts
}

type fixedCert []byte

func (c fixedCert) GetCertificate(context.Context, sign.Keypair, *sign.CertificateProviderOptions) ([]byte, error) {
	return c, nil
}

// virtualRekor logs a DSSE bundle in the virtual log: a Rekor v1 dsse
// entry with a signed entry timestamp (an inclusion promise).
type virtualRekor struct{ v *virtual }

func (r *virtualRekor) GetTransparencyLogEntry(_ context.Context, certPEM []byte, b *protobundle.Bundle) error {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return errors.New("no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	env := b.GetDsseEnvelope()
	sig := env.GetSignatures()[0].GetSig()
	denv := &dsse.Envelope{
		PayloadType: env.GetPayloadType(),
		Payload:     base64.StdEncoding.EncodeToString(env.GetPayload()),
		Signatures:  []dsse.Signature{{Sig: base64.StdEncoding.EncodeToString(sig)}},
	}
	now := time.Now().Unix()
	entry, err := r.v.GenerateTlogEntry(cert, denv, sig, now, true)
	if err != nil {
		return err
	}
	set, err := r.v.RekorSignPayload(tlog.RekorPayload{
		Body:           entry.Body(),
		IntegratedTime: now,
		LogIndex:       entry.LogIndex(),
		LogID:          hex.EncodeToString([]byte(entry.LogKeyID())),
	})
	if err != nil {
		return err
	}
	tle := entry.TransparencyLogEntry()
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	b.VerificationMaterial.TlogEntries = append(b.VerificationMaterial.TlogEntries, tle)
	return nil
}

func protoJSON(b *protobundle.Bundle) ([]byte, error) { return protojson.Marshal(b) }

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
