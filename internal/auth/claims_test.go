package auth_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/auth/authtest"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// oauthServer serves the middleware in front of serve's handler, trusting
// is, with the log in logs.
func oauthServer(t *testing.T, is *authtest.Issuer, logs *testutil.SyncBuffer) (url, resource string) {
	t.Helper()
	resource = "http://127.0.0.1:8080/mcp"
	a, err := auth.New(&config.Auth{OAuth: &config.OAuth{
		Issuer: is.URL, Resource: resource, Audience: resource, JWKSURL: is.JWKSURL, AuthorizationServers: []string{is.URL},
	}}, &auth.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, a).URL + "/mcp", resource
}

// TestTokensWithoutSubject: a token without sub is refused with 401 and a
// WWW-Authenticate that says why, since sessions are bound to the subject
// and every token without one would share an identity, and so each
// other's sessions.
func TestTokensWithoutSubject(t *testing.T) {
	is := authtest.New(t)
	var logs testutil.SyncBuffer
	url, resource := oauthServer(t, is, &logs)
	for name, c := range map[string]authtest.Claims{
		"no sub":         {Audience: resource, NoSubject: true, Other: map[string]any{"client_id": "a"}},
		"another no sub": {Audience: resource, NoSubject: true, Other: map[string]any{"client_id": "b"}},
		"empty sub":      {Audience: resource, Other: map[string]any{"sub": ""}},
		"null sub":       {Audience: resource, Other: map[string]any{"sub": nil, "client_id": "c"}},
	} {
		code, body, h := get(t, url, is.Mint(t, c))
		want := `invalid token: claim "sub": missing or empty;`
		if code != 401 || !strings.HasPrefix(body, want) {
			t.Errorf("%s: %d %q, want 401 %q...", name, code, body, want)
		}
		chal := h.Get("WWW-Authenticate")
		if !strings.HasPrefix(chal, `Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="claim 'sub': missing or empty;`) {
			t.Errorf("%s: WWW-Authenticate %q", name, chal)
		}
	}
	if !strings.Contains(logs.String(), `claim=sub`) {
		t.Errorf("the log does not name the claim:\n%s", logs.String())
	}
	// With a subject, the identity is the issuer's and the subject's.
	if code, body, _ := get(t, url, is.Mint(t, authtest.Claims{Audience: resource, Subject: "alice"})); code != 200 || body != "oauth:"+is.URL+"#alice" {
		t.Errorf("with sub: %d %q", code, body)
	}
}

// TestScopeClaims: scope and scp are each read as a space-separated string
// or as a list of strings; a claim of another type is refused as what it
// is, a claim error naming the claim (in the answer, the challenge and the
// log), never as a bad signature.
func TestScopeClaims(t *testing.T) {
	is := authtest.New(t)
	var logs testutil.SyncBuffer
	url, resource := oauthServer(t, is, &logs)
	user := "oauth:" + is.URL + "#user"
	for _, tc := range []struct {
		name  string
		other map[string]any
		code  int
		want  string
	}{
		{"scope string", map[string]any{"scope": "openid plugin:a plugin:b"}, 200, user + " a,b"},
		{"scope list", map[string]any{"scope": []string{"openid", "plugin:a", "plugin:b"}}, 200, user + " a,b"},
		{"scp list", map[string]any{"scope": nil, "scp": []string{"plugin:c"}}, 200, user + " c"},
		{"scp string", map[string]any{"scope": nil, "scp": "plugin:c plugin:d"}, 200, user + " c,d"},
		{"both", map[string]any{"scope": "plugin:a", "scp": []string{"plugin:c"}}, 200, user + " a,c"},
		{"null scope", map[string]any{"scope": nil}, 200, user},
		{"empty list", map[string]any{"scp": []string{}}, 200, user},
		{"scp number", map[string]any{"scp": 5}, 401, `invalid token: claim "scp": want a string of space-separated scopes or a list of strings, not a number`},
		{"scope object", map[string]any{"scope": map[string]any{"plugin:a": true}}, 401, `invalid token: claim "scope": want a string of space-separated scopes or a list of strings, not an object`},
		{"scope list of numbers", map[string]any{"scope": []any{"plugin:a", 7}}, 401, `invalid token: claim "scope": item 2 is a number, not a string`},
		{"exp string", map[string]any{"exp": "tomorrow"}, 401, `invalid token: claim "exp": want a NumericDate (seconds since 1970), not a string`},
		{"exp missing", map[string]any{"exp": nil}, 401, `invalid token: claim "exp": missing; a token must expire`},
		{"nbf future", map[string]any{"nbf": time.Now().Add(time.Hour).Unix()}, 401, `invalid token: claim "nbf": not valid before `},
		{"iat future", map[string]any{"iat": time.Now().Add(time.Hour).Unix()}, 401, `invalid token: claim "iat": issued in the future`},
		{"sub number", map[string]any{"sub": 5}, 401, `invalid token: claim "sub": want a string, not a number`},
		{"iss list", map[string]any{"iss": []string{is.URL}}, 401, `invalid token: claim "iss": want a string, not an array`},
		{"aud number", map[string]any{"aud": 5}, 401, `invalid token: claim "aud": want a string or a list of strings, not a number`},
	} {
		code, body, h := get(t, url, is.Mint(t, authtest.Claims{Audience: resource, Other: tc.other}))
		if code != tc.code || !strings.HasPrefix(body, tc.want) || code == 200 && body != tc.want {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, body, tc.code, tc.want)
		}
		if code == 401 {
			if strings.Contains(body, "signature") {
				t.Errorf("%s: a claim error reported as a signature error: %q", tc.name, body)
			}
			desc := strings.ReplaceAll(strings.TrimPrefix(tc.want, "invalid token: "), `"`, `'`)
			if chal := h.Get("WWW-Authenticate"); !strings.Contains(chal, `error="invalid_token", error_description="`+desc) {
				t.Errorf("%s: WWW-Authenticate %q, want a description %q", tc.name, chal, desc)
			}
		}
	}
	for _, claim := range []string{"scp", "scope", "exp", "nbf", "iat", "sub", "iss", "aud"} {
		if !strings.Contains(logs.String(), "claim="+claim+" ") {
			t.Errorf("no log line names claim %s:\n%s", claim, logs.String())
		}
	}
}

// TestChallengeDescription: the error_description of a challenge holds
// only the characters RFC 6750 allows, and is bounded, whatever the token
// said.
func TestChallengeDescription(t *testing.T) {
	is := authtest.New(t)
	var logs testutil.SyncBuffer
	url, resource := oauthServer(t, is, &logs)
	evil := `https://evil.example.com/"\` + "é\x01" + strings.Repeat("x", 5000)
	code, body, h := get(t, url, is.Mint(t, authtest.Claims{Audience: resource, Issuer: evil}))
	chal := h.Get("WWW-Authenticate")
	_, desc, _ := strings.Cut(chal, `error_description="`)
	desc = strings.TrimSuffix(desc, `"`)
	if code != 401 || !strings.HasPrefix(body, `invalid token: claim "iss": wrong issuer "https://evil.example.com/\"\\`) || len(body) > 1000 {
		t.Errorf("%d %q", code, body)
	}
	if len(desc) == 0 || len(desc) > 300 || strings.ContainsFunc(desc, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }) {
		t.Errorf("error_description %q", desc)
	}
}
