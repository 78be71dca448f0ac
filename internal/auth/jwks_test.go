package auth_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/auth/authtest"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// clock is a settable time for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRotatedKeyEndsCachedTokens: a token verified (and so remembered)
// while its key was in the JWKS is refused once the key has left it,
// whether the new key set is fetched for a token signed with the new key or
// because the set is due to be fetched again; a token of a key that stays
// is still accepted.
func TestRotatedKeyEndsCachedTokens(t *testing.T) {
	for _, how := range []string{"new key", "ttl"} {
		t.Run(how, func(t *testing.T) {
			is := authtest.New(t)
			clk := &clock{t: time.Now()}
			var logs testutil.SyncBuffer
			a, err := auth.New(&config.Auth{OAuth: &config.OAuth{Issuer: is.URL, Resource: "https://m.example.com/mcp", Audience: "a", JWKSURL: is.JWKSURL}},
				&auth.Options{Now: clk.now, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("POST", "/mcp", nil)
			ctx := context.Background()
			old := is.Mint(t, authtest.Claims{Audience: "a", Scope: "plugin:x", Expiry: 2 * time.Hour})
			for range 2 { // verified, then remembered
				if _, err := a.Verify(ctx, old, req); err != nil {
					t.Fatal(err)
				}
			}
			if n := is.Fetches.Load(); n != 1 {
				t.Fatalf("%d fetches of the JWKS", n)
			}
			is.Rotate()
			switch how {
			case "new key":
				clk.add(11 * time.Second) // past the least time between fetches
				if _, err := a.Verify(ctx, is.Mint(t, authtest.Claims{Audience: "a", Expiry: 2 * time.Hour}), req); err != nil {
					t.Fatalf("a token of the new key: %v", err)
				}
			case "ttl":
				clk.add(5*time.Minute + time.Second)
			}
			_, err = a.Verify(ctx, old, req)
			if err == nil || !strings.Contains(err.Error(), `no key "k1" in the JWKS`) {
				t.Errorf("a token of a key that left the JWKS: %v", err)
			}
			if n := is.Fetches.Load(); n != 2 {
				t.Errorf("%d fetches of the JWKS, want 2", n)
			}
			if !strings.Contains(logs.String(), "the JWKS changed") || !strings.Contains(logs.String(), "removed=1") {
				t.Errorf("the change of keys is not logged:\n%s", logs.String())
			}
		})
	}
}

// TestJWKSRedirects: a redirect of the JWKS URL is held to the rule of the
// URL itself (https, or http to a loopback host): one to plain http on
// another host is refused, and the token is not accepted; one to http on
// loopback is followed.
func TestJWKSRedirects(t *testing.T) {
	is := authtest.New(t)
	jwksAddr := strings.TrimPrefix(is.URL, "http://")
	_, port, _ := net.SplitHostPort(jwksAddr)
	var to string
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	// jwks.example.com leads to the issuer, as if it served the JWKS (or a
	// network attacker answered for it).
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "jwks.example.com:80" {
			addr = jwksAddr
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	for _, tc := range []struct {
		to   string
		code int
		want string
	}{
		{"http://jwks.example.com/jwks", 500, "the authorization server's signing keys are unavailable: fetching " + redirector.URL + "/jwks: " +
			redirector.URL + "/jwks redirected to http://jwks.example.com/jwks: plain http is allowed only to a loopback host; use https"},
		{"http://u:p@localhost:" + port + "/jwks", 500, "redirected to http://u:xxxxx@localhost:" + port + "/jwks: a URL here may not hold credentials"},
		{"ftp://127.0.0.1/jwks", 500, "redirected to ftp://127.0.0.1/jwks: the scheme must be https"},
		{is.JWKSURL, 200, "oauth:" + is.URL + "#user"},
	} {
		to = tc.to
		a, err := auth.New(&config.Auth{OAuth: &config.OAuth{Issuer: is.URL, Resource: "https://m.example.com/mcp", Audience: "a", JWKSURL: redirector.URL + "/jwks"}},
			&auth.Options{Client: &http.Client{Transport: tr}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, a)
		code, body, _ := get(t, srv.URL+"/mcp", is.Mint(t, authtest.Claims{Audience: "a"}))
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("redirect to %s: %d %q, want %d %q", tc.to, code, body, tc.code, tc.want)
		}
	}
}

// TestConcurrentVerifications verifies tokens from many goroutines while
// the key set is fetched, rotated and fetched again (run it with -race):
// tokens of the current key are accepted throughout, and a burst of
// tokens naming a key not yet known makes one fetch, which they wait for.
func TestConcurrentVerifications(t *testing.T) {
	is := authtest.New(t)
	clk := &clock{t: time.Now()}
	a, err := auth.New(&config.Auth{OAuth: &config.OAuth{Issuer: is.URL, Resource: "https://m.example.com/mcp", Audience: "a", JWKSURL: is.JWKSURL}},
		&auth.Options{Now: clk.now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/mcp", nil)
	burst := func(tokens []string) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for j := range 20 {
					if _, err := a.Verify(context.Background(), tokens[(i+j)%len(tokens)], req); err != nil {
						t.Errorf("goroutine %d: %v", i, err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	var first []string
	for i := range 4 {
		first = append(first, is.Mint(t, authtest.Claims{Audience: "a", Subject: fmt.Sprint("u", i), Expiry: time.Hour}))
	}
	burst(first)
	is.Rotate()
	clk.add(11 * time.Second)
	var second []string
	for i := range 4 {
		second = append(second, is.Mint(t, authtest.Claims{Audience: "a", Subject: fmt.Sprint("v", i), Expiry: time.Hour}))
	}
	burst(second)
	if n := is.Fetches.Load(); n != 2 {
		t.Errorf("%d fetches of the JWKS, want 2", n)
	}
	for _, tok := range first {
		if _, err := a.Verify(context.Background(), tok, req); err == nil {
			t.Error("a token of the removed key was accepted")
		}
	}
}
