package verify

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Formats; see the package documentation.
const (
	// BundleMediaType is the artifactType of a signature referrer and the
	// media type of its one layer, the bundle.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// InTotoPayloadType is the DSSE payload type of the signed statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto statement type Sign writes (Verify also
	// accepts StatementTypeV01).
	StatementType    = "https://in-toto.io/Statement/v1"
	StatementTypeV01 = "https://in-toto.io/Statement/v0.1"
	// SignPredicateType marks a statement as a signature of its subject
	// (as cosign v3 writes for "cosign sign"), as opposed to another
	// attestation about it.
	SignPredicateType = "https://sigstore.dev/cosign/sign/v1"

	// Annotations Sign sets on the referrer manifest (hints only).
	AnnotationBundleContent = "dev.sigstore.bundle.content"
	AnnotationPredicateType = "dev.sigstore.bundle.predicateType"
)

// Limits on what Verify reads from a registry.
const (
	maxListed           = 256     // referrers listed per manifest
	maxReferrers        = 32      // signature bundles examined per manifest
	maxReferrerManifest = 1 << 20 // bytes of a referrer manifest
	maxBundle           = 1 << 20 // bytes of a bundle
)

// Errors. Verify's errors wrap exactly one of ErrUnsigned,
// ErrSignatureMismatch, ErrIdentityMismatch, ErrPolicy, ErrNoTrustedRoot,
// ErrDisabled, or else are registry or context errors.
var (
	// ErrUnsigned: no signature bundle (an OCI referrer of artifactType
	// BundleMediaType whose statement is a signature) is attached to the
	// manifest.
	ErrUnsigned = errors.New("no signature")
	// ErrSignatureMismatch: signatures are attached but none verifies: made
	// with another key, for another manifest, tampered with, malformed, or
	// missing what the trusted root requires (SCT, log entry, timestamp).
	ErrSignatureMismatch = errors.New("signature does not verify")
	// ErrIdentityMismatch: a keyless signature verifies, but its
	// certificate names another issuer or subject than the policy.
	ErrIdentityMismatch = errors.New("signed by another identity")
	// ErrPolicy: the policy itself is unusable (no policy, an ambiguous
	// one, a bad key, a subject regexp that matches everything).
	ErrPolicy = errors.New("invalid signature policy")
	// ErrNoTrustedRoot: a keyless policy, but no trusted root to check
	// certificates against.
	ErrNoTrustedRoot = errors.New("keyless verification needs a trusted root (trusted_root.json)")
	// ErrDisabled: Verify was called with a disabled policy (verify:
	// false). Callers check Policy.Disabled first.
	ErrDisabled = errors.New("signature verification is disabled by the policy")
)

// Verifier verifies plugins under config policies. It implements the
// Verifier interface of package source. The zero value verifies keyed
// policies only; keyless ones need TrustedMaterial.
type Verifier struct {
	// TrustedMaterial is the Sigstore trust root for keyless policies
	// (see LoadTrustedRoot). nil: keyless policies fail with
	// ErrNoTrustedRoot.
	TrustedMaterial root.TrustedMaterial
}

// Verify builds the policy of v (reading its key file, if any) and
// verifies manifest under it; see the package-level Verify.
func (v *Verifier) Verify(ctx context.Context, repo oras.ReadOnlyGraphTarget, manifest ocispec.Descriptor, policy config.Verify) error {
	p, err := FromConfig(policy)
	if err != nil {
		return err
	}
	var tm root.TrustedMaterial
	if v != nil {
		tm = v.TrustedMaterial
	}
	return Verify(ctx, repo, manifest, p, tm)
}

// LoadTrustedRoot reads a Sigstore trusted root file (trusted_root.json,
// media type application/vnd.dev.sigstore.trustedroot+json). Nothing is
// fetched: keep the file up to date out of band (for example with
// "cosign trusted-root create" or from sigstore's TUF repository).
func LoadTrustedRoot(path string) (root.TrustedMaterial, error) {
	tr, err := root.NewTrustedRootFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w", path, err)
	}
	return tr, nil
}

