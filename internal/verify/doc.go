// Package verify checks, and makes, Sigstore signatures of plugins stored
// in OCI registries. Everything runs in process with sigstore-go: there is
// no cosign binary and no network access beyond the registry holding the
// plugin (no Rekor, Fulcio or TUF lookups at verification time).
//
// # Signature format
//
// A signature is a Sigstore bundle attached to the plugin's manifest as an
// OCI referrer, the layout cosign v3 uses for its bundle format
// ("cosign sign --new-bundle-format"):
//
//   - the referrer is an OCI image manifest
//     (application/vnd.oci.image.manifest.v1+json) with artifactType
//     [BundleMediaType] ("application/vnd.dev.sigstore.bundle.v0.3+json"),
//     subject = the plugin's manifest descriptor, the empty config
//     (application/vnd.oci.empty.v1+json, "{}") and exactly one layer of
//     media type [BundleMediaType] holding the bundle as protobuf JSON;
//     [Sign] also sets the annotations "dev.sigstore.bundle.content":
//     "dsse-envelope" and "dev.sigstore.bundle.predicateType":
//     [SignPredicateType] on it (hints only; nothing trusts them);
//
//   - the bundle's content is a DSSE envelope with payloadType
//     "application/vnd.in-toto+json" whose payload is an in-toto statement:
//
//     {"_type": "https://in-toto.io/Statement/v1",
//     "subject": [{"name": "<repository>", "digest": {"sha256": "<manifest digest hex>"}}],
//     "predicateType": "https://sigstore.dev/cosign/sign/v1",
//     "predicate": {}}
//
//     The signed object is therefore the plugin's manifest digest (which
//     covers the module layer digest, so the module itself). sigstore-go
//     checks it with verify.WithArtifactDigest. A DSSE statement rather than a
//     message signature over the manifest bytes is used because it verifies
//     the same way for every key type (Ed25519 included, which cannot verify a
//     bare digest) and is what cosign v3 writes.
//
//   - Only statements with predicateType [SignPredicateType] count as
//     signatures: other attestations stored the same way (SLSA provenance,
//     SBOMs) are signed by the same CI identities but do not say "this
//     plugin is approved", so they are ignored, as if absent.
//
// Referrers are found with oras registry.Referrers: the OCI referrers API of
// a registry (or oras's fallback to the referrers tag schema,
// "sha256-<hex>"), or content.Predecessors of another store. The legacy
// cosign "sha256-<hex>.sig" tag format is not supported.
//
// # Policies
//
// A [Policy] is one of:
//
//   - keyed: a PEM public key ("PUBLIC KEY", PKIX: ECDSA P-256/P-384/P-521,
//     Ed25519, or RSA 2048/3072/4096 with PKCS#1 v1.5). The bundle must carry
//     a public key (not a certificate) and its DSSE signature must verify
//     with the configured key, using the key's default Sigstore algorithm
//     (P-256 with SHA-256, P-384 with SHA-384, P-521 with SHA-512, pure
//     Ed25519, RSA PKCS#1 v1.5 with SHA-256). No transparency log entry or
//     timestamp is required or checked, so a host verifies offline; a
//     configured key is trusted at any time, and revoking it means removing
//     it from the configuration.
//   - keyless: an OIDC issuer, matched exactly, and a subject (the
//     certificate's SAN), matched exactly or by a regular expression that
//     must match the whole subject. The bundle's certificate must chain to a
//     certificate authority of the trusted root given to [Verify]; what else
//     is required follows that trusted root, as cosign does: an embedded SCT
//     when it lists CT logs, a transparency log entry when it lists Rekor
//     logs, and always at least one verified observer timestamp (a log
//     entry's integrated time or an RFC 3161 timestamp) at which the short-
//     lived certificate was valid. The trusted root is never fetched: a host
//     verifying keyless signatures needs a trusted_root.json file (for the
//     public-good instance, as written by "cosign trusted-root create" or
//     taken from sigstore's TUF repository), loaded with [LoadTrustedRoot].
//
// Verification fails closed: a missing policy, a keyless policy without a
// trusted root, or an unsupported key is an error, never a pass. A policy
// that is Disabled (verify: false) is refused by [Verify]; the caller checks
// [Policy.Disabled], skips verification and logs a warning.
package verify
