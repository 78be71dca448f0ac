package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/verify"
)

func TestKeyed(t *testing.T) {
	ctx := context.Background()
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		name string
		priv crypto.Signer
	}{
		{"ecdsa-p256", p256(t)},
		{"ecdsa-p384", p384},
		{"ed25519", edPriv},
		{"rsa-2048", rsaKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, m := newStore(t)
			mustSign(t, store, m, newKeypair(t, tc.priv), nil)

			// Through the config, as the server does: a key file.
			v := &verify.Verifier{}
			wantErr(t, v.Verify(ctx, store, m, config.Verify{Key: writePublicKey(t, tc.priv.Public())}), nil)

			// Another key of the same type.
			other := map[string]crypto.Signer{"ecdsa-p256": p256(t), "ecdsa-p384": p256(t), "rsa-2048": p256(t)}[tc.name]
			if other == nil {
				_, other, _ = ed25519.GenerateKey(rand.Reader)
			}
			wantErr(t, verify.Verify(ctx, store, m, keyPolicy(t, other.Public()), nil), verify.ErrSignatureMismatch)
		})
	}
}

func TestUnsigned(t *testing.T) {
	ctx := context.Background()
	store, m := newStore(t)
	key := p256(t)
	wantErr(t, verify.Verify(ctx, store, m, keyPolicy(t, key.Public()), nil), verify.ErrUnsigned)
	vs := newVirtual(t)
	wantErr(t, verify.Verify(ctx, store, m, keylessPolicy(t, issuer, identity, ""), vs.trust()), verify.ErrUnsigned)

	// A signature of another plugin in the same store does not count.
	other := pushPlugin(t, store, "other")
	mustSign(t, store, other, newKeypair(t, key), nil)
	wantErr(t, verify.Verify(ctx, store, other, keyPolicy(t, key.Public()), nil), nil)
	wantErr(t, verify.Verify(ctx, store, m, keyPolicy(t, key.Public()), nil), verify.ErrUnsigned)
}

func TestKeyless(t *testing.T) {
	ctx := context.Background()
	vs := newVirtual(t)
	store, m := newStore(t)
	kp, opts := vs.keyless(t, issuer, identity, false)
	mustSign(t, store, m, kp, opts)

	for _, tc := range []struct {
		name            string
		iss, sub, subRe string
		want            error
	}{
		{"exact", issuer, identity, "", nil},
		{"regexp", issuer, "", `https://github\.com/acme/plugins/\.github/workflows/release\.yml@refs/tags/v.*`, nil},
		{"regexp with anchors", issuer, "", `^https://github\.com/acme/.*$`, nil},
		{"wrong subject", issuer, "https://github.com/acme/plugins/.github/workflows/other.yml@refs/tags/v1", "", verify.ErrIdentityMismatch},
		{"subject prefix only", issuer, strings.TrimSuffix(identity, "v1"), "", verify.ErrIdentityMismatch},
		{"wrong subject regexp", issuer, "", `https://github\.com/evil/.*`, verify.ErrIdentityMismatch},
		{"regexp is anchored", issuer, "", `https://github\.com/acme/plugins/\.github/workflows/release\.yml`, verify.ErrIdentityMismatch},
		{"wrong issuer", "https://accounts.example.test", identity, "", verify.ErrIdentityMismatch},
		{"issuer prefix only", "https://token.actions.example", identity, "", verify.ErrIdentityMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &verify.Verifier{TrustedMaterial: vs.trust()}
			err := v.Verify(ctx, store, m, config.Verify{Issuer: tc.iss, Subject: tc.sub, SubjectRegexp: tc.subRe})
			wantErr(t, err, tc.want)
		})
	}

	t.Run("no trusted root", func(t *testing.T) {
		wantErr(t, verify.Verify(ctx, store, m, keylessPolicy(t, issuer, identity, ""), nil), verify.ErrNoTrustedRoot)
		v := &verify.Verifier{}
		wantErr(t, v.Verify(ctx, store, m, config.Verify{Issuer: issuer, Subject: identity}), verify.ErrNoTrustedRoot)
	})
	t.Run("another CA", func(t *testing.T) {
		wantErr(t, verify.Verify(ctx, store, m, keylessPolicy(t, issuer, identity, ""), newVirtual(t).trust()), verify.ErrSignatureMismatch)
	})
	t.Run("SCT required by a root with CT logs", func(t *testing.T) {
		wantErr(t, verify.Verify(ctx, store, m, keylessPolicy(t, issuer, identity, ""), vs), verify.ErrSignatureMismatch)
	})
	t.Run("key policy refuses a certificate", func(t *testing.T) {
		wantErr(t, verify.Verify(ctx, store, m, keyPolicy(t, kp.GetPublicKey()), nil), verify.ErrSignatureMismatch)
	})
}

