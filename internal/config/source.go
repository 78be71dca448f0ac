package config

import (
	_ "crypto/sha256" // registers SHA-256 for digest validation in OCI references
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"

	"gopkg.in/yaml.v3"
	"oras.land/oras-go/v2/registry"
)

// SourceKind says where a plugin's module comes from.
type SourceKind string

// The kinds of source.
const (
	SourceFile  SourceKind = "file"  // a local file: path, or source without a scheme
	SourceHTTPS SourceKind = "https" // an https:// URL, pinned by sha256
	SourceOCI   SourceKind = "oci"   // an oci:// reference to an artifact in an OCI registry
)

// LockFileName is the lock file of a configuration file named hangar.yaml
// (or hangar.yml, hangar.json): see [LockPath]. Before each configuration
// had its own lock file, every configuration in a directory shared this
// one.
const LockFileName = "hangar.lock"

// Verify is the signature policy of an OCI plugin, as configured. Exactly
// one form holds after validation: Disabled; Key; or Issuer with one of
// Subject and SubjectRegexp, and TrustedRoot.
type Verify struct {
	Disabled      bool   // verify: false, an explicit opt-out
	Key           string // absolute, clean path of a public key file (such as cosign.pub)
	Issuer        string // keyless: the OIDC issuer, an https URL, matched exactly
	Subject       string // keyless: the certificate identity, matched exactly
	SubjectRegexp string // keyless: a Go regexp that must match the whole identity
	TrustedRoot   string // keyless: absolute, clean path of a Sigstore trusted_root.json
}

// SubjectMatcher returns SubjectRegexp compiled to match whole identities
// only (it is wrapped in ^(?: and )$), or nil when SubjectRegexp is empty.
// It panics if SubjectRegexp does not compile, which validation rules out.
func (v Verify) SubjectMatcher() *regexp.Regexp {
	if v.SubjectRegexp == "" {
		return nil
	}
	return regexp.MustCompile(anchor(v.SubjectRegexp))
}

// MatchSubject reports whether a certificate identity satisfies the
// policy's Subject or SubjectRegexp. It is false for a policy with neither.
func (v Verify) MatchSubject(identity string) bool {
	switch {
	case v.Subject != "":
		return identity == v.Subject
	case v.SubjectRegexp != "":
		return v.SubjectMatcher().MatchString(identity)
	}
	return false
}

// String describes the policy in one line, as in
// "key /etc/hangar/cosign.pub" or
// "issuer https://accounts.example subject ci@example.com trusted_root /etc/hangar/trusted_root.json".
// It names files by path, not content: it does not identify a policy
// whose key or trusted root file may change.
func (v Verify) String() string {
	var s string
	switch {
	case v.Disabled:
		return "disabled"
	case v.Key != "":
		return "key " + v.Key
	case v.SubjectRegexp != "":
		s = fmt.Sprintf("issuer %s subject_regexp %s", v.Issuer, v.SubjectRegexp)
	default:
		s = fmt.Sprintf("issuer %s subject %s", v.Issuer, v.Subject)
	}
	if v.TrustedRoot != "" {
		s += " trusted_root " + v.TrustedRoot
	}
	return s
}

func anchor(re string) string { return `^(?:` + re + `)$` }

var verifyKeys = []string{"key", "issuer", "subject", "subject_regexp", "trusted_root"}

