// Package authtest is an OAuth authorization server for tests: signing
// keys, their JWKS served on 127.0.0.1, and tokens minted with them.
//
// New and Mint are for Go tests; Start and Sign do the same outside a test
// (the attack suite).
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer signs tokens and serves its JWKS.
type Issuer struct {
	URL     string // the issuer, also where the JWKS is: URL + "/jwks"
	JWKSURL string
	Fetches atomic.Int64 // how many times the JWKS was fetched

	srv *httptest.Server

	mu   sync.Mutex
	keys []key // the JWKS; the last one signs
	n    int   // keys made, for their kids
}

type key struct {
	priv *ecdsa.PrivateKey
	kid  string
}

// New starts an issuer whose JWKS is served on 127.0.0.1 until the test
// ends. Its first key's kid is "k1".
func New(t testing.TB) *Issuer {
	t.Helper()
	is := Start()
	t.Cleanup(is.Close)
	return is
}

// Start starts an issuer whose JWKS is served on 127.0.0.1 until Close.
func Start() *Issuer {
	is := &Issuer{}
	is.Rotate()
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jwks" {
			http.NotFound(w, r)
			return
		}
		is.Fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(is.JWKS())
	}))
	is.URL, is.JWKSURL = is.srv.URL, is.srv.URL+"/jwks"
	return is
}

// Close stops serving the JWKS.
func (is *Issuer) Close() { is.srv.Close() }

func newKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return k
}

// Rotate replaces the issuer's keys with a new one, under a new kid ("k2",
// "k3", ...), which it returns: tokens signed before no longer verify
// against the JWKS served from now on.
func (is *Issuer) Rotate() string {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.n++
	k := key{priv: newKey(), kid: fmt.Sprintf("k%d", is.n)}
	is.keys = []key{k}
	return k.kid
}

// JWKS is the issuer's key set: its public key.
func (is *Issuer) JWKS() jose.JSONWebKeySet {
	is.mu.Lock()
	defer is.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range is.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: string(jose.ES256), Use: "sig"})
	}
	return set
}

// Claims are what a minted token says.
type Claims struct {
	Issuer    string // default: the issuer's URL
	Subject   string // default: "user"
	NoSubject bool   // no sub claim
	Audience  string
	Scope     string        // space-separated
	Expiry    time.Duration // from now; default 1h; negative for an expired token
	NoExpiry  bool
	// Other claims, added last: they replace those above (a nil value
	// removes the claim), so that a test can give any claim any JSON value.
	Other map[string]any
	// OtherKey signs with a key that is not in the JWKS, under the same kid.
	OtherKey bool
}

// Mint returns a signed JWT.
func (is *Issuer) Mint(t testing.TB, c Claims) string {
	t.Helper()
	tok, err := is.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Sign returns a signed JWT.
func (is *Issuer) Sign(c Claims) (string, error) {
	is.mu.Lock()
	k := is.keys[len(is.keys)-1]
	is.mu.Unlock()
	if c.OtherKey {
		k.priv = newKey()
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.priv},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader(jose.HeaderKey("kid"), k.kid))
	if err != nil {
		return "", err
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
	claims := map[string]any{"iss": c.Issuer, "sub": c.Subject, "aud": c.Audience, "iat": now.Add(-time.Minute).Unix(), "scope": c.Scope}
	if c.NoSubject {
		delete(claims, "sub")
	}
	if !c.NoExpiry {
		claims["exp"] = now.Add(c.Expiry).Unix()
	}
	for name, v := range c.Other {
		if v == nil {
			delete(claims, name)
		} else {
			claims[name] = v
		}
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
