package main

// Issue 15, OAuth: tokens without a subject, a key that leaves the JWKS, a
// JWKS redirected to plain http, scope claims in their other form. Each
// attack serves hangar in OAuth mode trusting an authorization server of
// its own (internal/auth/authtest) on 127.0.0.1.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/hangar-mcp/hangar/internal/auth/authtest"
)

func init() {
	register(
		&attack{
			id: "15.8", name: "oauth-no-sub",
			attempt: "Two clients present tokens without sub (client_id a and b), which had one identity and so could use, read and delete each other's sessions; then bob posts to, listens on and deletes alice's session",
			run:     oauthNoSub,
		},
		&attack{
			id: "15.11", name: "oauth-key-rotation",
			attempt: "A token is used (and so remembered), then its signing key is removed from the JWKS and a token of the new key is used; the old token is tried again, on a new session and on its own",
			run:     oauthKeyRotation,
		},
		&attack{
			id: "15.12", name: "oauth-jwks-redirect",
			attempt: "The JWKS URL (http on loopback) redirects to plain http on another host (http://0.0.0.0:PORT, which reaches this machine), where the keys are served",
			run:     oauthJWKSRedirect,
		},
		&attack{
			id: "15.13", name: "oauth-scope-claims",
			attempt: "Tokens with scp as a string and scope as a list (both were refused as \"bad signature\"), and with scp, scope, exp, sub and aud of the wrong JSON type",
			run:     oauthScopeClaims,
		},
	)
}

// audience is the aud of the attacks' tokens.
const audience = "hangar-attack"

// issuer starts an authorization server for the attack.
func (a *A) issuer() *authtest.Issuer {
	is := authtest.Start()
	a.Cleanup(is.Close)
	return is
}

// mint signs a token of is for hangar's audience.
func (a *A) mint(is *authtest.Issuer, c authtest.Claims) string {
	c.Audience = audience
	tok, err := is.Sign(c)
	if err != nil {
		a.Fatalf("signing a token: %v", err)
	}
	return tok
}

// serveOAuth starts hangar serving the flood and hello plugins to the
// tokens of is, its keys fetched from jwksURL.
func (a *A) serveOAuth(is *authtest.Issuer, jwksURL string) *proc {
	return a.serve(nil, "--config", a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:0
  auth:
    oauth:
      issuer: %s
      resource: http://127.0.0.1/mcp
      audience: %s
      jwks_url: %s
plugins:
  - {name: flood, path: %s}
  - {name: hello, path: %s}
`, is.URL, audience, jwksURL, a.env.flood, a.env.hello)))
}

// bearer sends every request with a bearer token.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// rawWith is a raw client presenting token.
func (a *A) rawWith(url, token string) *raw {
	c := a.raw(url)
	c.hc.Transport = bearer{token, c.tr}
	return c
}

// refusal is what hangar answered a request it refused.
type refusal struct {
	code        int
	body        string
	description string // the error_description of WWW-Authenticate
	sid         string // the session opened, if any
}

func (r refusal) String() string {
	if r.description != "" {
		return fmt.Sprintf("HTTP %d, error_description=%q", r.code, r.description)
	}
	first, _, _ := strings.Cut(r.body, "\n")
	return fmt.Sprintf("HTTP %d: %s", r.code, firstN(first, 300))
}

// try posts initialize with token and returns the answer's status, body
// and challenge.
func (a *A) try(url, token string) refusal {
	c := a.rawWith(url, token)
	resp, err := c.post(a.ctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "attacker", "version": "1"},
	}, false)
	if err != nil {
		a.Fatalf("initialize: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	r := refusal{code: resp.StatusCode, body: strings.TrimSpace(string(b)), sid: resp.Header.Get("Mcp-Session-Id")}
	if _, d, ok := strings.Cut(resp.Header.Get("WWW-Authenticate"), `error_description="`); ok {
		r.description, _, _ = strings.Cut(d, `"`)
	}
	return r
}

// tools lists the tools a client sees.
func (a *A) tools(c *raw) []string {
	answer, _, err := c.call(a.ctx, "tools/list", nil)
	if err != nil || answer["error"] != nil {
		a.Fatalf("tools/list: %v %v", answer, err)
	}
	res, _ := answer["result"].(map[string]any)
	list, _ := res["tools"].([]any)
	var names []string
	for _, t := range list {
		if m, ok := t.(map[string]any); ok {
			names = append(names, fmt.Sprint(m["name"]))
		}
	}
	return names
}