// source decodes a plugin's source, from either path or source (exactly one
// must be given), with its sha256 pin and verify policy.
func (d *decoder) source(n *yaml.Node, p string, f map[string]entry, pl *Plugin) {
	pe, hasPath := f["path"]
	se, hasSource := f["source"]
	switch {
	case hasPath && hasSource:
		d.errorf(resolve(se.key), join(p, "source"), `give either path or source, not both (path is the same as source for a file)`)
		return
	case !hasPath && !hasSource:
		d.errorf(n, p, `missing required key "source" (or "path" for a file)`)
	case hasPath:
		pp := join(p, "path")
		v := resolve(pe.val)
		if s, ok := d.str(v, pp); ok {
			pl.Source, pl.Kind = s, SourceFile
			if strings.HasPrefix(strings.ToLower(s), "file:") {
				d.fileURL(v, pp, s, pl)
			} else {
				d.fileSource(v, pp, s, pl)
			}
		}
	default:
		pp := join(p, "source")
		v := resolve(se.val)
		if s, ok := d.str(v, pp); ok {
			d.remoteOrFile(v, pp, s, pl)
		}
	}

	if e, ok := f["sha256"]; ok {
		pp := join(p, "sha256")
		if h, ok := d.sha256(e.val, pp); ok {
			pl.SHA256 = h
		}
	}
	if pl.Kind == SourceHTTPS && pl.SHA256 == "" {
		if _, given := f["sha256"]; !given {
			d.errorf(resolve(se.val), join(p, "source"), "an https source needs a sha256 pin: add sha256: with the SHA-256 of the .wasm file (hangar pull %s prints it)", pl.Source)
		}
	}

	ve, hasVerify := f["verify"]
	if hasVerify {
		pp := join(p, "verify")
		v := d.verify(ve.val, pp)
		if pl.Kind != "" && pl.Kind != SourceOCI {
			d.errorf(resolve(ve.key), pp, "verify applies to oci:// sources only; a %s source is pinned by sha256", pl.Kind)
		} else {
			pl.Verify = v
		}
	}
	if pl.Kind == SourceOCI && !hasVerify {
		d.errorf(resolve(se.val), join(p, "source"), "an oci source needs a signature policy: add verify: {key: ./cosign.pub}, "+
			"or verify: {issuer: https://..., subject: ..., trusted_root: ./trusted_root.json} for keyless signatures, or verify: false to run it unverified")
	}
}

var schemeRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// remoteOrFile classifies a source string and decodes it.
func (d *decoder) remoteOrFile(n *yaml.Node, p, s string, pl *Plugin) {
	pl.Source = s
	if strings.HasPrefix(strings.ToLower(s), "file:") {
		d.fileURL(n, p, s, pl)
		return
	}
	m := schemeRe.FindStringSubmatch(s)
	if m == nil {
		pl.Kind = SourceFile
		d.fileSource(n, p, s, pl)
		return
	}
	switch scheme := m[1]; {
	case scheme == "oci":
		pl.Kind = SourceOCI
		if _, problem := ParseOCIReference(s); problem != "" {
			d.errorf(n, p, "invalid oci reference %q: %s", s, problem)
		}
	case scheme == "https":
		pl.Kind = SourceHTTPS
		if problem := checkHTTPSURL(s); problem != "" {
			d.errorf(n, p, "invalid URL %q: %s", s, problem)
		}
	case strings.EqualFold(scheme, "http"):
		d.errorf(n, p, "%q: plain http is not allowed; use an https:// URL (with a sha256 pin), an oci:// reference or a file", s)
	case strings.EqualFold(scheme, "oci"), strings.EqualFold(scheme, "https"):
		d.errorf(n, p, "%q: write the scheme in lower case, %s://", s, strings.ToLower(scheme))
	default:
		d.errorf(n, p, "%q: unknown scheme %q; a source is a file path (or a file:// URL), an https:// URL or an oci:// reference", s, scheme)
	}
}

// MaxModuleSize is the largest module a file source may have (and the
// default limit for fetched modules).
const MaxModuleSize int64 = 512 << 20

// fileSource checks a file source and sets Path: it must be a regular file
// (not a directory, device or FIFO, which would hang or exhaust memory
// when read) of at most MaxModuleSize bytes.
func (d *decoder) fileSource(n *yaml.Node, p, s string, pl *Plugin) {
	abs, ok := d.hostPath(n, p, s)
	if !ok {
		return
	}
	if problem := checkFile(abs, false); problem != "" {
		d.errorf(n, p, "%s", describePath(s, abs)+problem)
		return
	}
	if problem := checkModuleFile(abs); problem != "" {
		d.errorf(n, p, "%s", describePath(s, abs)+problem)
		return
	}
	pl.Path = abs
}

