// Package auth authenticates the HTTP requests made to Hangar's MCP
// endpoint, and says which plugins each caller may use.
//
// Two kinds of bearer token are accepted, alone or together: static tokens,
// each configured with the plugins it may use, and, in OAuth 2.1
// resource-server mode (as the MCP authorization specification describes),
// JWT access tokens signed by a key of the authorization server's JWKS,
// checked for signature, issuer, audience and expiry. A JWT may use the
// plugins its scopes name ("plugin:NAME", "plugin:*") and those configured
// for every token.
//
// [Authenticator.Middleware] refuses a request without a valid token with
// HTTP 401 and a WWW-Authenticate header (naming the protected-resource
// metadata in OAuth mode), and otherwise puts the go-sdk's
// [auth.TokenInfo] in the request's context: the SDK then binds each
// session to the identity that created it (TokenInfo.UserID), and hands the
// TokenInfo to every MCP handler, where [GrantOf] reads what it may use.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Grant is the set of plugins a caller may use. A nil *Grant allows every
// plugin: it is what a request carries when no authentication is
// configured (stdio, or HTTP on loopback).
type Grant struct {
	all     bool
	plugins map[string]bool
}

// NewGrant returns the grant of the named plugins; config.AllPlugins ("*")
// stands for every plugin.
func NewGrant(plugins ...string) *Grant {
	g := &Grant{plugins: map[string]bool{}}
	for _, p := range plugins {
		if p == config.AllPlugins {
			g.all = true
		}
		g.plugins[p] = true
	}
	return g
}

// Allows reports whether the grant allows the named plugin.
func (g *Grant) Allows(plugin string) bool {
	return g == nil || g.all || g.plugins[plugin]
}

// All reports whether the grant allows every plugin.
func (g *Grant) All() bool { return g == nil || g.all }

// union returns a grant of the plugins of both.
func (g *Grant) union(o *Grant) *Grant {
	u := NewGrant()
	u.all = g.all || o.all
	for p := range g.plugins {
		u.plugins[p] = true
	}
	for p := range o.plugins {
		u.plugins[p] = true
	}
	return u
}

// String lists the plugins of the grant, for logs.
func (g *Grant) String() string {
	if g.All() {
		return config.AllPlugins
	}
	var names []string
	for p := range g.plugins {
		names = append(names, p)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// grantKey is the key of the grant in TokenInfo.Extra.
const grantKey = "hangar.grant"

// GrantOf returns the grant of a request's token: nil (every plugin) when
// the request carries no TokenInfo, as without authentication, and an empty
// grant (no plugin) for a TokenInfo that holds none.
func GrantOf(ti *sdkauth.TokenInfo) *Grant {
	if ti == nil {
		return nil
	}
	if g, ok := ti.Extra[grantKey].(*Grant); ok && g != nil {
		return g
	}
	return NewGrant()
}

// Options configure an Authenticator. A nil *Options means defaults.
type Options struct {
	// Logger receives refused requests (at debug level) and JWKS problems.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Client fetches the JWKS; nil means a client with a 10s timeout.
	Client *http.Client
	// Now is the clock tokens are checked against; nil means time.Now.
	Now func() time.Time
}

// Authenticator checks bearer tokens. It is safe for concurrent use.
type Authenticator struct {
	log    *slog.Logger
	static map[[sha256.Size]byte]*sdkauth.TokenInfo // by the token's SHA-256
	oauth  *jwtVerifier                             // nil without OAuth
	now    func() time.Time

	// verified holds JWTs already checked, by their SHA-256, until they
	// expire: a client sends the same token with every request, and
	// checking its signature costs more than serving many a call.
	mu       sync.Mutex
	verified map[[sha256.Size]byte]*sdkauth.TokenInfo

	metadata    *oauthex.ProtectedResourceMetadata
	metadataURL string // absolute, for WWW-Authenticate
	metadataAt  []string
}

// New returns an Authenticator for cfg. In OAuth mode with a jwks_file, the
// file is read and checked now; a jwks_url is fetched on first use (and
// again when a token names a key it lacks).
func New(cfg *config.Auth, opts *Options) (*Authenticator, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	a := &Authenticator{log: o.Logger, now: o.Now, static: map[[sha256.Size]byte]*sdkauth.TokenInfo{}, verified: map[[sha256.Size]byte]*sdkauth.TokenInfo{}}
	for _, t := range cfg.Tokens {
		b, err := hex.DecodeString(t.SHA256)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("token %s: invalid sha256", t.ID)
		}
		var sum [sha256.Size]byte
		copy(sum[:], b)
		a.static[sum] = &sdkauth.TokenInfo{
			UserID: "token:" + t.ID,
			Extra:  map[string]any{grantKey: NewGrant(t.Plugins...)},
		}
	}
	if cfg.OAuth != nil {
		v, err := newJWTVerifier(cfg.OAuth, o)
		if err != nil {
			return nil, err
		}
		a.oauth = v
		u, err := url.Parse(cfg.OAuth.Resource)
		if err != nil {
			return nil, fmt.Errorf("oauth resource: %w", err)
		}
		root := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: MetadataPath}).String()
		a.metadataURL = root + strings.TrimSuffix(u.Path, "/")
		a.metadataAt = []string{MetadataPath}
		if p := strings.TrimSuffix(u.Path, "/"); p != "" {
			a.metadataAt = append(a.metadataAt, MetadataPath+p)
		}
		a.metadata = &oauthex.ProtectedResourceMetadata{
			Resource:               cfg.OAuth.Resource,
			AuthorizationServers:   cfg.OAuth.AuthorizationServers,
			ScopesSupported:        cfg.OAuth.ScopesSupported,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "Hangar",
		}
	}
	return a, nil
}