// logged waits a little for a line of the log holding s (stderr comes
// through a pipe), and reports whether it came.
func (p *proc) logged(s string) bool {
	for deadline := time.Now().Add(5 * time.Second); p.count(s) == 0; p.a.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// status sends method (with the session of sid) and returns the HTTP
// status of the answer.
func (a *A) status(c *raw, method, sid string) int {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	}
	req, _ := http.NewRequestWithContext(a.ctx, method, c.url, body)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	defer cancel()
	resp, err := c.hc.Do(req.WithContext(ctx))
	if err != nil {
		a.Fatalf("%s: %v", method, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func oauthNoSub(a *A) {
	is := a.issuer()
	p := a.serveOAuth(is, is.JWKSURL)
	// Tokens without a subject: before the fix, both were the identity
	// "oauth:ISSUER#", and each could use the other's session.
	var sessions []string
	var tokens []string
	for _, client := range []string{"a", "b"} {
		tok := a.mint(is, authtest.Claims{NoSubject: true, Scope: "plugin:*", Other: map[string]any{"client_id": client}})
		r := a.try(p.url, tok)
		a.Figure("token without sub (client_id "+client+")", "%v", r)
		a.Check(r.code == http.StatusUnauthorized && strings.HasPrefix(r.description, "claim 'sub': missing"),
			"a token without sub (client_id %s): HTTP %d", client, r.code)
		sessions, tokens = append(sessions, r.sid), append(tokens, tok)
	}
	if sessions[0] != "" {
		// The defect: client b is served on client a's session.
		b := a.rawWith(p.url, tokens[1])
		post, del := a.status(b, http.MethodPost, sessions[0]), a.status(b, http.MethodDelete, sessions[0])
		a.Figure("client b on client a's session", "POST %d, DELETE %d", post, del)
	}
	a.Check(p.logged(`claim=sub`), "no log line names the claim sub:\n%s", tail(p.log.String(), 10))

	// Two subjects: neither reaches the other's session.
	alice := a.rawWith(p.url, a.mint(is, authtest.Claims{Subject: "alice", Scope: "plugin:*"}))
	alice.mustInitialize(a)
	bob := a.rawWith(p.url, a.mint(is, authtest.Claims{Subject: "bob", Scope: "plugin:*"}))
	post, get, del := a.status(bob, http.MethodPost, alice.sid), a.status(bob, http.MethodGet, alice.sid), a.status(bob, http.MethodDelete, alice.sid)
	a.Figure("bob on alice's session", "POST %d, GET %d, DELETE %d", post, get, del)
	a.Check(post == http.StatusForbidden && get == http.StatusForbidden && del == http.StatusForbidden,
		"bob on alice's session: POST %d, GET %d, DELETE %d, want 403", post, get, del)
	n := len(a.tools(alice))
	a.Figure("alice's session afterwards", "%d tools listed", n)
	a.Check(n > 0, "alice's session lists no tool")
	a.Result("tokens without sub refused with 401 naming the claim; another subject got 403 on a session")
}

func oauthKeyRotation(a *A) {
	is := a.issuer()
	p := a.serveOAuth(is, is.JWKSURL)
	old := a.mint(is, authtest.Claims{Subject: "alice", Scope: "plugin:*", Expiry: time.Hour})
	alice := a.rawWith(p.url, old)
	alice.mustInitialize(a)
	fetched := time.Now()
	if n := len(a.tools(alice)); n == 0 {
		a.Fatalf("alice lists no tool")
	}
	is.Rotate()
	rotated := time.Now()
	// Hangar fetches the keys at most every 10 s, and learns of the new
	// key when a token names it.
	a.Sleep(time.Until(fetched.Add(11 * time.Second)))
	fresh := a.rawWith(p.url, a.mint(is, authtest.Claims{Subject: "bob", Scope: "plugin:*"}))
	if code, body, err := fresh.initialize(a.ctx); err != nil || code != http.StatusOK {
		a.Fatalf("a token of the new key: %d %s %v", code, body, err)
	}
	r := a.try(p.url, old)
	a.Figure("the old token on a new session", "%v", r)
	a.Check(r.code == http.StatusUnauthorized && strings.Contains(r.body, `no key "k1" in the JWKS`), "the old token opened a session: %v", r)
	onSession := a.status(alice, http.MethodPost, alice.sid)
	a.Figure("the old token on its own session", "HTTP %d", onSession)
	a.Check(onSession == http.StatusUnauthorized, "the old token was served on its session: HTTP %d", onSession)
	a.Figure("from the rotation to the refusal", "%v (the JWKS is fetched at most every 10 s)", since(rotated))
	a.Figure("JWKS fetches", "%d", is.Fetches.Load())
	a.Check(p.logged("the JWKS changed") && p.count("removed=1") == 1, "the change of keys is not logged:\n%s", tail(p.log.String(), 10))
	a.Result("the old token was refused once hangar had fetched the new key set")
}

func oauthJWKSRedirect(a *A) {
	is := a.issuer()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(is.URL, "http://"))
	target := "http://0.0.0.0:" + port + "/jwks"
	redirector := httptest.NewServer(http.RedirectHandler(target, http.StatusFound))
	a.Cleanup(redirector.Close)
	// The attack's point: 0.0.0.0 reaches the JWKS, as a plain-http host
	// elsewhere would reach an attacker's keys.
	if resp, err := http.Get(target); err != nil || resp.StatusCode != 200 {
		a.Fatalf("the redirect's target cannot be reached: %v", err)
	} else {
		resp.Body.Close()
	}
	before := is.Fetches.Load()

	p := a.serveOAuth(is, redirector.URL+"/jwks")
	r := a.try(p.url, a.mint(is, authtest.Claims{Subject: "alice", Scope: "plugin:*"}))
	a.Figure("a token, keys behind the redirect", "%v", r)
	a.Check(r.code == http.StatusInternalServerError && strings.Contains(r.body, "redirected to "+target+": plain http is allowed only to a loopback host"),
		"a token was checked against keys fetched over the redirect: %v", r)
	followed := is.Fetches.Load() - before
	a.Figure("requests that reached the redirect's target", "%d", followed)
	a.Check(followed == 0, "hangar followed the redirect %d times", followed)
	a.Check(p.logged("the JWKS could not be fetched"), "the refused redirect is not logged:\n%s", tail(p.log.String(), 10))

	// The same rule as the configured URL: http on loopback is followed.
	loopback := httptest.NewServer(http.RedirectHandler(is.JWKSURL, http.StatusFound))
	a.Cleanup(loopback.Close)
	q := a.serveOAuth(is, loopback.URL+"/jwks")
	ok := a.try(q.url, a.mint(is, authtest.Claims{Subject: "alice", Scope: "plugin:*"}))
	a.Figure("a redirect to http on loopback", "HTTP %d", ok.code)
	a.Check(ok.code == http.StatusOK, "a redirect to loopback was refused: %v", ok)
	a.Result("the redirect to plain http was refused (HTTP 500: keys unavailable), its target never requested")
}

func oauthScopeClaims(a *A) {
	is := a.issuer()
	p := a.serveOAuth(is, is.JWKSURL)
	for _, tc := range []struct {
		name  string
		other map[string]any
	}{
		{"scp string", map[string]any{"scope": nil, "scp": "openid plugin:hello"}},
		{"scope list", map[string]any{"scope": []string{"openid", "plugin:hello"}}},
		{"scp list", map[string]any{"scope": nil, "scp": []string{"plugin:hello"}}},
		{"scope string", map[string]any{"scope": "openid plugin:hello"}},
	} {
		c := a.rawWith(p.url, a.mint(is, authtest.Claims{Subject: "alice", Other: tc.other}))
		if code, body, err := c.initialize(a.ctx); err != nil || code != http.StatusOK {
			a.Errorf("%s: refused: %d %s %v", tc.name, code, firstN(body, 200), err)
			continue
		}
		tools := strings.Join(a.tools(c), ",")
		a.Figure(tc.name, "accepted; tools %s", tools)
		a.Check(tools == "base64,greet,hash,uuid", "%s: tools %s, want hello's", tc.name, tools)
	}
	// Without a plugin scope, no plugin: the grants above came from the claims.
	c := a.rawWith(p.url, a.mint(is, authtest.Claims{Subject: "alice", Scope: "openid"}))
	c.mustInitialize(a)
	a.Check(len(a.tools(c)) == 0, "a token without plugin scopes lists tools")

	for _, tc := range []struct {
		name, claim string
		other       map[string]any
	}{
		{"scp a number", "scp", map[string]any{"scp": 5}},
		{"scope an object", "scope", map[string]any{"scope": map[string]any{"plugin:hello": true}}},
		{"exp a string", "exp", map[string]any{"exp": "tomorrow"}},
		{"sub a number", "sub", map[string]any{"sub": 5}},
		{"aud an object", "aud", map[string]any{"aud": map[string]any{}}},
	} {
		r := a.try(p.url, a.mint(is, authtest.Claims{Subject: "alice", Scope: "plugin:hello", Other: tc.other}))
		a.Figure(tc.name, "%v", r)
		a.Check(r.code == http.StatusUnauthorized && strings.HasPrefix(r.description, "claim '"+tc.claim+"': ") &&
			!strings.Contains(r.body, "signature"), "%s: %v", tc.name, r)
		a.Check(p.logged("claim="+tc.claim+" "), "%s: no log line names the claim:\n%s", tc.name, tail(p.log.String(), 5))
	}
	a.Result("both forms of both claims accepted; claims of the wrong type refused as claim errors, in the answer and the log")
}