// checkModuleFile checks that an existing path is a regular file of at
// most MaxModuleSize bytes.
func checkModuleFile(abs string) string {
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "cannot be used: " + err.Error()
	case fi.Mode()&fs.ModeNamedPipe != 0:
		return "is a FIFO, not a regular file; a module must be a .wasm file"
	case fi.Mode()&fs.ModeDevice != 0:
		return "is a device, not a regular file; a module must be a .wasm file"
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("is not a regular file (%s); a module must be a .wasm file", fi.Mode().Type())
	case fi.Size() > MaxModuleSize:
		return fmt.Sprintf("has %d bytes, more than the limit of %d for a module", fi.Size(), MaxModuleSize)
	}
	return ""
}

// fileURL decodes a file:// URL as a file source: file:///abs/path.wasm
// (or file://localhost/abs/path.wasm), with percent-escapes decoded.
// Source stays as written; Path is the file.
func (d *decoder) fileURL(n *yaml.Node, p, s string, pl *Plugin) {
	pl.Source, pl.Kind = s, SourceFile
	u, err := url.Parse(s)
	switch {
	case err != nil || !strings.EqualFold(u.Scheme, "file"):
		d.errorf(n, p, "invalid file URL %q; write file:///absolute/path/plugin.wasm", s)
		return
	case u.Host != "" && !strings.EqualFold(u.Host, "localhost"):
		d.errorf(n, p, "%q: a file URL names a file on this machine; write file:///absolute/path (host %q is not supported)", s, u.Host)
		return
	case u.Opaque != "" || u.Path == "" || !strings.HasPrefix(u.Path, "/"):
		d.errorf(n, p, "%q: a file URL needs an absolute path, as in file:///absolute/path/plugin.wasm; write a relative path without file:", s)
		return
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		d.errorf(n, p, "%q: a file URL takes no user, query or fragment", s)
		return
	}
	d.fileSource(n, p, filepath.FromSlash(u.Path), pl)
	if pl.Path != "" {
		pl.Source = s
	}
}

// ParseOCIReference parses "oci://registry/repository:tag",
// "oci://registry/repository@sha256:<hex>" or
// "oci://registry/repository:tag@sha256:<hex>" (where the digest wins and
// the tag is ignored). A tag or a digest is required. It returns the
// reference, or a problem.
func ParseOCIReference(s string) (registry.Reference, string) {
	rest, ok := strings.CutPrefix(s, "oci://")
	if !ok {
		return registry.Reference{}, `must start with "oci://"`
	}
	if strings.ContainsAny(rest, "?#") || strings.Contains(rest, "://") {
		return registry.Reference{}, "want oci://registry/repository:tag or oci://registry/repository@sha256:digest"
	}
	ref, err := registry.ParseReference(rest)
	if err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "invalid reference: ")
		return registry.Reference{}, msg + "; want oci://registry/repository:tag or oci://registry/repository@sha256:digest"
	}
	if ref.Reference == "" {
		return registry.Reference{}, "add a tag (:1.0) or a digest (@sha256:...); there is no implicit latest"
	}
	if dg, err := ref.Digest(); err == nil && dg.Algorithm() != "sha256" {
		return registry.Reference{}, "only sha256 digests are supported"
	}
	return ref, ""
}

// checkHTTPSURL validates an https source URL.
func checkHTTPSURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL"
	case u.Host == "" || u.Hostname() == "":
		return "no host"
	case u.User != nil:
		return "credentials in URLs are not supported"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "remove the fragment (#...)"
	case strings.ContainsAny(s, " \t\n"):
		return "contains white space"
	}
	if port := u.Port(); port != "" {
		if problem := checkPort(port, false); problem != "" {
			return problem
		}
	}
	return ""
}

// sha256 decodes a pin: 64 hexadecimal digits, optionally written with a
// "sha256:" prefix; returned in lower case without the prefix.
func (d *decoder) sha256(n *yaml.Node, p string) (string, bool) {
	n = resolve(n)
	if isNull(n) {
		d.errorf(n, p, "must not be empty; give the SHA-256 of the .wasm file as 64 hexadecimal digits")
		return "", false
	}
	// A hex digest of digits only (or digits and one "e") reads as a number
	// in YAML; take the text as written.
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.typeError(n, p, "a string")
		return "", false
	}
	h, problem := ParseSHA256(n.Value)
	if problem != "" {
		d.errorf(n, p, "invalid sha256 %q: %s", n.Value, problem)
		return "", false
	}
	return h, true
}

