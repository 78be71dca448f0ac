package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuthExample(t *testing.T) {
	dir := testdataDir(t)
	data, err := os.ReadFile("testdata/auth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, "testdata/auth.yaml", "testdata", testEnv)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	checkGolden(t, cfg, dir, "testdata/auth.golden.json")

	// Spot checks, so the golden file cannot silently hold wrong values.
	a := cfg.HTTP.Auth
	if a == nil || len(a.Tokens) != 3 || a.OAuth == nil {
		t.Fatalf("auth = %+v", a)
	}
	// The token of ci-bot is in the file; its SHA-256 is kept, not the token.
	if a.Tokens[0].ID != "ci-bot" || a.Tokens[0].SHA256 != sha256Hex("3f1c0a9e5b7d24c68e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d") {
		t.Errorf("ci-bot = %+v", a.Tokens[0])
	}
	if a.Tokens[1].SHA256 != "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" || a.Tokens[1].Plugins[0] != AllPlugins {
		t.Errorf("ops = %+v", a.Tokens[1])
	}
	if a.Tokens[2].ID != "env-bot" || a.Tokens[2].SHA256 != sha256Hex("0123456789abcdef0123456789abcdef") {
		t.Errorf("env-bot = %+v", a.Tokens[2])
	}
	if a.OAuth.Audience != "hangar" || a.OAuth.JWKSURL == "" {
		t.Errorf("oauth = %+v", a.OAuth)
	}
	if cfg.HTTP.TLS == nil || cfg.HTTP.TLS.Cert != filepath.Join(dir, "tls", "tls.crt") {
		t.Errorf("tls = %+v", cfg.HTTP.TLS)
	}
}

func TestServiceDefaults(t *testing.T) {
	cfg, err := parse(t, "plugins: []\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Auth != nil || cfg.HTTP.TLS != nil || cfg.Tracing != nil || cfg.Metrics.Addr != "" {
		t.Errorf("defaults: %+v %+v %+v", cfg.HTTP, cfg.Tracing, cfg.Metrics)
	}
	// An OAuth audience defaults to the resource, and the authorization
	// servers to the issuer.
	cfg, err = parse(t, "http:\n  auth:\n    oauth:\n      issuer: http://127.0.0.1:9/\n      resource: http://localhost:8080/mcp\n      jwks_url: http://127.0.0.1:9/jwks\n")
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.HTTP.Auth.OAuth
	if o.Audience != "http://localhost:8080/mcp" || len(o.AuthorizationServers) != 1 || o.AuthorizationServers[0] != "http://127.0.0.1:9/" {
		t.Errorf("oauth defaults: %+v", o)
	}
	cfg, err = parse(t, "tracing:\n  endpoint: http://collector:4318/v1/traces\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracing.SampleRatio != 1 || cfg.Tracing.ServiceName != "hangar" {
		t.Errorf("tracing defaults: %+v", cfg.Tracing)
	}
}

// TestLoopbackOnlyWithoutAuth: without http.auth, HTTP listens only where
// other machines cannot reach it.
func TestLoopbackOnlyWithoutAuth(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.2:80", "localhost:8080", "LOCALHOST:1", "[::1]:0"} {
		if _, err := parse(t, "http:\n  addr: \""+addr+"\"\n"); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "10.0.0.1:80", "mcp.example.com:443"} {
		_, err := parse(t, "http:\n  addr: \""+addr+"\"\n")
		want := `test.yaml:2:9: http.addr: ` + addr + ` can be reached from other machines, and http.auth is not configured: anyone who can connect could call every plugin. Configure http.auth (tokens_file, tokens_env or oauth), or listen on a loopback address such as 127.0.0.1:8080`
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v\nwant %s", addr, err, want)
		}
	}
	// With auth, anywhere.
	if _, err := parse(t, "http:\n  addr: \":8080\"\n  auth:\n    tokens_env: HANGAR_TOKENS\n"); err != nil {
		t.Error(err)
	}
}

