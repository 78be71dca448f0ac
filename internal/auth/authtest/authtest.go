// Package authtest is an OAuth authorization server for tests: a signing
// key, its JWKS served on 127.0.0.1, and tokens minted with it.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer signs tokens and serves its JWKS.
type Issuer struct {
	URL     string // the issuer, also where the JWKS is: URL + "/jwks"
	JWKSURL string
	key     *ecdsa.PrivateKey
	kid     string
	Fetches atomic.Int64 // how many times the JWKS was fetched
}

// New starts an issuer whose JWKS is served on 127.0.0.1 until the test
// ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{key: newKey(t), kid: "k1"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jwks" {
			http.NotFound(w, r)
			return
		}
		is.Fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(is.JWKS())
	}))
	t.Cleanup(srv.Close)
	is.URL, is.JWKSURL = srv.URL, srv.URL+"/jwks"
	return is
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// JWKS is the issuer's key set: its public key.
func (is *Issuer) JWKS() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: string(jose.ES256), Use: "sig"}}}
}

// Claims are what a minted token says.
type Claims struct {
	Issuer   string // default: the issuer's URL
	Subject  string // default: "user"
	Audience string
	Scope    string        // space-separated
	Expiry   time.Duration // from now; default 1h; negative for an expired token
	NoExpiry bool
	// OtherKey signs with a key that is not in the JWKS, under the same kid.
	OtherKey bool
}

// Mint returns a signed JWT.
func (is *Issuer) Mint(t testing.TB, c Claims) string {
	t.Helper()
	key := is.key
	if c.OtherKey {
		key = newKey(t)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader(jose.HeaderKey("kid"), is.kid))
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer == "" {
		c.Issuer = is.URL
	}
	if c.Subject == "" {
		c.Subject = "user"
	}
	if c.Expiry == 0 {
		c.Expiry = time.Hour
	}
	now := time.Now()
	std := jwt.Claims{Issuer: c.Issuer, Subject: c.Subject, Audience: jwt.Audience{c.Audience}, IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute))}
	if !c.NoExpiry {
		std.Expiry = jwt.NewNumericDate(now.Add(c.Expiry))
	}
	tok, err := jwt.Signed(signer).Claims(std).Claims(map[string]any{"scope": c.Scope}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
