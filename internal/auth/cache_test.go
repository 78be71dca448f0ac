package auth

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/auth/authtest"
	"github.com/hangar-mcp/hangar/internal/config"
)

// newFileAuth returns an Authenticator trusting is, through a jwks_file,
// on the clock now.
func newFileAuth(tb testing.TB, is *authtest.Issuer, now func() time.Time) *Authenticator {
	tb.Helper()
	b, _ := json.Marshal(is.JWKS())
	file := filepath.Join(tb.TempDir(), "jwks.json")
	os.WriteFile(file, b, 0o600)
	a, err := New(&config.Auth{OAuth: &config.OAuth{Issuer: is.URL, Resource: "https://m.example.com/mcp", Audience: "a", JWKSFile: file}}, &Options{Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// TestVerifiedJWTsExpire: a remembered JWT is checked again once it has
// expired, and then refused.
func TestVerifiedJWTsExpire(t *testing.T) {
	is := authtest.New(t)
	now := time.Now()
	a := newFileAuth(t, is, func() time.Time { return now })
	tok := is.Mint(t, authtest.Claims{Audience: "a", Scope: "plugin:x", Expiry: time.Hour})
	req := httptest.NewRequest("POST", "/mcp", nil)
	first, err := a.Verify(context.Background(), tok, req)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := a.Verify(context.Background(), tok, req); err != nil || again != first {
		t.Errorf("second verification: %v, remembered %v", err, again == first)
	}
	now = now.Add(2 * time.Hour)
	if _, err := a.Verify(context.Background(), tok, req); err == nil {
		t.Error("an expired token was accepted from the record of verified ones")
	}
	if n := len(a.oauth.verified); n != 0 {
		t.Errorf("%d tokens remembered after expiry", n)
	}
}

// BenchmarkJWT compares checking a JWT's signature and claims with finding
// it among those already verified (go test -bench JWT ./internal/auth).
func BenchmarkJWT(b *testing.B) {
	is := authtest.New(b)
	a := newFileAuth(b, is, time.Now)
	tok := is.Mint(b, authtest.Claims{Audience: "a", Scope: "plugin:x"})
	req := httptest.NewRequest("POST", "/mcp", nil)
	ctx := context.Background()
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, _, err := a.oauth.verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Verify(ctx, tok, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
