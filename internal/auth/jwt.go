package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Bounds on the JWKS and on tokens.
const (
	// leeway is the clock skew tolerated on exp, nbf and iat.
	leeway = 30 * time.Second
	// jwksTTL is how long fetched keys are used before they are fetched
	// again.
	jwksTTL = 5 * time.Minute
	// jwksRetry is the least time between two fetches, so that tokens
	// naming unknown keys cannot make Hangar hammer the server.
	jwksRetry = 10 * time.Second
	// maxJWKS bounds a JWKS document.
	maxJWKS = 1 << 20
	// PluginScope, followed by a plugin's name (or "*"), is the scope that
	// lets a JWT use that plugin.
	PluginScope = "plugin:"
)

// signatureAlgorithms are those accepted: asymmetric only, so that a key
// published in a JWKS can never be used as a shared secret.
var signatureAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// jwtVerifier checks JWT access tokens against an issuer, an audience and
// the keys of a JWKS.
type jwtVerifier struct {
	issuer, audience string
	base             *Grant // plugins every valid token may use
	now              func() time.Time
	client           *http.Client
	url              string // of the JWKS; "" when read from a file

	mu      sync.Mutex
	keys    *jose.JSONWebKeySet
	fetched time.Time // when keys were fetched (or last tried)
}

func newJWTVerifier(c *config.OAuth, o Options) (*jwtVerifier, error) {
	v := &jwtVerifier{issuer: c.Issuer, audience: c.Audience, base: NewGrant(c.Plugins...), now: o.Now, client: o.Client, url: c.JWKSURL}
	if c.JWKSFile != "" {
		b, err := os.ReadFile(c.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("oauth jwks_file: %w", err)
		}
		keys, err := parseJWKS(b)
		if err != nil {
			return nil, fmt.Errorf("oauth jwks_file %s: %w", c.JWKSFile, err)
		}
		v.keys = keys
	}
	return v, nil
}

// parseJWKS reads a JWKS, keeping the public signing keys.
func parseJWKS(b []byte) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var keep []jose.JSONWebKey
	for _, k := range set.Keys {
		if k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			keep = append(keep, k)
		}
	}
	if len(keep) == 0 {
		return nil, errors.New("the JWKS holds no public signing key")
	}
	return &jose.JSONWebKeySet{Keys: keep}, nil
}

// claims are the claims read besides the registered ones.
type claims struct {
	Scope string   `json:"scope"` // space-separated (RFC 8693, RFC 9068)
	Scp   []string `json:"scp"`   // a list, as some servers write it
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sdkauth.ErrInvalidToken, fmt.Sprintf(format, args...))
}

// verify checks a JWT and returns its TokenInfo.
func (v *jwtVerifier) verify(ctx context.Context, raw string) (*sdkauth.TokenInfo, error) {
	tok, err := jwt.ParseSigned(raw, signatureAlgorithms)
	if err != nil {
		return nil, invalid("malformed JWT or unsupported algorithm: %v", err)
	}
	if len(tok.Headers) != 1 {
		return nil, invalid("a JWT must have one signature")
	}
	h := tok.Headers[0]
	keys, err := v.keysFor(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	var (
		std   jwt.Claims
		extra claims
		ok    bool
	)
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if tok.Claims(k.Key, &std, &extra) == nil {
			ok = true
			break
		}
	}
	if !ok {
		return nil, invalid("bad signature: no key of the JWKS verifies it")
	}
	if std.Expiry == nil {
		return nil, invalid("the token has no expiry (exp)")
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: jwt.Audience{v.audience}, Time: v.now()}, leeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return nil, invalid("expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, invalid("wrong issuer %q", std.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("wrong audience %q; want %q", []string(std.Audience), v.audience)
	case err != nil:
		return nil, invalid("%v", err)
	}
	scopes := append(strings.Fields(extra.Scope), extra.Scp...)
	grant := v.base
	for _, s := range scopes {
		if p, ok := strings.CutPrefix(s, PluginScope); ok && p != "" {
			grant = grant.union(NewGrant(p))
		}
	}
	return &sdkauth.TokenInfo{
		Scopes:     scopes,
		Expiration: std.Expiry.Time(),
		UserID:     "oauth:" + std.Issuer + "#" + std.Subject,
		Extra:      map[string]any{grantKey: grant},
	}, nil
}

// keysFor returns the keys that may have signed a token naming kid (all
// keys when kid is empty), fetching the JWKS when it is stale or lacks kid.
func (v *jwtVerifier) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	want := v.url != "" && (v.keys == nil || now.Sub(v.fetched) > jwksTTL || kid != "" && len(v.keys.Key(kid)) == 0)
	if want && (v.fetched.IsZero() || now.Sub(v.fetched) >= jwksRetry) {
		v.fetched = now
		keys, err := v.fetch(ctx)
		if err != nil && v.keys == nil {
			return nil, fmt.Errorf("%w: %v", errUnavailable, err)
		}
		if err == nil {
			v.keys = keys
		}
	}
	if v.keys == nil {
		return nil, errUnavailable
	}
	if kid == "" {
		return v.keys.Keys, nil
	}
	keys := v.keys.Key(kid)
	if len(keys) == 0 {
		return nil, invalid("bad signature: no key %q in the JWKS", kid)
	}
	return keys, nil
}

// fetch downloads and parses the JWKS.
func (v *jwtVerifier) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", v.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: %s", v.url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", v.url, err)
	}
	if len(b) > maxJWKS {
		return nil, fmt.Errorf("fetching %s: more than %d bytes", v.url, maxJWKS)
	}
	keys, err := parseJWKS(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.url, err)
	}
	return keys, nil
}
