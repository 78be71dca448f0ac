package verify

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"oras.land/oras-go/v2"
)

// SignOptions are the optional settings of Sign.
type SignOptions struct {
	// Name is the subject name written in the statement, conventionally
	// the repository ("registry.example/hangar/hello"). It is not checked
	// by Verify.
	Name string
	// Bundle is passed to sigstore-go's sign.Bundle: leave it zero for a
	// key signature; set CertificateProvider (and TransparencyLogs and/or
	// TimestampAuthorities, as the verifier's trusted root requires) for a
	// keyless one.
	Bundle sign.BundleOptions
}

// Statement returns the in-toto statement Sign signs for manifest: the
// manifest digest as the subject, SignPredicateType, an empty predicate.
func Statement(manifest ocispec.Descriptor, name string) ([]byte, error) {
	if _, _, err := manifestDigest(manifest); err != nil {
		return nil, err
	}
	type subject struct {
		Name   string            `json:"name,omitempty"`
		Digest map[string]string `json:"digest"`
	}
	st := struct {
		Type          string    `json:"_type"`
		Subject       []subject `json:"subject"`
		PredicateType string    `json:"predicateType"`
		Predicate     struct{}  `json:"predicate"`
	}{
		Type:          StatementType,
		Subject:       []subject{{Name: name, Digest: map[string]string{manifest.Digest.Algorithm().String(): manifest.Digest.Encoded()}}},
		PredicateType: SignPredicateType,
	}
	return json.Marshal(st)
}

// SignBundle makes the signature bundle of manifest without storing it.
func SignBundle(manifest ocispec.Descriptor, kp sign.Keypair, opts *SignOptions) ([]byte, error) {
	if kp == nil {
		return nil, fmt.Errorf("sign: no key")
	}
	if opts == nil {
		opts = &SignOptions{}
	}
	st, err := Statement(manifest, opts.Name)
	if err != nil {
		return nil, err
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: st, PayloadType: InTotoPayloadType}, kp, opts.Bundle)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	b := bundle.Bundle{Bundle: pb}
	return b.MarshalJSON()
}

// Sign signs manifest, a plugin manifest in repo, and attaches the
// signature to it as a referrer (see the package documentation for the
// format). It returns the referrer's manifest descriptor.
func Sign(ctx context.Context, repo oras.GraphTarget, manifest ocispec.Descriptor, kp sign.Keypair, opts *SignOptions) (ocispec.Descriptor, error) {
	data, err := SignBundle(manifest, kp, opts)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return Attach(ctx, repo, manifest, data)
}

// Attach stores bundle, a signature bundle in protobuf JSON, as a referrer
// of manifest in repo. It does not check the bundle.
func Attach(ctx context.Context, repo oras.GraphTarget, manifest ocispec.Descriptor, bundle []byte) (ocispec.Descriptor, error) {
	layer, err := oras.PushBytes(ctx, repo, BundleMediaType, bundle)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("sign: pushing the bundle: %w", err)
	}
	subject := ocispec.Descriptor{MediaType: manifest.MediaType, Digest: manifest.Digest, Size: manifest.Size}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, BundleMediaType, oras.PackManifestOptions{
		Subject: &subject,
		Layers:  []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{
			AnnotationBundleContent: "dsse-envelope",
			AnnotationPredicateType: SignPredicateType,
		},
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("sign: pushing the signature manifest: %w", err)
	}
	return desc, nil
}

// Keypair adapts a private key to sigstore-go's sign.Keypair, signing with
// the key's default Sigstore algorithm (the one KeyPolicy verifies with:
// P-256 with SHA-256, P-384 with SHA-384, P-521 with SHA-512, pure
// Ed25519, RSA PKCS#1 v1.5 with SHA-256).
type Keypair struct {
	signer crypto.Signer
	alg    signature.AlgorithmDetails
	hint   []byte
}

var _ sign.Keypair = (*Keypair)(nil)

// NewKeypair returns the Keypair of an ECDSA, Ed25519 or RSA private key.
func NewKeypair(signer crypto.Signer) (*Keypair, error) {
	pub := signer.Public()
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	alg, err := signature.GetDefaultAlgorithmDetails(pub)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	sum := sha256.Sum256(der)
	return &Keypair{signer: signer, alg: alg, hint: []byte(base64.StdEncoding.EncodeToString(sum[:]))}, nil
}

// GetHashAlgorithm implements sign.Keypair.
func (k *Keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.alg.GetProtoHashType() }

// GetSigningAlgorithm implements sign.Keypair.
func (k *Keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.alg.GetSignatureAlgorithm()
}

// GetHint implements sign.Keypair: the base64 SHA-256 of the PKIX public
// key.
func (k *Keypair) GetHint() []byte { return k.hint }

// GetKeyAlgorithm implements sign.Keypair.
func (k *Keypair) GetKeyAlgorithm() string {
	switch k.alg.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

// GetPublicKey implements sign.Keypair.
func (k *Keypair) GetPublicKey() crypto.PublicKey { return k.signer.Public() }

// GetPublicKeyPem implements sign.Keypair.
func (k *Keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.signer.Public())
	return string(b), err
}

// SignData implements sign.Keypair: it returns the signature and what was
// signed (the digest, or the data itself for pure Ed25519).
func (k *Keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	h := k.alg.GetHashType()
	msg := data
	if h != crypto.Hash(0) {
		d := h.New()
		d.Write(data)
		msg = d.Sum(nil)
	}
	sig, err := k.signer.Sign(rand.Reader, msg, h)
	if err != nil {
		return nil, nil, err
	}
	return sig, msg, nil
}