// Verify checks that a signature satisfying p covers manifest, the
// descriptor of a plugin's manifest in repo. It lists the manifest's
// referrers of artifactType BundleMediaType and verifies each signature
// bundle (at most 32) until one passes; it returns nil then. trust is the
// trusted root for keyless policies and is ignored for key policies.
//
// Errors: ErrUnsigned when no signature is attached; ErrIdentityMismatch
// when a keyless signature verifies but names another identity (and no
// signature passes); ErrSignatureMismatch when signatures are attached but
// none verifies; ErrPolicy, ErrNoTrustedRoot or ErrDisabled for an unusable
// policy or trust root; otherwise the registry's or the context's error.
func Verify(ctx context.Context, repo oras.ReadOnlyGraphTarget, manifest ocispec.Descriptor, p *Policy, trust root.TrustedMaterial) error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: no policy", ErrPolicy)
	case p.disabled:
		return ErrDisabled
	case repo == nil:
		return errors.New("verify: no repository")
	}
	alg, sum, err := manifestDigest(manifest)
	if err != nil {
		return err
	}
	sv, pb, err := p.sigstore(trust, alg, sum)
	if err != nil {
		return err
	}

	refs, err := referrers(ctx, repo, manifest)
	if err != nil {
		if isTampered(err) {
			return fmt.Errorf("%w: listing the signatures of %s: %w", ErrSignatureMismatch, manifest.Digest, err)
		}
		return fmt.Errorf("listing the signatures of %s: %w", manifest.Digest, err)
	}
	var (
		candidates int
		identity   error // the first identity mismatch
		mismatch   error // the first other verification failure
		fetch      error // the first registry error
	)
	for _, ref := range refs {
		if ref.ArtifactType != BundleMediaType {
			continue // a registry not filtering by artifact type
		}
		if pt, ok := ref.Annotations[AnnotationPredicateType]; ok && pt != SignPredicateType {
			continue // an attestation, not a signature (a hint; checked again below)
		}
		if candidates == maxReferrers {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := fetchBundle(ctx, repo, manifest, ref)
		switch {
		case errors.Is(err, errNotSignature):
			continue
		case errors.Is(err, ErrSignatureMismatch):
			candidates++
			mismatch = cmp.Or(mismatch, err)
			continue
		case err != nil:
			candidates++
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fetch = cmp.Or(fetch, err)
			continue
		}
		candidates++
		if _, err := sv.Verify(b, pb); err != nil {
			var idErr *sgverify.ErrNoMatchingCertificateIdentity
			if errors.As(err, &idErr) {
				identity = cmp.Or(identity, fmt.Errorf("%w: signature %s: %s; the policy wants %s", ErrIdentityMismatch, ref.Digest, certIdentity(b), p))
			} else {
				mismatch = cmp.Or(mismatch, fmt.Errorf("%w: signature %s: %w", ErrSignatureMismatch, ref.Digest, err))
			}
			continue
		}
		return nil
	}
	switch {
	case identity != nil:
		return identity
	case mismatch != nil:
		return mismatch
	case fetch != nil:
		return fmt.Errorf("fetching the signatures of %s: %w", manifest.Digest, fetch)
	case candidates == 0:
		return fmt.Errorf("%w: no signature is attached to manifest %s", ErrUnsigned, manifest.Digest)
	}
	return fmt.Errorf("%w: manifest %s", ErrSignatureMismatch, manifest.Digest) // unreachable
}

// errEnough stops listing referrers.
var errEnough = errors.New("enough referrers")