// ParseSHA256 parses a SHA-256 digest written as 64 hexadecimal digits,
// optionally prefixed "sha256:", and returns the digits in lower case, or a
// problem.
func ParseSHA256(s string) (string, string) {
	h := s
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "sha256:"); ok {
		h = rest
	}
	if len(h) != 64 {
		return "", fmt.Sprintf("want 64 hexadecimal digits, got %d characters", len(h))
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", fmt.Sprintf("%q is not a hexadecimal digit", c)
		}
	}
	return strings.ToLower(h), ""
}

// verify decodes a verify value: false, or a mapping of a policy. It
// returns nil when the value is unusable (after reporting it).
func (d *decoder) verify(n *yaml.Node, p string) *Verify {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var b bool
		_ = n.Decode(&b)
		if b {
			d.errorf(n, p, "verify: true is not a policy; write verify: {key: ./cosign.pub} or verify: {issuer: https://..., subject: ..., trusted_root: ./trusted_root.json}")
			return nil
		}
		return &Verify{Disabled: true}
	}
	if isNull(n) {
		d.errorf(n, p, "empty; write verify: {key: FILE}, verify: {issuer: URL, subject: IDENTITY, trusted_root: FILE}, or verify: false")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.typeError(n, p, "false or a mapping with key, or with issuer and subject")
		return nil
	}
	f := d.mapping(n, p, verifyKeys, nil)
	if f == nil {
		return nil
	}
	v := &Verify{}
	valid := true
	strField := func(key string) (string, *yaml.Node, bool) {
		e, ok := f[key]
		if !ok {
			return "", nil, false
		}
		pp := join(p, key)
		vn := resolve(e.val)
		s, ok := d.str(vn, pp)
		if !ok {
			valid = false
			return "", vn, false
		}
		if s == "" {
			d.errorf(vn, pp, "must not be empty")
			valid = false
			return "", vn, false
		}
		return s, vn, true
	}
	key, keyNode, hasKey := strField("key")
	issuer, issuerNode, hasIssuer := strField("issuer")
	subject, _, hasSubject := strField("subject")
	subjectRe, reNode, hasRe := strField("subject_regexp")
	trustedRoot, rootNode, hasRoot := strField("trusted_root")
	_, givenKey := f["key"]
	_, givenIssuer := f["issuer"]
	_, givenSubject := f["subject"]
	_, givenRe := f["subject_regexp"]
	rootEntry, givenRoot := f["trusted_root"]

	if givenKey && (givenIssuer || givenSubject || givenRe) {
		d.errorf(n, p, "give either key (a public key) or issuer and subject (keyless signatures), not both")
		return nil
	}
	if givenKey && givenRoot {
		d.errorf(resolve(rootEntry.key), join(p, "trusted_root"), "trusted_root goes with keyless verification (issuer and subject); a key policy checks signatures with the key alone, so remove trusted_root")
		return nil
	}
	if !givenKey && !givenIssuer && !givenSubject && !givenRe && !givenRoot {
		if len(n.Content) > 0 {
			return nil // only unknown keys, reported
		}
		d.errorf(n, p, "no policy; give key, or issuer, subject (or subject_regexp) and trusted_root; write verify: false to run unverified")
		return nil
	}
	if givenKey {
		if !hasKey {
			return nil
		}
		abs, ok := d.hostPath(keyNode, join(p, "key"), key)
		if !ok {
			return nil
		}
		if problem := checkFile(abs, false); problem != "" {
			problem = strings.Replace(problem, "not a WebAssembly file", "not a key file", 1)
			d.errorf(keyNode, join(p, "key"), "%s", describePath(key, abs)+problem)
			return nil
		}
		v.Key = abs
		return v
	}
	// Keyless.
	if !givenIssuer {
		d.errorf(n, p, `missing required key "issuer": keyless verification needs the OIDC issuer and the subject`)
		valid = false
	} else if hasIssuer {
		if problem := checkIssuer(issuer); problem != "" {
			d.errorf(issuerNode, join(p, "issuer"), "invalid issuer %q: %s", issuer, problem)
			valid = false
		}
	}
	switch {
	case givenSubject && givenRe:
		d.errorf(reNode, join(p, "subject_regexp"), "give either subject (exact) or subject_regexp, not both")
		valid = false
	case !givenSubject && !givenRe:
		d.errorf(n, p, `missing required key "subject": keyless verification needs the identity of the signer (or subject_regexp)`)
		valid = false
	case hasRe:
		if problem := checkSubjectRegexp(subjectRe); problem != "" {
			d.errorf(reNode, join(p, "subject_regexp"), "%s", problem)
			valid = false
		}
	}
	if !givenRoot {
		d.errorf(n, p, `missing required key "trusted_root": keyless verification needs the Sigstore trusted_root.json to check certificates against (Hangar never fetches it)`)
		valid = false
	} else if hasRoot {
		abs, ok := d.hostPath(rootNode, join(p, "trusted_root"), trustedRoot)
		if !ok {
			valid = false
		} else if problem := checkFile(abs, false); problem != "" {
			problem = strings.Replace(problem, "not a WebAssembly file", "not a trusted root file", 1)
			d.errorf(rootNode, join(p, "trusted_root"), "%s", describePath(trustedRoot, abs)+problem)
			valid = false
		} else {
			v.TrustedRoot = abs
		}
	}
	if !valid || (givenSubject && !hasSubject) || (givenRe && !hasRe) || (givenRoot && !hasRoot) {
		return nil
	}
	v.Issuer, v.Subject, v.SubjectRegexp = issuer, subject, subjectRe
	return v
}