// MetadataPath is where OAuth 2.0 protected-resource metadata (RFC 9728) is
// served; also at MetadataPath followed by the path of the resource URL
// (/.well-known/oauth-protected-resource/mcp), where MCP clients look first.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Metadata returns the paths at which to serve the protected-resource
// metadata, and its handler; none without OAuth.
func (a *Authenticator) Metadata() ([]string, http.Handler) {
	if a.metadata == nil {
		return nil, nil
	}
	return a.metadataAt, sdkauth.ProtectedResourceMetadataHandler(a.metadata)
}

// Middleware refuses requests without a valid bearer token (HTTP 401), and
// passes the others on with the token's TokenInfo in their context.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	require := sdkauth.RequireBearerToken(a.Verify, &sdkauth.RequireBearerTokenOptions{
		ResourceMetadataURL: a.metadataURL,
		// Static tokens do not expire; the JWT verifier requires exp.
		AllowMissingExpiration: true,
		ClockSkew:              leeway,
	})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.ServeHTTP(&challenge{ResponseWriter: w}, r)
	})
}

// Verify is the go-sdk TokenVerifier: it checks a bearer token and returns
// what it may do. Invalid tokens get an error wrapping
// sdkauth.ErrInvalidToken, which says why.
func (a *Authenticator) Verify(ctx context.Context, token string, r *http.Request) (*sdkauth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	if ti, ok := a.static[sum]; ok {
		return ti, nil
	}
	if a.oauth != nil && strings.Count(token, ".") == 2 {
		if ti := a.cached(sum); ti != nil {
			return ti, nil
		}
		ti, err := a.oauth.verify(ctx, token)
		if err != nil {
			a.log.Debug("bearer token refused", "remote", r.RemoteAddr, "error", err)
			return nil, err
		}
		a.remember(sum, ti)
		return ti, nil
	}
	a.log.Debug("bearer token refused", "remote", r.RemoteAddr, "error", "unknown token")
	return nil, fmt.Errorf("%w: unknown token", sdkauth.ErrInvalidToken)
}

// maxVerified bounds the JWTs remembered as verified.
const maxVerified = 4096

// cached returns the TokenInfo of a JWT verified before that has not
// expired, or nil.
func (a *Authenticator) cached(sum [sha256.Size]byte) *sdkauth.TokenInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	ti := a.verified[sum]
	if ti == nil {
		return nil
	}
	if !a.now().Before(ti.Expiration.Add(leeway)) {
		delete(a.verified, sum)
		return nil
	}
	return ti
}

// remember records a verified JWT. When the record is full it starts
// afresh, which costs each client one more verification.
func (a *Authenticator) remember(sum [sha256.Size]byte, ti *sdkauth.TokenInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.verified) >= maxVerified {
		clear(a.verified)
	}
	a.verified[sum] = ti
}

// challenge adds the WWW-Authenticate header a 401 must carry (RFC 6750)
// when the SDK's middleware has not set one (no OAuth metadata to name).
type challenge struct {
	http.ResponseWriter
}

func (c *challenge) WriteHeader(code int) {
	if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", `Bearer realm="hangar"`)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challenge) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// errUnavailable reports that the signing keys could not be had: the
// request fails with HTTP 500, not 401, since the token may be good.
var errUnavailable = errors.New("the authorization server's signing keys are unavailable")