func TestServiceErrors(t *testing.T) {
	tokens := func(body string) string {
		path := filepath.Join(t.TempDir(), "tokens.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"empty auth", "http:\n  auth: {}\n", []string{
			`test.yaml:2:9: http.auth: configure tokens_file, tokens_env or oauth (or remove auth, and listen on a loopback address)`}},
		{"auth with legacy sse", "http:\n  legacy_sse: true\n  auth: {tokens_env: HANGAR_TOKENS}\n", []string{
			`test.yaml:3:3: http.auth: cannot be combined with legacy_sse: the HTTP+SSE transport of 2024-11-05 cannot bind a session to its token; remove legacy_sse (clients of every protocol version can use /mcp)`}},
		{"unset env", "http:\n  auth: {tokens_env: NOPE}\n", []string{
			`test.yaml:2:22: http.auth.tokens_env: environment variable NOPE is not set`}},
		{"missing tokens file", "http:\n  auth: {tokens_file: ./nope.yaml}\n", []string{
			`test.yaml:2:23: http.auth.tokens_file: ./nope.yaml (resolved to $TESTDATA/nope.yaml) does not exist`}},
		{"bad tokens", "http:\n  auth:\n    tokens_file: " + tokens("- id: a\n  token: short\n  plugins: [hello]\n- id: a\n  sha256: abc\n  plugins: []\n- token: "+good+"\n  sha256: "+sha256Hex(good)+"\n  plugins: [Bad]\n- {id: b, plugins: ['*'], tokn: x}\n") + "\n", []string{
			`$FILE:2:10: [0].token: a token must be at least 32 characters with no spaces; generate one with: openssl rand -hex 32`,
			`$FILE:4:7: [1].id: duplicate token id "a" (first in $FILE:1)`,
			`$FILE:5:11: [1].sha256: invalid sha256 "abc": want 64 hexadecimal digits, got 3 characters`,
			`$FILE:6:12: [1].plugins: must name at least one plugin, or "*" for every plugin`,
			`$FILE:7:3: [2]: missing required key "id"`,
			`$FILE:8:3: [2]: give token or sha256, not both`,
			`$FILE:9:13: [2].plugins[0]: invalid plugin name "Bad"`,
			`$FILE:10:3: [3]: missing required key "token" (or "sha256", the token's SHA-256)`,
			`$FILE:10:27: [3]: unknown key "tokn"; did you mean "token"?`,
		}},
		{"tokens not a list", "http:\n  auth:\n    tokens_file: " + tokens("tokens: []\n") + "\n", []string{
			`$FILE:1:1: expected a list of tokens, each with id, token (or sha256) and plugins, got a mapping`}},
		{"oauth", "http:\n  auth:\n    oauth:\n      issuer: http://auth.example.com\n      resource: mcp.example.com\n      jwks_url: https://u:p@auth.example.com/jwks\n      jwks_file: ./nope.json\n", []string{
			`test.yaml:4:15: http.auth.oauth.issuer: invalid URL "http://auth.example.com": plain http is allowed only to a loopback host; use https`,
			`test.yaml:5:17: http.auth.oauth.resource: invalid URL "mcp.example.com": want an absolute URL such as https://auth.example.com`,
			`test.yaml:6:17: http.auth.oauth.jwks_url: invalid URL "https://u:p@auth.example.com/jwks": a URL here may not hold credentials`,
			`test.yaml:7:7: http.auth.oauth: give jwks_url or jwks_file, not both`,
			`test.yaml:7:18: http.auth.oauth.jwks_file: ./nope.json (resolved to $TESTDATA/nope.json) does not exist`,
		}},
		{"oauth without keys", "http:\n  auth:\n    oauth: {issuer: 'https://a.example.com', resource: 'https://m.example.com/mcp'}\n", []string{
			`test.yaml:3:12: http.auth.oauth: missing required key "jwks_url" (or "jwks_file"): where the authorization server's signing keys are`}},
		{"tls", "http:\n  tls: {cert: ./nope.crt}\n", []string{
			`test.yaml:2:8: http.tls: missing required key "key"`,
			`test.yaml:2:15: http.tls.cert: ./nope.crt (resolved to $TESTDATA/nope.crt) does not exist`}},
		{"tls dir", "http:\n  tls: {cert: ./data, key: ./data}\n", []string{
			`test.yaml:2:15: http.tls.cert: ./data (resolved to $TESTDATA/data) is a directory`,
			`test.yaml:2:28: http.tls.key: ./data (resolved to $TESTDATA/data) is a directory`}},
		{"metrics", "metrics: {addr: nope, port: 1}\n", []string{
			`test.yaml:1:17: metrics.addr: invalid address "nope": want host:port, such as 127.0.0.1:8080 or :8080`,
			`test.yaml:1:23: metrics: unknown key "port"; known keys are addr`}},
		{"tracing", "tracing:\n  endpoint: grpc://collector:4317\n  sample_ratio: 2\n  headers: {A: $X}\n", []string{
			`test.yaml:2:13: tracing.endpoint: invalid URL "grpc://collector:4317": want http:// or https:// and a host, such as http://127.0.0.1:4318/v1/traces`,
			`test.yaml:3:17: tracing.sample_ratio: must be between 0 and 1, got 2`,
			`test.yaml:4:16: tracing.headers.A: "$X" is not expanded: write ${X} to use the variable, or $$X for a literal $`}},
		{"tracing without endpoint", "tracing: {sample_ratio: half}\n", []string{
			`test.yaml:1:10: tracing: missing required key "endpoint": the OTLP/HTTP traces URL of a collector, such as http://127.0.0.1:4318/v1/traces`,
			`test.yaml:1:25: tracing.sample_ratio: expected a number from 0 to 1, got the string "half"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src)
			got := messages(err)
			dir := testdataDir(t)
			var file string
			if i := strings.Index(tc.src, "tokens_file: "); i >= 0 {
				file = strings.TrimSpace(strings.SplitN(tc.src[i+len("tokens_file: "):], "\n", 2)[0])
			}
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir, "$TESTDATA")
				if file != "" && strings.HasPrefix(file, "/") {
					got[i] = strings.ReplaceAll(got[i], file, "$FILE")
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "127.9.9.9:1": true,
		":1": false, "0.0.0.0:1": false, "[::]:1": false, "192.168.1.1:1": false, "example.com:1": false, "nonsense": false,
		"[::ffff:127.0.0.1]:1": true,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}
