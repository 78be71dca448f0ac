package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	hexA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	hexB = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
)

func TestSources(t *testing.T) {
	dir := testdataDir(t)
	cfg := mustParse(t, `plugins:
  - name: by-path
    path: plugins/hello.wasm
  - name: by-source
    source: ./plugins/hello.wasm
    sha256: `+strings.ToUpper(hexA)+`
  - name: web
    source: https://plugins.example.test:8443/a/b.wasm?v=2
    sha256: sha256:`+hexA+`
  - name: tagged
    source: oci://registry.example.test/org/repo:1.0
    verify: {key: cosign.pub}
  - name: digested
    source: oci://127.0.0.1:5000/repo@sha256:`+hexB+`
    verify: false
  - name: both
    source: oci://localhost:5000/a/b/c:v1@sha256:`+hexB+`
    sha256: `+hexA+`
    verify:
      issuer: https://accounts.example.test
      subject: ci@example.test
      trusted_root: trusted_root.json
  - name: regexp
    source: oci://registry.example.test/r:latest
    verify:
      issuer: https://token.actions.githubusercontent.com
      subject_regexp: https://github\.com/acme/.*
      trusted_root: `+filepath.Join(dir, "trusted_root.json")+`
`)
	want := []struct {
		kind   SourceKind
		source string
		path   string
		sha    string
		verify *Verify
	}{
		{SourceFile, "plugins/hello.wasm", filepath.Join(dir, "plugins", "hello.wasm"), "", nil},
		{SourceFile, "./plugins/hello.wasm", filepath.Join(dir, "plugins", "hello.wasm"), hexA, nil},
		{SourceHTTPS, "https://plugins.example.test:8443/a/b.wasm?v=2", "", hexA, nil},
		{SourceOCI, "oci://registry.example.test/org/repo:1.0", "", "", &Verify{Key: filepath.Join(dir, "cosign.pub")}},
		{SourceOCI, "oci://127.0.0.1:5000/repo@sha256:" + hexB, "", "", &Verify{Disabled: true}},
		{SourceOCI, "oci://localhost:5000/a/b/c:v1@sha256:" + hexB, "", hexA, &Verify{Issuer: "https://accounts.example.test", Subject: "ci@example.test", TrustedRoot: filepath.Join(dir, "trusted_root.json")}},
		{SourceOCI, "oci://registry.example.test/r:latest", "", "", &Verify{Issuer: "https://token.actions.githubusercontent.com", SubjectRegexp: `https://github\.com/acme/.*`, TrustedRoot: filepath.Join(dir, "trusted_root.json")}},
	}
	if len(cfg.Plugins) != len(want) {
		t.Fatalf("%d plugins, want %d", len(cfg.Plugins), len(want))
	}
	for i, w := range want {
		p := cfg.Plugins[i]
		if p.Kind != w.kind || p.Source != w.source || p.Path != w.path || p.SHA256 != w.sha || !reflect.DeepEqual(p.Verify, w.verify) {
			t.Errorf("plugin %s: kind %q source %q path %q sha256 %q verify %+v\nwant %+v", p.Name, p.Kind, p.Source, p.Path, p.SHA256, p.Verify, w)
		}
		if p.LockFile != "" {
			t.Errorf("plugin %s: LockFile %q from Parse", p.Name, p.LockFile)
		}
	}
}

