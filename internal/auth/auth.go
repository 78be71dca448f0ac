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
	// Now is the clock tokens are checked against, and the JWKS's age;
	// nil means time.Now.
	Now func() time.Time
}

// Authenticator checks bearer tokens. It is safe for concurrent use.
type Authenticator struct {
	log    *slog.Logger
	static map[[sha256.Size]byte]*sdkauth.TokenInfo // by the token's SHA-256
	oauth  *jwtVerifier                             // nil without OAuth

	mu     sync.Mutex
	warned map[string]time.Time // when a claim error was last a warning, by claim

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
	a := &Authenticator{log: o.Logger, static: map[[sha256.Size]byte]*sdkauth.TokenInfo{}, warned: map[string]time.Time{}}
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
	verify := func(ctx context.Context, token string, r *http.Request) (*sdkauth.TokenInfo, error) {
		ti, err := a.Verify(ctx, token, r)
		if c, ok := ctx.Value(challengeKey{}).(*challenge); ok {
			c.err = err
		}
		return ti, err
	}
	require := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{
		ResourceMetadataURL: a.metadataURL,
		// Static tokens do not expire; the JWT verifier requires exp.
		AllowMissingExpiration: true,
		ClockSkew:              leeway,
	})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &challenge{ResponseWriter: w}
		require.ServeHTTP(c, r.WithContext(context.WithValue(r.Context(), challengeKey{}, c)))
	})
}

// Verify is the go-sdk TokenVerifier: it checks a bearer token and returns
// what it may do. Invalid tokens get an error wrapping
// sdkauth.ErrInvalidToken, which says why; a JWT refused for a claim, a
// *ClaimError.
func (a *Authenticator) Verify(ctx context.Context, token string, r *http.Request) (*sdkauth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	if ti, ok := a.static[sum]; ok {
		return ti, nil
	}
	if a.oauth != nil && strings.Count(token, ".") == 2 {
		ti, err := a.oauth.check(ctx, token, sum)
		if err != nil {
			a.refused(r, err)
			return nil, err
		}
		return ti, nil
	}
	err := fmt.Errorf("%w: unknown token", sdkauth.ErrInvalidToken)
	a.refused(r, err)
	return nil, err
}

// refused logs a refused token at debug level: anyone can send bad tokens.
// A JWT whose signature holds but a claim is missing or of the wrong type
// says that the authorization server writes tokens Hangar cannot use: that
// is a warning, once a minute for each claim.
func (a *Authenticator) refused(r *http.Request, err error) {
	ce, ok := errors.AsType[*ClaimError](err)
	if !ok {
		a.log.Debug("bearer token refused", "remote", r.RemoteAddr, "error", err)
		return
	}
	level := slog.LevelDebug
	if ce.malformed {
		a.mu.Lock()
		if now := time.Now(); now.Sub(a.warned[ce.Claim]) >= time.Minute {
			a.warned[ce.Claim] = now
			level = slog.LevelWarn
		}
		a.mu.Unlock()
	}
	a.log.Log(r.Context(), level, "bearer token refused for a claim", "remote", r.RemoteAddr, "claim", ce.Claim, "problem", ce.Problem)
}

// challenge completes the WWW-Authenticate header a 401 must carry (RFC
// 6750): it sets one when the SDK's middleware has not (no OAuth metadata
// to name), and adds the error and its description when a token was
// refused, so that a client can tell why without reading the body.
type challenge struct {
	http.ResponseWriter
	err error // why the request's token was refused, if it was
}

// challengeKey is the key of a request's *challenge in its context.
type challengeKey struct{}

func (c *challenge) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		h := c.Header()
		v := h.Get("WWW-Authenticate")
		if v == "" {
			v = `Bearer realm="hangar"`
		}
		if c.err != nil && errors.Is(c.err, sdkauth.ErrInvalidToken) {
			v += `, error="invalid_token", error_description="` + description(c.err) + `"`
		}
		h.Set("WWW-Authenticate", v)
	}
	c.ResponseWriter.WriteHeader(code)
}

// maxDescription bounds the error_description of a challenge.
const maxDescription = 300

// description is the error_description of a challenge for err: its message
// without the "invalid token: " that error="invalid_token" says already,
// in the characters RFC 6750 allows (printable ASCII except double quotes,
// which become apostrophes, and backslashes, which become question marks,
// as do the others), cut to maxDescription bytes.
func description(err error) string {
	msg := strings.TrimPrefix(err.Error(), sdkauth.ErrInvalidToken.Error()+": ")
	b := make([]byte, 0, len(msg))
	for _, r := range msg {
		switch {
		case r == '"':
			b = append(b, '\'')
		case r == '\\' || r < 0x20 || r > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, byte(r))
		}
	}
	if len(b) > maxDescription {
		b = append(b[:maxDescription-3], "..."...)
	}
	return string(b)
}

func (c *challenge) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// errUnavailable reports that the signing keys could not be had: the
// request fails with HTTP 500, not 401, since the token may be good.
var errUnavailable = errors.New("the authorization server's signing keys are unavailable")
