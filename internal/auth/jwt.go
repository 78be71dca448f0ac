package auth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
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
	// maxVerified bounds the JWTs remembered as verified.
	maxVerified = 4096
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
// the keys of a JWKS, and remembers those it accepted.
type jwtVerifier struct {
	issuer, audience string
	base             *Grant // plugins every valid token may use
	now              func() time.Time
	client           *http.Client
	url              string // of the JWKS; "" when read from a file
	log              *slog.Logger

	mu       sync.Mutex
	keys     keySet
	gen      uint64        // counts the changes of keys
	fetched  time.Time     // when keys were fetched (or last tried)
	fetchErr error         // of the last fetch
	fetching chan struct{} // while a fetch runs; closed when it ends
	// verified holds JWTs already checked, by their SHA-256: a client
	// sends the same token with every request, and checking its signature
	// costs more than serving many a call.
	verified map[[sha256.Size]byte]*verifiedToken
}

// verifiedToken is a JWT remembered as verified.
type verifiedToken struct {
	ti  *sdkauth.TokenInfo
	key string // the thumbprint of the key that verified it
	// until is when it must be checked again: at its expiry, or when the
	// keys are due to be fetched again, whichever comes first.
	until time.Time
}

// signingKey is a key of the JWKS, with its RFC 7638 thumbprint, which
// names it whatever its kid.
type signingKey struct {
	jose.JSONWebKey
	thumbprint string
}

type keySet []signingKey