func TestSourceErrors(t *testing.T) {
	const head = "plugins:\n  - name: a\n" // lines 1-2
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{"path and source", head + "    path: plugins/hello.wasm\n    source: plugins/hello.wasm\n", []string{
			`test.yaml:4:5: plugins[0].source: give either path or source, not both (path is the same as source for a file)`}},
		{"missing file source", head + "    source: nope.wasm\n", []string{
			`test.yaml:3:13: plugins[0].source: nope.wasm (resolved to $DIR/nope.wasm) does not exist`}},
		{"https without sha256", head + "    source: https://example.test/a.wasm\n", []string{
			`test.yaml:3:13: plugins[0].source: an https source needs a sha256 pin: add sha256: with the SHA-256 of the .wasm file (hangar pull https://example.test/a.wasm prints it)`}},
		{"plain http", head + "    source: http://example.test/a.wasm\n    sha256: " + hexA + "\n", []string{
			`test.yaml:3:13: plugins[0].source: "http://example.test/a.wasm": plain http is not allowed; use an https:// URL (with a sha256 pin), an oci:// reference or a file`}},
		{"unknown scheme", head + "    source: ftp://example.test/a.wasm\n", []string{
			`test.yaml:3:13: plugins[0].source: "ftp://example.test/a.wasm": unknown scheme "ftp"; a source is a file path (or a file:// URL), an https:// URL or an oci:// reference`}},
		{"upper-case scheme", head + "    source: OCI://r.test/a:1\n    verify: false\n", []string{
			`test.yaml:3:13: plugins[0].source: "OCI://r.test/a:1": write the scheme in lower case, oci://`}},
		{"https with credentials", head + "    source: https://u:p@example.test/a.wasm\n    sha256: " + hexA + "\n", []string{
			`test.yaml:3:13: plugins[0].source: invalid URL "https://u:p@example.test/a.wasm": credentials in URLs are not supported`}},
		{"bad sha256", head + "    source: https://example.test/a.wasm\n    sha256: abc\n", []string{
			`test.yaml:4:13: plugins[0].sha256: invalid sha256 "abc": want 64 hexadecimal digits, got 3 characters`}},
		{"sha256 not hex", head + "    path: plugins/hello.wasm\n    sha256: " + strings.Repeat("g", 64) + "\n", []string{
			`test.yaml:4:13: plugins[0].sha256: invalid sha256 "` + strings.Repeat("g", 64) + `": 'g' is not a hexadecimal digit`}},
		{"null sha256", head + "    path: plugins/hello.wasm\n    sha256:\n", []string{
			`test.yaml:4:12: plugins[0].sha256: must not be empty; give the SHA-256 of the .wasm file as 64 hexadecimal digits`}},
		{"oci without tag", head + "    source: oci://r.test/repo\n    verify: false\n", []string{
			`test.yaml:3:13: plugins[0].source: invalid oci reference "oci://r.test/repo": add a tag (:1.0) or a digest (@sha256:...); there is no implicit latest`}},
		{"oci without repository", head + "    source: oci://r.test\n    verify: false\n", []string{
			`test.yaml:3:13: plugins[0].source: invalid oci reference "oci://r.test": missing registry or repository; want oci://registry/repository:tag or oci://registry/repository@sha256:digest`}},
		{"oci upper-case repository", head + "    source: oci://r.test/Repo:1\n    verify: false\n", []string{
			`test.yaml:3:13: plugins[0].source: invalid oci reference "oci://r.test/Repo:1": invalid repository "Repo"; want oci://registry/repository:tag or oci://registry/repository@sha256:digest`}},
		{"oci bad digest", head + "    source: oci://r.test/repo@sha256:abc\n    verify: false\n", []string{
			`test.yaml:3:13: plugins[0].source: invalid oci reference "oci://r.test/repo@sha256:abc": invalid digest "sha256:abc": invalid checksum digest length; want oci://registry/repository:tag or oci://registry/repository@sha256:digest`}},
		{"oci without verify", head + "    source: oci://r.test/repo:1\n", []string{
			`test.yaml:3:13: plugins[0].source: an oci source needs a signature policy: add verify: {key: ./cosign.pub}, or verify: {issuer: https://..., subject: ..., trusted_root: ./trusted_root.json} for keyless signatures, or verify: false to run it unverified`}},
		{"verify on a file", head + "    path: plugins/hello.wasm\n    verify: false\n", []string{
			`test.yaml:4:5: plugins[0].verify: verify applies to oci:// sources only; a file source is pinned by sha256`}},
		{"verify true", head + "    source: oci://r.test/repo:1\n    verify: true\n", []string{
			`test.yaml:4:13: plugins[0].verify: verify: true is not a policy; write verify: {key: ./cosign.pub} or verify: {issuer: https://..., subject: ..., trusted_root: ./trusted_root.json}`}},
		{"verify empty", head + "    source: oci://r.test/repo:1\n    verify: {}\n", []string{
			`test.yaml:4:13: plugins[0].verify: no policy; give key, or issuer, subject (or subject_regexp) and trusted_root; write verify: false to run unverified`}},
		{"verify null", head + "    source: oci://r.test/repo:1\n    verify:\n", []string{
			`test.yaml:4:12: plugins[0].verify: empty; write verify: {key: FILE}, verify: {issuer: URL, subject: IDENTITY, trusted_root: FILE}, or verify: false`}},
		{"verify string", head + "    source: oci://r.test/repo:1\n    verify: cosign.pub\n", []string{
			`test.yaml:4:13: plugins[0].verify: expected false or a mapping with key, or with issuer and subject, got the string "cosign.pub"`}},
		{"verify unknown key", head + "    source: oci://r.test/repo:1\n    verify: {keys: cosign.pub}\n", []string{
			`test.yaml:4:14: plugins[0].verify: unknown key "keys"; did you mean "key"?`,
		}},
		{"key missing", head + "    source: oci://r.test/repo:1\n    verify: {key: nope.pub}\n", []string{
			`test.yaml:4:19: plugins[0].verify.key: nope.pub (resolved to $DIR/nope.pub) does not exist`}},
		{"key is a directory", head + "    source: oci://r.test/repo:1\n    verify: {key: data}\n", []string{
			`test.yaml:4:19: plugins[0].verify.key: data (resolved to $DIR/data) is a directory, not a key file`}},
		{"key and issuer", head + "    source: oci://r.test/repo:1\n    verify: {key: cosign.pub, issuer: https://i.test, subject: s}\n", []string{
			`test.yaml:4:13: plugins[0].verify: give either key (a public key) or issuer and subject (keyless signatures), not both`}},
		{"issuer without subject", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:13: plugins[0].verify: missing required key "subject": keyless verification needs the identity of the signer (or subject_regexp)`}},
		{"subject without issuer", head + "    source: oci://r.test/repo:1\n    verify: {subject: ci@example.test, trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:13: plugins[0].verify: missing required key "issuer": keyless verification needs the OIDC issuer and the subject`}},
		{"issuer not https", head + "    source: oci://r.test/repo:1\n    verify: {issuer: accounts.example.test, subject: s, trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:22: plugins[0].verify.issuer: invalid issuer "accounts.example.test": want an https URL such as https://token.actions.githubusercontent.com`}},
		{"subject and regexp", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s, subject_regexp: s.*, trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:66: plugins[0].verify.subject_regexp: give either subject (exact) or subject_regexp, not both`}},
		{"empty subject", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: \"\", trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:47: plugins[0].verify.subject: must not be empty`}},
		{"match-anything regexp", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject_regexp: \".*\", trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:54: plugins[0].verify.subject_regexp: subject_regexp ".*" matches the empty string, so it would trust signers it should not; narrow it to your own identities (such as https://github\.com/acme/.*; it must match the whole subject) or use subject for an exact identity`}},
		{"too broad regexp", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject_regexp: 'https://github\\.com/.+', trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:54: plugins[0].verify.subject_regexp: subject_regexp "https://github\\.com/.+" matches "https://github.com/attacker/attacker/.github/workflows/release.yml@refs/heads/main", so it would trust signers it should not; narrow it to your own identities (such as https://github\.com/acme/.*; it must match the whole subject) or use subject for an exact identity`}},
		{"regexp does not compile", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject_regexp: \"a(\", trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:54: plugins[0].verify.subject_regexp: invalid regexp "a(": missing closing ): ` + "`a(`"}},
		{"keyless without trusted_root", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s}\n", []string{
			`test.yaml:4:13: plugins[0].verify: missing required key "trusted_root": keyless verification needs the Sigstore trusted_root.json to check certificates against (Hangar never fetches it)`}},
		{"trusted_root alone", head + "    source: oci://r.test/repo:1\n    verify: {trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:13: plugins[0].verify: missing required key "issuer": keyless verification needs the OIDC issuer and the subject`,
			`test.yaml:4:13: plugins[0].verify: missing required key "subject": keyless verification needs the identity of the signer (or subject_regexp)`}},
		{"trusted_root missing", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s, trusted_root: nope.json}\n", []string{
			`test.yaml:4:64: plugins[0].verify.trusted_root: nope.json (resolved to $DIR/nope.json) does not exist`}},
		{"trusted_root is a directory", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s, trusted_root: data}\n", []string{
			`test.yaml:4:64: plugins[0].verify.trusted_root: data (resolved to $DIR/data) is a directory, not a trusted root file`}},
		{"trusted_root empty", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s, trusted_root: \"\"}\n", []string{
			`test.yaml:4:64: plugins[0].verify.trusted_root: must not be empty`}},
		{"trusted_root with ~", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s, trusted_root: ~/trusted_root.json}\n", []string{
			`test.yaml:4:64: plugins[0].verify.trusted_root: "~/trusted_root.json": ~ is not expanded; use an absolute path or one relative to the configuration file`}},
		{"trusted_root list", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s, trusted_root: [a.json]}\n", []string{
			`test.yaml:4:64: plugins[0].verify.trusted_root: expected a string, got a list`}},
		{"trusted_root with key", head + "    source: oci://r.test/repo:1\n    verify: {key: cosign.pub, trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:31: plugins[0].verify.trusted_root: trusted_root goes with keyless verification (issuer and subject); a key policy checks signatures with the key alone, so remove trusted_root`}},
		{"trusted_root with key and issuer", head + "    source: oci://r.test/repo:1\n    verify: {key: cosign.pub, issuer: https://i.test, subject: s, trusted_root: trusted_root.json}\n", []string{
			`test.yaml:4:13: plugins[0].verify: give either key (a public key) or issuer and subject (keyless signatures), not both`}},
		{"trusted_root misspelt", head + "    source: oci://r.test/repo:1\n    verify: {issuer: https://i.test, subject: s, trusted-root: trusted_root.json}\n", []string{
			`test.yaml:4:13: plugins[0].verify: missing required key "trusted_root": keyless verification needs the Sigstore trusted_root.json to check certificates against (Hangar never fetches it)`,
			`test.yaml:4:50: plugins[0].verify: unknown key "trusted-root"; did you mean "trusted_root"?`}},
		{"verify key at plugin level", head + "    source: oci://r.test/repo:1\n    verify: false\n    issuer: https://i.test\n", []string{
			`test.yaml:5:5: plugins[0]: unknown key "issuer" (it belongs under verify)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testdataDir(t)
			_, err := parse(t, strings.ReplaceAll(tc.src, "$DIR", dir))
			got := messages(err)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = strings.ReplaceAll(w, "$DIR", dir)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestSHA256AsNumber(t *testing.T) {
	// 64 decimal digits read as a YAML integer; the text is taken as written.
	digits := strings.Repeat("1234567890", 6) + "1234"
	cfg := mustParse(t, "plugins:\n  - name: a\n    path: plugins/hello.wasm\n    sha256: "+digits+"\n")
	if cfg.Plugins[0].SHA256 != digits {
		t.Errorf("SHA256 = %q", cfg.Plugins[0].SHA256)
	}
}

func TestVerifyMatchSubject(t *testing.T) {
	v := Verify{Issuer: "https://i.test", SubjectRegexp: `https://github\.com/acme/[a-z]+/\.github/workflows/release\.yml@refs/tags/v.*`}
	for s, want := range map[string]bool{
		"https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.2.0":               true,
		"https://github.com/acme/tool/.github/workflows/release.yml@refs/heads/main":                false,
		"https://evil.test/https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1": false, // whole match only
		"": false,
	} {
		if got := v.MatchSubject(s); got != want {
			t.Errorf("MatchSubject(%q) = %v, want %v", s, got, want)
		}
	}
	exact := Verify{Issuer: "https://i.test", Subject: "ci@example.test"}
	if !exact.MatchSubject("ci@example.test") || exact.MatchSubject("ci@example.test.evil") || exact.SubjectMatcher() != nil {
		t.Error("exact subject")
	}
	for v, want := range map[Verify]string{
		{Disabled: true}:                                                     "disabled",
		{Key: "/k.pub"}:                                                      "key /k.pub",
		{Issuer: "https://i", Subject: "s"}:                                  "issuer https://i subject s",
		{Issuer: "https://i", SubjectRegexp: "s.*"}:                          "issuer https://i subject_regexp s.*",
		{Issuer: "https://i", Subject: "s", TrustedRoot: "/tr.json"}:         "issuer https://i subject s trusted_root /tr.json",
		{Issuer: "https://i", SubjectRegexp: "s.*", TrustedRoot: "/tr.json"}: "issuer https://i subject_regexp s.* trusted_root /tr.json",
	} {
		if v.String() != want {
			t.Errorf("String() = %q, want %q", v.String(), want)
		}
	}
}

func TestLoadSetsLockFile(t *testing.T) {
	t.Setenv("HANGAR_API_KEY", "k-123")
	cfg, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.Plugins {
		if want := filepath.Join(testdataDir(t), "full.lock"); p.LockFile != want {
			t.Errorf("%s: LockFile = %q, want %q", p.Name, p.LockFile, want)
		}
	}

	// Local files only: nothing to lock.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.wasm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hangar.yaml")
	if err := os.WriteFile(path, []byte("plugins:\n  - {name: a, path: p.wasm}\n  - {name: b, source: ./p.wasm, sha256: "+strings.Repeat("0", 64)+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Remote() {
		t.Error("a configuration of files reports a remote source")
	}
	for _, p := range cfg.Plugins {
		if p.LockFile != "" {
			t.Errorf("%s: LockFile = %q for a configuration of local files", p.Name, p.LockFile)
		}
	}
}

func TestLockPath(t *testing.T) {
	dir := t.TempDir()
	for config, lock := range map[string]string{
		"hangar.yaml":      "hangar.lock",
		"hangar.yml":       "hangar.lock",
		"hangar.json":      "hangar.lock",
		"team.yaml":        "team.lock",
		"team.prod.yaml":   "team.prod.lock",
		"hangar":           "hangar.lock",
		".hangar.yaml":     ".hangar.lock",
		"odd.lock":         "odd.lock.lock",
		"sub/desktop.yaml": "sub/desktop.lock",
	} {
		if got, want := LockPath(filepath.Join(dir, config)), filepath.Join(dir, lock); got != want {
			t.Errorf("LockPath(%s) = %s, want %s", config, got, want)
		}
	}
	wd, _ := os.Getwd()
	if got, want := LockPath("team.yaml"), filepath.Join(wd, "team.lock"); got != want {
		t.Errorf("LockPath(team.yaml) = %s, want %s (absolute)", got, want)
	}
}

func TestFileURL(t *testing.T) {
	dir := testdataDir(t)
	abs := filepath.Join(dir, "plugins", "hello.wasm")
	for _, src := range []string{"file://" + filepath.ToSlash(abs), "file://localhost" + filepath.ToSlash(abs),
		"file://" + strings.Replace(filepath.ToSlash(abs), "hello", "%68ello", 1)} {
		for _, key := range []string{"source", "path"} {
			cfg := mustParse(t, "plugins:\n  - name: a\n    "+key+": "+src+"\n")
			p := cfg.Plugins[0]
			if p.Kind != SourceFile || p.Path != abs || p.Source != src {
				t.Errorf("%s: %s: kind %q, path %q, source %q", key, src, p.Kind, p.Path, p.Source)
			}
		}
	}
	for src, want := range map[string]string{
		"file://host.example/x.wasm":   `a file URL names a file on this machine`,
		"file:plugins/hello.wasm":      `a file URL needs an absolute path`,
		"file:///nope/missing.wasm":    `/nope/missing.wasm does not exist`,
		"file://" + dir + "/plugins?x": `takes no user, query or fragment`,
	} {
		_, err := parse(t, "plugins:\n  - name: a\n    source: \""+src+"\"\n")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", src, err, want)
		}
	}
}