func TestKeylessNeedsLogEntry(t *testing.T) {
	ctx := context.Background()
	vs := newVirtual(t)
	store, m := newStore(t)
	kp, opts := vs.keyless(t, issuer, identity, true)
	mustSign(t, store, m, kp, opts)
	// The trusted root lists a Rekor log, so an entry is required, and
	// without one there is no signing time for the certificate either.
	wantErr(t, verify.Verify(ctx, store, m, keylessPolicy(t, issuer, identity, ""), vs.trust()), verify.ErrSignatureMismatch)
}

func TestKeylessPolicyRefusesKeySignature(t *testing.T) {
	ctx := context.Background()
	vs := newVirtual(t)
	store, m := newStore(t)
	mustSign(t, store, m, newKeypair(t, p256(t)), nil)
	wantErr(t, verify.Verify(ctx, store, m, keylessPolicy(t, issuer, identity, ""), vs.trust()), verify.ErrSignatureMismatch)
}

// bundleOf returns the bundle JSON of a signature referrer.
func bundleOf(t *testing.T, store content.Fetcher, ref ocispec.Descriptor) []byte {
	t.Helper()
	ctx := context.Background()
	raw, err := content.FetchAll(ctx, store, ref)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	b, err := content.FetchAll(ctx, store, m.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// editBundle decodes bundle JSON, applies edit and encodes it again.
func editBundle(t *testing.T, b []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func envelope(v map[string]any) map[string]any { return v["dsseEnvelope"].(map[string]any) }

func TestTampered(t *testing.T) {
	ctx := context.Background()
	key := p256(t)
	vs := newVirtual(t)
	kless, kopts := vs.keyless(t, issuer, identity, false)

	for _, signer := range []struct {
		name   string
		kp     *verify.Keypair
		opts   *verify.SignOptions
		policy *verify.Policy
	}{
		{"key", newKeypair(t, key), nil, keyPolicy(t, key.Public())},
		{"keyless", kless, kopts, keylessPolicy(t, issuer, identity, "")},
	} {
		// Sign one plugin; derive bad bundles from its good one.
		src, signed := newStore(t)
		good := bundleOf(t, src, mustSign(t, src, signed, signer.kp, signer.opts))
		wantErr(t, verify.Verify(ctx, src, signed, signer.policy, vs.trust()), nil)

		other := pushPlugin(t, src, "other")
		for _, tc := range []struct {
			name   string
			bundle func() []byte
		}{
			{"signature flipped", func() []byte {
				return editBundle(t, good, func(v map[string]any) {
					s := envelope(v)["signatures"].([]any)[0].(map[string]any)
					sig := []byte(s["sig"].(string))
					sig[10] ^= 'A' ^ 'B'
					if sig[10] == sig[11] {
						sig[10] = 'C'
					}
					s["sig"] = string(sig)
				})
			}},
			{"statement retargeted", func() []byte {
				return editBundle(t, good, func(v map[string]any) {
					st, _ := verify.Statement(other, "")
					envelope(v)["payload"] = st // JSON encodes []byte as base64, as protojson does
				})
			}},
			{"payload type changed", func() []byte {
				return editBundle(t, good, func(v map[string]any) { envelope(v)["payloadType"] = "text/plain" })
			}},
			{"not JSON", func() []byte { return []byte("{not a bundle") }},
			{"empty bundle", func() []byte { return []byte("{}") }},
			{"certificate removed", func() []byte {
				return editBundle(t, good, func(v map[string]any) { delete(v, "verificationMaterial") })
			}},
		} {
			t.Run(signer.name+"/"+tc.name, func(t *testing.T) {
				// The bad bundle, attached to the plugin it names (or
				// claims to name).
				target := signed
				if tc.name == "statement retargeted" {
					target = other
				}
				store := memoryCopy(t, src, target)
				if _, err := verify.Attach(ctx, store, target, tc.bundle()); err != nil {
					t.Fatal(err)
				}
				wantErr(t, verify.Verify(ctx, store, target, signer.policy, vs.trust()), verify.ErrSignatureMismatch)
			})
		}

		t.Run(signer.name+"/bundle of another manifest", func(t *testing.T) {
			store := memoryCopy(t, src, other)
			if _, err := verify.Attach(ctx, store, other, good); err != nil {
				t.Fatal(err)
			}
			wantErr(t, verify.Verify(ctx, store, other, signer.policy, vs.trust()), verify.ErrSignatureMismatch)
		})
	}
}

// memoryCopy copies a plugin (manifest and blobs, no referrers) into a new
// memory store.
func memoryCopy(t *testing.T, src oras.ReadOnlyTarget, m ocispec.Descriptor) oras.GraphTarget {
	t.Helper()
	dst := memory.New()
	if err := oras.CopyGraph(context.Background(), src, dst, m, oras.CopyGraphOptions{}); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestGoodAmongBad(t *testing.T) {
	ctx := context.Background()
	key := p256(t)
	store, m := newStore(t)
	// A junk referrer, a signature by another key, then a good one.
	if _, err := verify.Attach(ctx, store, m, []byte("junk")); err != nil {
		t.Fatal(err)
	}
	mustSign(t, store, m, newKeypair(t, p256(t)), nil)
	wantErr(t, verify.Verify(ctx, store, m, keyPolicy(t, key.Public()), nil), verify.ErrSignatureMismatch)
	mustSign(t, store, m, newKeypair(t, key), nil)
	wantErr(t, verify.Verify(ctx, store, m, keyPolicy(t, key.Public()), nil), nil)
}

// TestIdentityMismatchWins: when one signature has the wrong identity and
// another is broken, the error names the identity.
func TestIdentityMismatchWins(t *testing.T) {
	ctx := context.Background()
	vs := newVirtual(t)
	store, m := newStore(t)
	mustSign(t, store, m, newKeypair(t, p256(t)), nil)
	kp, opts := vs.keyless(t, issuer, "someone@else.test", false)
	mustSign(t, store, m, kp, opts)
	err := verify.Verify(ctx, store, m, keylessPolicy(t, issuer, identity, ""), vs.trust())
	wantErr(t, err, verify.ErrIdentityMismatch)
	if !strings.Contains(err.Error(), "someone@else.test") {
		t.Errorf("error does not name the signer: %v", err)
	}
}

// An attestation (another predicate type), validly signed, is not a
// signature.
func TestAttestationIsNotSignature(t *testing.T) {
	ctx := context.Background()
	key := p256(t)
	store, m := newStore(t)
	st, _ := json.Marshal(map[string]any{
		"_type":         verify.StatementType,
		"subject":       []any{map[string]any{"name": "x", "digest": map[string]string{"sha256": m.Digest.Encoded()}}},
		"predicateType": "https://slsa.dev/provenance/v1",
		"predicate":     map[string]any{},
	})
	pb, err := sign.Bundle(&sign.DSSEData{Data: st, PayloadType: verify.InTotoPayloadType}, newKeypair(t, key), sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := protoJSON(pb)
	if _, err := verify.Attach(ctx, store, m, b); err != nil {
		t.Fatal(err)
	}
	wantErr(t, verify.Verify(ctx, store, m, keyPolicy(t, key.Public()), nil), verify.ErrUnsigned)
}

// lyingStore serves altered content for one digest, as a compromised
// registry or mirror might.
type lyingStore struct {
	oras.ReadOnlyGraphTarget
	target digest.Digest
}

func (s lyingStore) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := s.ReadOnlyGraphTarget.Fetch(ctx, d)
	if err != nil || d.Digest != s.target {
		return rc, err
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	b[len(b)/2] ^= 1
	return io.NopCloser(strings.NewReader(string(b))), nil
}

func TestRegistryServesOtherContent(t *testing.T) {
	ctx := context.Background()
	key := p256(t)
	store, m := newStore(t)
	ref := mustSign(t, store, m, newKeypair(t, key), nil)
	var rm ocispec.Manifest
	raw, _ := content.FetchAll(ctx, store, ref)
	json.Unmarshal(raw, &rm)
	for name, d := range map[string]digest.Digest{"referrer manifest": ref.Digest, "bundle": rm.Layers[0].Digest} {
		t.Run(name, func(t *testing.T) {
			wantErr(t, verify.Verify(ctx, lyingStore{store, d}, m, keyPolicy(t, key.Public()), nil), verify.ErrSignatureMismatch)
		})
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	key := p256(t)
	store, m := newStore(t)
	mustSign(t, store, m, newKeypair(t, key), nil)
	if err := verify.Verify(ctx, store, m, keyPolicy(t, key.Public()), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestPolicies(t *testing.T) {
	ctx := context.Background()
	store, m := newStore(t)

	p, err := verify.FromConfig(config.Verify{Disabled: true})
	if err != nil || !p.Disabled() {
		t.Fatalf("disabled: %v, %v", p, err)
	}
	wantErr(t, verify.Verify(ctx, store, m, p, nil), verify.ErrDisabled)
	wantErr(t, verify.Verify(ctx, store, m, nil, nil), verify.ErrPolicy)

	keyFile := writePublicKey(t, p256(t).Public())
	for _, tc := range []struct {
		name string
		v    config.Verify
	}{
		{"empty", config.Verify{}},
		{"subject without issuer", config.Verify{Subject: identity}},
		{"issuer without subject", config.Verify{Issuer: issuer}},
		{"http issuer", config.Verify{Issuer: "http://issuer.test", Subject: identity}},
		{"key and identity", config.Verify{Key: keyFile, Issuer: issuer, Subject: identity}},
		{"disabled and key", config.Verify{Disabled: true, Key: keyFile}},
		{"subject and regexp", config.Verify{Issuer: issuer, Subject: identity, SubjectRegexp: "x"}},
		{"missing key file", config.Verify{Key: keyFile + ".missing"}},
		{"regexp .*", config.Verify{Issuer: issuer, SubjectRegexp: ".*"}},
		{"regexp .+", config.Verify{Issuer: issuer, SubjectRegexp: ".+"}},
		{"regexp any email", config.Verify{Issuer: issuer, SubjectRegexp: `.+@.+`}},
		{"regexp any https", config.Verify{Issuer: issuer, SubjectRegexp: `https://.*`}},
		{"regexp any github", config.Verify{Issuer: issuer, SubjectRegexp: `https://github\.com/.*`}},
		{"regexp optional", config.Verify{Issuer: issuer, SubjectRegexp: `(ci@acme\.test)?`}},
		{"regexp alternation escape", config.Verify{Issuer: issuer, SubjectRegexp: `ci@acme\.test|.*`}},
		{"regexp invalid", config.Verify{Issuer: issuer, SubjectRegexp: `(`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verify.FromConfig(tc.v)
			wantErr(t, err, verify.ErrPolicy)
		})
	}
	for _, re := range []string{`ci@acme\.test`, `.*@acme\.test`, `https://github\.com/acme/.*`} {
		if _, err := verify.FromConfig(config.Verify{Issuer: issuer, SubjectRegexp: re}); err != nil {
			t.Errorf("subject_regexp %q refused: %v", re, err)
		}
	}
}

func TestParsePublicKey(t *testing.T) {
	for _, bad := range []string{
		"",
		"not pem",
		"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
	} {
		if _, err := verify.ParsePublicKey([]byte(bad)); !errors.Is(err, verify.ErrPolicy) {
			t.Errorf("%q: %v, want ErrPolicy", bad, err)
		}
	}
	good, err := readFile(writePublicKey(t, p256(t).Public()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify.ParsePublicKey(good); err != nil {
		t.Fatal(err)
	}
	if _, err := verify.ParsePublicKey(append(good, good...)); !errors.Is(err, verify.ErrPolicy) {
		t.Errorf("two keys: %v, want ErrPolicy", err)
	}
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	if _, err := verify.KeyPolicy(small.Public()); !errors.Is(err, verify.ErrPolicy) {
		t.Errorf("RSA 1024: %v, want ErrPolicy", err)
	}
}

// TestFormat pins the stored layout: a referrer manifest of artifactType
// BundleMediaType, with the empty config and one bundle layer, whose DSSE
// statement names the manifest digest with the cosign signing predicate.
func TestFormat(t *testing.T) {
	ctx := context.Background()
	store, m := newStore(t)
	ref := mustSign(t, store, m, newKeypair(t, p256(t)), &verify.SignOptions{Name: "registry.test/hangar/p"})
	if ref.MediaType != ocispec.MediaTypeImageManifest {
		t.Errorf("referrer media type %s", ref.MediaType)
	}
	raw, _ := content.FetchAll(ctx, store, ref)
	var rm ocispec.Manifest
	if err := json.Unmarshal(raw, &rm); err != nil {
		t.Fatal(err)
	}
	if rm.ArtifactType != verify.BundleMediaType || rm.Subject == nil || rm.Subject.Digest != m.Digest ||
		rm.Config.MediaType != ocispec.MediaTypeEmptyJSON || len(rm.Layers) != 1 || rm.Layers[0].MediaType != verify.BundleMediaType ||
		rm.Annotations[verify.AnnotationPredicateType] != verify.SignPredicateType {
		t.Errorf("referrer manifest:\n%s", raw)
	}
	var b struct {
		MediaType    string `json:"mediaType"`
		DsseEnvelope struct {
			Payload     []byte `json:"payload"`
			PayloadType string `json:"payloadType"`
		} `json:"dsseEnvelope"`
		VerificationMaterial struct {
			PublicKey struct {
				Hint string `json:"hint"`
			} `json:"publicKey"`
		} `json:"verificationMaterial"`
	}
	bj := bundleOf(t, store, ref)
	if err := json.Unmarshal(bj, &b); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Type    string `json:"_type"`
		Subject []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		PredicateType string         `json:"predicateType"`
		Predicate     map[string]any `json:"predicate"`
	}
	if err := json.Unmarshal(b.DsseEnvelope.Payload, &st); err != nil {
		t.Fatal(err)
	}
	if b.MediaType != verify.BundleMediaType || b.DsseEnvelope.PayloadType != verify.InTotoPayloadType ||
		b.VerificationMaterial.PublicKey.Hint == "" || st.Type != verify.StatementType ||
		st.PredicateType != verify.SignPredicateType || len(st.Subject) != 1 ||
		st.Subject[0].Digest["sha256"] != m.Digest.Encoded() || st.Subject[0].Name != "registry.test/hangar/p" {
		t.Errorf("bundle:\n%s\nstatement:\n%s", bj, b.DsseEnvelope.Payload)
	}
}

// tsaOnly is the trusted root of a deployment with a CA and a timestamp
// authority but no transparency log or CT log.
type tsaOnly struct{ noCT }

func (tsaOnly) RekorLogs() map[string]*root.TransparencyLog { return nil }

type caOnly struct{ tsaOnly }

func (caOnly) TimestampingAuthorities() []root.TimestampingAuthority { return nil }

// TestKeylessTimestampAuthority: with a trusted root listing no log, an
// RFC 3161 timestamp establishes the signing time instead.
func TestKeylessTimestampAuthority(t *testing.T) {
	ctx := context.Background()
	vs := newVirtual(t)
	trust := tsaOnly{noCT{vs}}
	policy := keylessPolicy(t, issuer, identity, "")

	kp, opts := vs.keyless(t, issuer, identity, true)
	if _, err := verify.Statement(ocispec.Descriptor{}, ""); err == nil {
		t.Fatal("statement of an empty descriptor")
	}
	store, m := newStore(t)
	st, err := verify.Statement(m, "")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: st, PayloadType: verify.InTotoPayloadType}, kp, opts.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	noTime, _ := protoJSON(pb)
	tsr, err := vs.TimestampResponse(pb.GetDsseEnvelope().GetSignatures()[0].GetSig())
	if err != nil {
		t.Fatal(err)
	}
	pb.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
		Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}},
	}
	withTime, _ := protoJSON(pb)

	if _, err := verify.Attach(ctx, store, m, noTime); err != nil {
		t.Fatal(err)
	}
	wantErr(t, verify.Verify(ctx, store, m, policy, trust), verify.ErrSignatureMismatch)
	if _, err := verify.Attach(ctx, store, m, withTime); err != nil {
		t.Fatal(err)
	}
	wantErr(t, verify.Verify(ctx, store, m, policy, trust), nil)
	// The same bundle under the full root: no log entry, refused.
	wantErr(t, verify.Verify(ctx, store, m, policy, vs.trust()), verify.ErrSignatureMismatch)
	// A root with nothing to establish time with is unusable.
	wantErr(t, verify.Verify(ctx, store, m, policy, caOnly{trust}), verify.ErrNoTrustedRoot)
}

// TestTrustedRootFile: a keyless signature verifies against a
// trusted_root.json file, as a production host loads it.
func TestTrustedRootFile(t *testing.T) {
	ctx := context.Background()
	vs := newVirtual(t)
	// The virtual log's ID is its hex key ID as text; a trusted root
	// file holds the raw key ID.
	logs := map[string]*root.TransparencyLog{}
	for k, l := range vs.RekorLogs() {
		c := *l
		c.ID, _ = hex.DecodeString(k)
		logs[k] = &c
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil,
		vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	js, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	trust, err := verify.LoadTrustedRoot(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify.LoadTrustedRoot(path + ".missing"); err == nil {
		t.Error("loaded a missing trusted root")
	}

	store, m := newStore(t)
	kp, opts := vs.keyless(t, issuer, identity, false)
	mustSign(t, store, m, kp, opts)
	v := &verify.Verifier{TrustedMaterial: trust}
	wantErr(t, v.Verify(ctx, store, m, config.Verify{Issuer: issuer, Subject: identity}), nil)
	wantErr(t, v.Verify(ctx, store, m, config.Verify{Issuer: issuer, Subject: "ci@acme.test"}), verify.ErrIdentityMismatch)
}