// referrers lists the bundle referrers of manifest: with a registry's
// referrers API (or oras's tag-schema fallback), stopping after
// maxListed so that a hostile registry cannot page forever; otherwise
// from the store's predecessors.
func referrers(ctx context.Context, repo oras.ReadOnlyGraphTarget, manifest ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	rl, ok := repo.(registry.ReferrerLister)
	if !ok {
		return registry.Referrers(ctx, repo, manifest, BundleMediaType)
	}
	var refs []ocispec.Descriptor
	err := rl.Referrers(ctx, manifest, BundleMediaType, func(page []ocispec.Descriptor) error {
		refs = append(refs, page...)
		if len(refs) >= maxListed {
			refs = refs[:maxListed]
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	return refs, nil
}

// manifestDigest returns the algorithm name and raw digest of a manifest
// descriptor.
func manifestDigest(manifest ocispec.Descriptor) (string, []byte, error) {
	if err := manifest.Digest.Validate(); err != nil {
		return "", nil, fmt.Errorf("verify: manifest digest %q: %w", manifest.Digest, err)
	}
	alg := manifest.Digest.Algorithm()
	if alg != digest.SHA256 && alg != digest.SHA512 {
		return "", nil, fmt.Errorf("verify: manifest digest algorithm %s is not supported", alg)
	}
	sum, err := hex.DecodeString(manifest.Digest.Encoded())
	if err != nil {
		return "", nil, fmt.Errorf("verify: manifest digest %q: %w", manifest.Digest, err)
	}
	return alg.String(), sum, nil
}

// sigstore returns the sigstore-go verifier and policy for p, checking
// artifact digest alg:sum.
func (p *Policy) sigstore(trust root.TrustedMaterial, alg string, sum []byte) (*sgverify.Verifier, sgverify.PolicyBuilder, error) {
	artifact := sgverify.WithArtifactDigest(alg, sum)
	if !p.Keyless() {
		v, err := sgverify.NewVerifier(p.keyMaterial(), sgverify.WithNoObserverTimestamps())
		if err != nil {
			return nil, sgverify.PolicyBuilder{}, fmt.Errorf("verify: %w", err)
		}
		return v, sgverify.NewPolicy(artifact, sgverify.WithKey()), nil
	}
	opts, err := keylessOptions(trust)
	if err != nil {
		return nil, sgverify.PolicyBuilder{}, err
	}
	v, err := sgverify.NewVerifier(trust, opts...)
	if err != nil {
		return nil, sgverify.PolicyBuilder{}, fmt.Errorf("verify: %w", err)
	}
	id, err := p.identity()
	if err != nil {
		return nil, sgverify.PolicyBuilder{}, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	return v, sgverify.NewPolicy(artifact, sgverify.WithCertificateIdentity(id)), nil
}

// keylessOptions derives what a keyless signature must carry from the
// trusted root, as cosign does: an SCT if it lists CT logs, a log entry if
// it lists Rekor logs, and at least one observer timestamp (a log
// entry's integrated time or an RFC 3161 timestamp) in every case.
func keylessOptions(trust root.TrustedMaterial) ([]sgverify.VerifierOption, error) {
	if trust == nil {
		return nil, ErrNoTrustedRoot
	}
	if len(trust.FulcioCertificateAuthorities()) == 0 {
		return nil, fmt.Errorf("%w: the trusted root lists no certificate authority", ErrNoTrustedRoot)
	}
	rekor, tsa := len(trust.RekorLogs()) > 0, len(trust.TimestampingAuthorities()) > 0
	if !rekor && !tsa {
		return nil, fmt.Errorf("%w: the trusted root lists neither a transparency log nor a timestamp authority, so no signing time can be established", ErrNoTrustedRoot)
	}
	var opts []sgverify.VerifierOption
	if len(trust.CTLogs()) > 0 {
		opts = append(opts, sgverify.WithSignedCertificateTimestamps(1))
	}
	if rekor {
		opts = append(opts, sgverify.WithTransparencyLog(1))
	}
	return append(opts, sgverify.WithObserverTimestamps(1)), nil
}

// errNotSignature marks a referrer that is a bundle but not a signature
// (another predicate type): ignored.
var errNotSignature = errors.New("not a signature")

// fetchBundle fetches and parses the bundle of a referrer, checking the
// referrer's shape and the statement's type (not yet its signature).
// Malformed content is ErrSignatureMismatch.
func fetchBundle(ctx context.Context, repo oras.ReadOnlyGraphTarget, subject, ref ocispec.Descriptor) (*bundle.Bundle, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: signature %s: %s", ErrSignatureMismatch, ref.Digest, fmt.Sprintf(format, a...))
	}
	if ref.MediaType != ocispec.MediaTypeImageManifest {
		return nil, bad("media type %q; want an OCI image manifest", ref.MediaType)
	}
	if ref.Size < 0 || ref.Size > maxReferrerManifest {
		return nil, bad("manifest of %d bytes", ref.Size)
	}
	raw, err := content.FetchAll(ctx, repo, ref)
	if err != nil {
		return nil, tampered(ref, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, bad("manifest: %v", err)
	}
	if m.Subject == nil || m.Subject.Digest != subject.Digest {
		return nil, bad("the referrer's subject is not manifest %s", subject.Digest)
	}
	if m.ArtifactType != BundleMediaType {
		return nil, bad("artifactType %q", m.ArtifactType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != BundleMediaType {
		return nil, bad("want exactly one layer of media type %s", BundleMediaType)
	}
	layer := m.Layers[0]
	if layer.Size < 0 || layer.Size > maxBundle {
		return nil, bad("bundle of %d bytes", layer.Size)
	}
	data, err := content.FetchAll(ctx, repo, layer)
	if err != nil {
		return nil, tampered(ref, err)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, bad("bundle: %v", err)
	}
	if b.GetMediaType() != BundleMediaType {
		return nil, bad("bundle media type %q; want %s", b.GetMediaType(), BundleMediaType)
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return nil, bad("the bundle holds no DSSE envelope (message signatures are not supported)")
	}
	if env.GetPayloadType() != InTotoPayloadType {
		return nil, bad("DSSE payload type %q; want %s", env.GetPayloadType(), InTotoPayloadType)
	}
	// The statement's type is read before its signature is checked: the
	// same bytes are verified next, so nothing unauthenticated decides
	// acceptance; a non-signature is merely skipped.
	var st struct {
		Type          string `json:"_type"`
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(env.GetPayload(), &st); err != nil {
		return nil, bad("statement: %v", err)
	}
	if st.Type != StatementType && st.Type != StatementTypeV01 {
		return nil, bad("statement type %q", st.Type)
	}
	if st.PredicateType != SignPredicateType {
		return nil, errNotSignature
	}
	return &b, nil
}

// tampered classifies a fetch error: content not matching its descriptor
// is a bad signature, anything else a registry error.
func tampered(ref ocispec.Descriptor, err error) error {
	if isTampered(err) {
		return fmt.Errorf("%w: signature %s: %w", ErrSignatureMismatch, ref.Digest, err)
	}
	return fmt.Errorf("signature %s: %w", ref.Digest, err)
}

// isTampered reports whether err says that content did not match its
// descriptor.
func isTampered(err error) bool {
	return errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) ||
		errors.Is(err, content.ErrInvalidDescriptorSize)
}

// certIdentity describes the identity of a bundle's certificate, for
// errors.
func certIdentity(b *bundle.Bundle) string {
	vc, err := b.VerificationContent()
	if err != nil || vc.Certificate() == nil {
		return "signed without a certificate"
	}
	sum, err := certificate.SummarizeCertificate(vc.Certificate())
	if err != nil {
		return "unreadable certificate identity"
	}
	return fmt.Sprintf("certificate for subject %q from issuer %q", sum.SubjectAlternativeName, sum.Issuer)
}
