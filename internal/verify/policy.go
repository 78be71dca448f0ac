package verify

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/hangar-mcp/hangar/internal/config"
)

// maxKeyFile bounds the size of a public key file.
const maxKeyFile = 64 << 10

// Policy is a validated signature policy: the public key, or the keyless
// identity, a signature must match. Build one with [FromConfig],
// [KeyPolicy] or [KeylessPolicy]. A Policy is immutable and safe for
// concurrent use.
type Policy struct {
	disabled bool

	// keyed
	key      crypto.PublicKey
	verifier signature.Verifier
	keyID    string // "sha256:<hex>" of the PKIX encoding

	// keyless
	issuer    string
	subject   string
	subjectRe *regexp.Regexp // anchored; nil when subject is exact
}

// Disabled reports whether the policy is verify: false, an explicit opt-out.
// [Verify] refuses a disabled policy; the caller skips verification and
// logs a warning instead.
func (p *Policy) Disabled() bool { return p != nil && p.disabled }

// Keyless reports whether the policy checks a keyless (certificate)
// identity, which needs a trusted root.
func (p *Policy) Keyless() bool { return p != nil && !p.disabled && p.key == nil }

// String describes the policy, as in "key sha256:<hex>" or
// "issuer https://... subject ci@example.com".
func (p *Policy) String() string {
	switch {
	case p == nil:
		return "no policy"
	case p.disabled:
		return "disabled"
	case p.key != nil:
		return "key " + p.keyID
	case p.subjectRe != nil:
		return fmt.Sprintf("issuer %s subject_regexp %s", p.issuer, p.subjectRe)
	default:
		return fmt.Sprintf("issuer %s subject %s", p.issuer, p.subject)
	}
}

// FromConfig builds the policy of a plugin's verify settings. A key policy
// reads the key file (config.Verify.Key, a path). It returns an error
// wrapping ErrPolicy for a policy that is incomplete, ambiguous or too
// permissive, whatever validation the config package did.
func FromConfig(v config.Verify) (*Policy, error) {
	switch {
	case v.Disabled:
		if v.Key != "" || v.Issuer != "" || v.Subject != "" || v.SubjectRegexp != "" {
			return nil, fmt.Errorf("%w: verify: false cannot also name a key or an identity", ErrPolicy)
		}
		return &Policy{disabled: true}, nil
	case v.Key != "":
		if v.Issuer != "" || v.Subject != "" || v.SubjectRegexp != "" {
			return nil, fmt.Errorf("%w: give either a key or a keyless identity (issuer and subject), not both", ErrPolicy)
		}
		pub, err := ReadPublicKey(v.Key)
		if err != nil {
			return nil, err
		}
		return KeyPolicy(pub)
	default:
		return KeylessPolicy(v.Issuer, v.Subject, v.SubjectRegexp)
	}
}

// ReadPublicKey reads a PEM public key file (see [ParsePublicKey]).
func ReadPublicKey(path string) (crypto.PublicKey, error) {
	// Opened without blocking and checked on the descriptor: a FIFO or a
	// device is refused, not read.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %w", ErrPolicy, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: public key %s: not a regular file", ErrPolicy, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: public key %s: %w", ErrPolicy, path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("%w: public key %s: larger than %d bytes; not a public key", ErrPolicy, path, maxKeyFile)
	}
	pub, err := ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	return pub, nil
}

// ParsePublicKey parses exactly one PEM block of type "PUBLIC KEY" (PKIX,
// as in cosign.pub) holding an ECDSA P-256, P-384 or P-521, an Ed25519, or
// an RSA 2048, 3072 or 4096-bit key. Anything else — a private key, a
// certificate, several blocks, other text around the block — is an error
// wrapping ErrPolicy.
func ParsePublicKey(data []byte) (crypto.PublicKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block; want a PEM public key (-----BEGIN PUBLIC KEY-----)", ErrPolicy)
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("%w: PEM block %q; want a PUBLIC KEY (never give a private key here)", ErrPolicy, block.Type)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		return nil, fmt.Errorf("%w: more than one PEM block or trailing data; want exactly one public key", ErrPolicy)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: not a PKIX public key: %w", ErrPolicy, err)
	}
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	return pub, nil
}

func checkKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PublicKey:
		if bits := k.Size() * 8; bits != 2048 && bits != 3072 && bits != 4096 {
			return fmt.Errorf("%w: RSA key of %d bits; want 2048, 3072 or 4096", ErrPolicy, bits)
		}
	default:
		return fmt.Errorf("%w: unsupported public key type %T; want ECDSA, Ed25519 or RSA", ErrPolicy, pub)
	}
	if _, err := signature.GetDefaultPublicKeyDetails(pub); err != nil {
		return fmt.Errorf("%w: unsupported public key (%T): %w", ErrPolicy, pub, err)
	}
	return nil
}

// KeyPolicy returns the policy "signed with this public key".
func KeyPolicy(pub crypto.PublicKey) (*Policy, error) {
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	v, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	sum := sha256.Sum256(der)
	return &Policy{key: pub, verifier: v, keyID: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// KeylessPolicy returns the policy "signed with a certificate issued for
// this identity": issuer is the OIDC issuer (an https URL, matched
// exactly); exactly one of subject (matched exactly) and subjectRegexp (a
// Go regexp that must match the whole subject: it is evaluated as
// ^(?:subjectRegexp)$, as package config documents) is given. A regexp
// matching the empty string or an arbitrary identity is refused.
func KeylessPolicy(issuer, subject, subjectRegexp string) (*Policy, error) {
	if issuer == "" {
		return nil, fmt.Errorf("%w: no policy: give a key, or an issuer and a subject (or verify: false)", ErrPolicy)
	}
	if !strings.HasPrefix(issuer, "https://") || strings.TrimSpace(issuer) != issuer {
		return nil, fmt.Errorf("%w: issuer %q: want an https URL", ErrPolicy, issuer)
	}
	switch {
	case subject != "" && subjectRegexp != "":
		return nil, fmt.Errorf("%w: give either subject or subject_regexp, not both", ErrPolicy)
	case subject != "":
		return &Policy{issuer: issuer, subject: subject}, nil
	case subjectRegexp != "":
		re, err := compileSubject(subjectRegexp)
		if err != nil {
			return nil, err
		}
		return &Policy{issuer: issuer, subjectRe: re}, nil
	default:
		return nil, fmt.Errorf("%w: a keyless policy needs a subject or subject_regexp", ErrPolicy)
	}
}

// compileSubject compiles a subject regexp anchored at both ends and
// refuses one that matches everything or nearly so: the empty string, or
// an identity made up here that nobody configured.
func compileSubject(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + s + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%w: subject_regexp %q: %w", ErrPolicy, s, err)
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	n := hex.EncodeToString(nonce[:])
	probes := []string{
		"",
		n,
		n + "@" + n + ".invalid",
		"https://" + n + ".invalid/" + n,
		"https://github.com/" + n + "/" + n + "/.github/workflows/" + n + ".yml@refs/heads/main",
	}
	for _, probe := range probes {
		if re.MatchString(probe) {
			what := fmt.Sprintf("%q", probe)
			if probe == "" {
				what = "the empty string"
			}
			return nil, fmt.Errorf("%w: subject_regexp %q matches %s, so it would trust signers nobody chose; pin it to your own identities", ErrPolicy, s, what)
		}
	}
	return re, nil
}

// identity returns the sigstore-go certificate identity of a keyless
// policy. The SAN regexp given to sigstore-go is the anchored one.
func (p *Policy) identity() (sgverify.CertificateIdentity, error) {
	re := ""
	if p.subjectRe != nil {
		re = p.subjectRe.String()
	}
	return sgverify.NewShortCertificateIdentity(p.issuer, "", p.subject, re)
}

// keyMaterial is the trusted material of a key policy: the configured key,
// whatever hint a bundle names, valid at all times.
func (p *Policy) keyMaterial() root.TrustedMaterial {
	k := root.NewExpiringKey(p.verifier, time.Time{}, time.Time{})
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return k, nil })
}