// checkIssuer validates an OIDC issuer: an https URL with a host.
func checkIssuer(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "want an https URL such as https://token.actions.githubusercontent.com"
	}
	return ""
}

// Identities that no sensible subject_regexp matches: a policy matching
// one of them trusts nearly anyone who can get a certificate.
var subjectCanaries = []string{
	"",
	"x",
	"attacker@attacker.invalid",
	"https://attacker.invalid/",
	"https://github.com/attacker/attacker/.github/workflows/release.yml@refs/heads/main",
	"https://gitlab.com/attacker/attacker//.gitlab-ci.yml@refs/heads/main",
	"spiffe://attacker.invalid/ns/default/sa/default",
}

// checkSubjectRegexp rejects regexps that do not compile or match too much.
func checkSubjectRegexp(s string) string {
	if _, err := syntax.Parse(s, syntax.Perl); err != nil {
		return fmt.Sprintf("invalid regexp %q: %v", s, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	re, err := regexp.Compile(anchor(s))
	if err != nil {
		return fmt.Sprintf("invalid regexp %q: %v", s, err)
	}
	for _, c := range subjectCanaries {
		if re.MatchString(c) {
			if c == "" {
				c = "the empty string"
			} else {
				c = fmt.Sprintf("%q", c)
			}
			return fmt.Sprintf("subject_regexp %q matches %s, so it would trust signers it should not; "+
				"narrow it to your own identities (such as https://github\\.com/acme/.*; it must match the whole subject) or use subject for an exact identity", s, c)
		}
	}
	return ""
}

// LockPath returns the lock file of a configuration file, absolute: the
// configuration's file name with its extension replaced by ".lock", in the
// same directory. hangar.yaml has hangar.lock, team.yaml team.lock, so two
// configurations in one directory do not share one. A configuration whose
// own extension is ".lock" gets ".lock" added rather than being its own lock
// file.
func LockPath(configPath string) string {
	if abs, err := filepath.Abs(configPath); err == nil {
		configPath = abs
	}
	dir, base := filepath.Split(configPath)
	ext := filepath.Ext(base)
	if ext != ".lock" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	return filepath.Join(dir, base+".lock")
}