// withKID returns the keys that may have signed a token naming kid: all of
// them when kid is empty.
func (s keySet) withKID(kid string) keySet {
	if kid == "" {
		return s
	}
	var out keySet
	for _, k := range s {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

func (s keySet) has(thumbprint string) bool {
	for _, k := range s {
		if k.thumbprint == thumbprint {
			return true
		}
	}
	return false
}

func newJWTVerifier(c *config.OAuth, o Options) (*jwtVerifier, error) {
	v := &jwtVerifier{
		issuer: c.Issuer, audience: c.Audience, base: NewGrant(c.Plugins...), now: o.Now, url: c.JWKSURL, log: o.Logger,
		client:   redirectsChecked(o.Client),
		verified: map[[sha256.Size]byte]*verifiedToken{},
	}
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
func parseJWKS(b []byte) (keySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var keep keySet
	for _, k := range set.Keys {
		if !k.IsPublic() || k.Use != "" && k.Use != "sig" {
			continue
		}
		tp, err := k.Thumbprint(crypto.SHA256)
		if err != nil {
			continue
		}
		keep = append(keep, signingKey{JSONWebKey: k, thumbprint: string(tp)})
	}
	if len(keep) == 0 {
		return nil, errors.New("the JWKS holds no public signing key")
	}
	return keep, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sdkauth.ErrInvalidToken, fmt.Sprintf(format, args...))
}

// check returns the TokenInfo of a JWT, whose SHA-256 is sum: the one
// remembered if it was verified before and is not due to be checked again,
// else that of a new verification.
func (v *jwtVerifier) check(ctx context.Context, raw string, sum [sha256.Size]byte) (*sdkauth.TokenInfo, error) {
	v.mu.Lock()
	if e := v.verified[sum]; e != nil {
		if v.now().Before(e.until) {
			v.mu.Unlock()
			return e.ti, nil
		}
		delete(v.verified, sum)
	}
	v.mu.Unlock()
	ti, key, gen, until, err := v.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	// Keys that changed meanwhile may have dropped this one's: it is
	// verified again next time.
	if gen == v.gen {
		if len(v.verified) >= maxVerified {
			clear(v.verified) // costs each client one more verification
		}
		v.verified[sum] = &verifiedToken{ti: ti, key: key, until: until}
	}
	return ti, nil
}

// verify checks a JWT and returns its TokenInfo, the thumbprint of the key
// that signed it, the generation of the key set that held the key, and
// until when the result may be remembered.
func (v *jwtVerifier) verify(ctx context.Context, raw string) (ti *sdkauth.TokenInfo, key string, gen uint64, until time.Time, err error) {
	jws, err := jose.ParseSignedCompact(raw, signatureAlgorithms)
	if err != nil {
		return nil, "", 0, time.Time{}, invalid("malformed JWT or unsupported algorithm: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, "", 0, time.Time{}, invalid("a JWT must have one signature")
	}
	h := jws.Signatures[0].Header
	keys, gen, until, err := v.keysFor(ctx, h.KeyID)
	if err != nil {
		return nil, "", 0, time.Time{}, err
	}
	var payload []byte
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if p, err := jws.Verify(k.Key); err == nil {
			payload, key = p, k.thumbprint
			break
		}
	}
	if payload == nil {
		return nil, "", 0, time.Time{}, invalid("bad signature: no key of the JWKS verifies it")
	}
	// The signature holds: whatever is wrong now is a claim.
	c, err := v.claims(payload)
	if err != nil {
		return nil, "", 0, time.Time{}, err
	}
	grant := v.base
	for _, s := range c.scopes {
		if p, ok := strings.CutPrefix(s, PluginScope); ok && p != "" {
			grant = grant.union(NewGrant(p))
		}
	}
	ti = &sdkauth.TokenInfo{
		Scopes:     c.scopes,
		Expiration: c.exp,
		// The issuer is the configured one: the subject names the user
		// (or, for a client's own token, the client) in its namespace.
		UserID: "oauth:" + c.iss + "#" + c.sub,
		Extra:  map[string]any{grantKey: grant},
	}
	if e := c.exp.Add(leeway); until.IsZero() || e.Before(until) {
		until = e
	}
	return ti, key, gen, until, nil
}

// keysFor returns the keys that may have signed a token naming kid (all
// keys when kid is empty), fetching the JWKS when it is stale or lacks
// kid; the generation of the key set; and when the keys are due to be
// fetched again (zero for a jwks_file).
func (v *jwtVerifier) keysFor(ctx context.Context, kid string) (keySet, uint64, time.Time, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	lacks := v.keys == nil || len(v.keys.withKID(kid)) == 0
	if v.url != "" && (lacks || now.Sub(v.fetched) > jwksTTL) {
		switch {
		case v.fetching != nil && lacks:
			// What this token needs may be coming: wait for it.
			done := v.fetching
			v.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
			}
			v.mu.Lock()
		case v.fetching != nil:
			// Stale keys serve until the fetch under way ends.
		case v.fetched.IsZero() || now.Sub(v.fetched) >= jwksRetry:
			v.refresh(ctx)
		}
	}
	if v.keys == nil {
		if v.fetchErr != nil {
			return nil, 0, time.Time{}, fmt.Errorf("%w: %v", errUnavailable, v.fetchErr)
		}
		return nil, 0, time.Time{}, errUnavailable
	}
	keys := v.keys.withKID(kid)
	if len(keys) == 0 {
		return nil, 0, time.Time{}, invalid("bad signature: no key %q in the JWKS", kid)
	}
	var until time.Time
	if v.url != "" {
		until = v.fetched.Add(jwksTTL)
	}
	return keys, v.gen, until, nil
}

// refresh fetches the JWKS. It is called with v.mu held, which it releases
// during the fetch.
func (v *jwtVerifier) refresh(ctx context.Context) {
	done := make(chan struct{})
	v.fetching = done
	v.fetched = v.now()
	v.mu.Unlock()
	keys, err := v.fetch(ctx)
	v.mu.Lock()
	v.fetching = nil
	close(done)
	v.fetchErr = err
	if err != nil {
		v.log.Warn("the JWKS could not be fetched", "url", v.url, "error", err, "keys", len(v.keys))
		return
	}
	v.setKeys(keys)
}

// setKeys replaces the key set, and forgets the tokens verified by a key it
// no longer holds. It is called with v.mu held.
func (v *jwtVerifier) setKeys(keys keySet) {
	added, removed := 0, 0
	for _, k := range keys {
		if !v.keys.has(k.thumbprint) {
			added++
		}
	}
	for _, k := range v.keys {
		if !keys.has(k.thumbprint) {
			removed++
		}
	}
	first := v.keys == nil
	v.keys = keys
	if added == 0 && removed == 0 {
		return
	}
	v.gen++
	dropped := 0
	if removed > 0 {
		for sum, e := range v.verified {
			if !keys.has(e.key) {
				delete(v.verified, sum)
				dropped++
			}
		}
	}
	if !first {
		v.log.Info("the JWKS changed", "url", v.url, "keys", len(keys), "added", added, "removed", removed, "tokens_dropped", dropped)
	}
}

// fetch downloads and parses the JWKS.
func (v *jwtVerifier) fetch(ctx context.Context) (keySet, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		if ir, ok := errors.AsType[*insecureRedirect](err); ok {
			err = ir // without the url.Error around it: it names both URLs
		}
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

// insecureRedirect is a redirect of the JWKS URL to a URL that could not
// be configured as the JWKS URL.
type insecureRedirect struct {
	from, to, problem string
}

func (e *insecureRedirect) Error() string {
	return fmt.Sprintf("%s redirected to %s: %s", e.from, e.to, e.problem)
}

// redirectsChecked returns a copy of c whose redirects are held to the
// rule of the configured JWKS URL (checkServiceURL in internal/config):
// https, or http to a loopback host, without credentials or fragment.
// Otherwise a JWKS served over https could send Hangar to fetch its keys
// over plain http, where anyone on the path could replace them.
func redirectsChecked(c *http.Client) *http.Client {
	cc := *c
	next := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if problem := serviceURLProblem(req.URL); problem != "" {
			return &insecureRedirect{from: via[len(via)-1].URL.Redacted(), to: req.URL.Redacted(), problem: problem}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}

// serviceURLProblem is what is wrong with u as the URL of an authorization
// server or its JWKS, or "": the rule config applies to jwks_url.
func serviceURLProblem(u *url.URL) string {
	switch {
	case u.Host == "" || u.Opaque != "":
		return "want an absolute URL such as https://auth.example.com"
	case u.User != nil:
		return "a URL here may not hold credentials"
	case u.Fragment != "":
		return "a URL here may not have a fragment"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http":
		if config.IsLoopback(net.JoinHostPort(u.Hostname(), "0")) {
			return ""
		}
		return "plain http is allowed only to a loopback host; use https"
	}
	return "the scheme must be https"
}
