package auth_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/auth/authtest"
	"github.com/hangar-mcp/hangar/internal/config"
)

const (
	ciToken  = "ci-0123456789abcdef0123456789abcdef"
	opsToken = "ops-0123456789abcdef0123456789abcdef"
)

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// serve runs the middleware in front of a handler that answers with the
// caller's identity and grant.
func serve(t *testing.T, a *auth.Authenticator) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := sdkauth.TokenInfoFromContext(r.Context())
		g := auth.GrantOf(ti)
		io.WriteString(w, ti.UserID+" "+g.String())
	})))
	if paths, h := a.Metadata(); h != nil {
		for _, p := range paths {
			mux.Handle(p, h)
		}
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url, token string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header
}

func TestStaticTokens(t *testing.T) {
	a, err := auth.New(&config.Auth{Tokens: []config.Token{
		{ID: "ci", SHA256: hash(ciToken), Plugins: []string{"hello", "notes"}},
		{ID: "ops", SHA256: hash(opsToken), Plugins: []string{"*"}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, a)
	for _, tc := range []struct {
		token, want string
		code        int
	}{
		{ciToken, "token:ci hello,notes", 200},
		{opsToken, "token:ops *", 200},
		{"", "no bearer token", 401},
		{ciToken + "x", "invalid token: unknown token", 401},
		{strings.ToUpper(ciToken), "invalid token: unknown token", 401},
	} {
		code, body, h := get(t, srv.URL+"/mcp", tc.token)
		if code != tc.code || body != tc.want {
			t.Errorf("token %q: %d %q, want %d %q", tc.token, code, body, tc.code, tc.want)
		}
		want := `Bearer realm="hangar"`
		if tc.token != "" {
			want += `, error="invalid_token", error_description="unknown token"`
		}
		if code == 401 && h.Get("WWW-Authenticate") != want {
			t.Errorf("token %q: challenge %q, want %q", tc.token, h.Get("WWW-Authenticate"), want)
		}
	}
	// Without OAuth there is no metadata.
	if code, _, _ := get(t, srv.URL+auth.MetadataPath, ""); code != 404 {
		t.Errorf("metadata without oauth: %d", code)
	}
}

func TestGrant(t *testing.T) {
	var none *auth.Grant
	if !none.Allows("x") || !none.All() {
		t.Error("a nil grant (no authentication) must allow every plugin")
	}
	g := auth.NewGrant("a", "b")
	if !g.Allows("a") || g.Allows("c") || g.All() {
		t.Errorf("grant a,b: %v", g)
	}
	if auth.GrantOf(nil) != nil {
		t.Error("GrantOf(nil) must be nil")
	}
	if g := auth.GrantOf(&sdkauth.TokenInfo{}); g == nil || g.Allows("a") {
		t.Error("a TokenInfo without a grant must allow nothing")
	}
}

// TestOAuth mints tokens with a local key, its JWKS served on 127.0.0.1,
// and checks each way a token can be wrong.
func TestOAuth(t *testing.T) {
	is := authtest.New(t)
	const resource = "http://127.0.0.1:8080/mcp"
	a, err := auth.New(&config.Auth{OAuth: &config.OAuth{
		Issuer: is.URL, Resource: resource, Audience: resource, JWKSURL: is.JWKSURL,
		AuthorizationServers: []string{is.URL}, Plugins: []string{"base"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, a)
	ok := authtest.Claims{Audience: resource, Scope: "openid plugin:hello"}
	for _, tc := range []struct {
		name  string
		token string
		code  int
		want  string
	}{
		{"valid", is.Mint(t, ok), 200, "oauth:" + is.URL + "#user base,hello"},
		{"all plugins", is.Mint(t, authtest.Claims{Audience: resource, Scope: "plugin:*", Subject: "admin"}), 200, "oauth:" + is.URL + "#admin *"},
		{"no plugin scope", is.Mint(t, authtest.Claims{Audience: resource}), 200, "oauth:" + is.URL + "#user base"},
		{"missing", "", 401, "no bearer token"},
		{"expired", is.Mint(t, authtest.Claims{Audience: resource, Expiry: -time.Hour}), 401, `invalid token: claim "exp": expired at`},
		{"no expiry", is.Mint(t, authtest.Claims{Audience: resource, NoExpiry: true}), 401, `invalid token: claim "exp": missing; a token must expire`},
		{"wrong audience", is.Mint(t, authtest.Claims{Audience: "https://other.example.com/mcp"}), 401, `invalid token: claim "aud": wrong audience ["https://other.example.com/mcp"]; want "` + resource + `"`},
		{"wrong issuer", is.Mint(t, authtest.Claims{Audience: resource, Issuer: "https://evil.example.com"}), 401, `invalid token: claim "iss": wrong issuer "https://evil.example.com"; want "` + is.URL + `"`},
		{"bad signature", is.Mint(t, authtest.Claims{Audience: resource, OtherKey: true}), 401, "invalid token: bad signature: no key of the JWKS verifies it"},
		{"garbage", "a.b.c", 401, "invalid token: malformed JWT"},
		{"alg none", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", 401, "invalid token: malformed JWT or unsupported algorithm"},
	} {
		code, body, h := get(t, srv.URL+"/mcp", tc.token)
		if code != tc.code || !strings.HasPrefix(body, tc.want) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, body, tc.code, tc.want)
		}
		if code == 401 {
			// The reason, in RFC 6750's characters.
			want := `Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"`
			if tc.token != "" {
				want += `, error="invalid_token", error_description="` + strings.ReplaceAll(strings.TrimPrefix(body, "invalid token: "), `"`, "'") + `"`
			}
			if got := h.Get("WWW-Authenticate"); got != want {
				t.Errorf("%s: WWW-Authenticate %q, want %q", tc.name, got, want)
			}
		}
	}
	// A forged token naming an unknown key makes at most one fetch of the
	// JWKS every few seconds, however many arrive.
	before := is.Fetches.Load()
	for range 20 {
		get(t, srv.URL+"/mcp", is.Mint(t, ok)+"x")
	}
	if n := is.Fetches.Load() - before; n > 1 {
		t.Errorf("20 bad tokens fetched the JWKS %d times", n)
	}

	// The protected-resource metadata, at both paths.
	for _, p := range []string{auth.MetadataPath, auth.MetadataPath + "/mcp"} {
		code, body, h := get(t, srv.URL+p, "")
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &md) != nil || md.Resource != resource ||
			len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != is.URL || h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: %d %s %+v", p, code, body, md)
		}
	}
}

func TestOAuthJWKSFile(t *testing.T) {
	is := authtest.New(t)
	b, _ := json.Marshal(is.JWKS())
	file := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(file, b, 0o600)
	a, err := auth.New(&config.Auth{OAuth: &config.OAuth{Issuer: is.URL, Resource: "https://mcp.example.com", Audience: "hangar", JWKSFile: file}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, a)
	if code, body, _ := get(t, srv.URL+"/mcp", is.Mint(t, authtest.Claims{Audience: "hangar", Scope: "plugin:x"})); code != 200 || body != "oauth:"+is.URL+"#user x" {
		t.Errorf("jwks_file: %d %q", code, body)
	}
	if is.Fetches.Load() != 0 {
		t.Error("a jwks_file must not be fetched")
	}
	os.WriteFile(file, []byte(`{"keys":[]}`), 0o600)
	if _, err := auth.New(&config.Auth{OAuth: &config.OAuth{Issuer: is.URL, Resource: "https://m.example.com", JWKSFile: file}}, nil); err == nil || !strings.Contains(err.Error(), "no public signing key") {
		t.Errorf("empty JWKS: %v", err)
	}
}

// TestJWKSUnavailable: when the keys cannot be fetched, a token is not
// called invalid: the request fails with 500 and says why.
func TestJWKSUnavailable(t *testing.T) {
	is := authtest.New(t)
	a, err := auth.New(&config.Auth{OAuth: &config.OAuth{Issuer: is.URL, Resource: "https://m.example.com", Audience: "a", JWKSURL: is.URL + "/nope"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, a)
	code, body, _ := get(t, srv.URL+"/mcp", is.Mint(t, authtest.Claims{Audience: "a"}))
	if code != 500 || !strings.Contains(body, "signing keys are unavailable") {
		t.Errorf("%d %q", code, body)
	}
}
