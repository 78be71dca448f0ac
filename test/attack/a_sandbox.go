package main

// What the first adversarial run found to hold already: the sandbox of a
// plugin granted nothing, and the HTTP transport's Host and Origin checks.

import (
	"context"
	"net/http"
	"strings"
	"time"
)

func init() {
	register(
		&attack{
			id: "0.1", name: "sandbox",
			attempt: "A plugin granted nothing reads /etc/passwd (directly, through ../, by listing /), writes /tmp, reads its environment and requests Hangar's own /mcp",
			run:     sandbox,
		},
		&attack{
			id: "0.2", name: "host-origin",
			attempt: "Requests with Host: evil.example (DNS rebinding) and with Origin: https://evil.example (a foreign web page)",
			run:     hostOrigin,
		},
	)
}

func sandbox(a *A) {
	p := a.serve(&procOpts{env: []string{"HANGAR_ATTACK_SECRET=do-not-leak"}}, "--config", a.config("http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: hostile, path: "+a.env.hostile+"}\n"))
	cs := a.client(p.url, nil)
	var refused []string
	for _, tc := range []struct {
		what, tool string
		args       map[string]any
	}{
		{"read /etc/passwd", "read", map[string]any{"path": "/etc/passwd"}},
		{"read ../../etc/passwd", "read", map[string]any{"path": "../../etc/passwd"}},
		{"list /", "list", map[string]any{"path": "/"}},
		{"write /tmp/hangar-attack", "write", map[string]any{"path": "/tmp/hangar-attack", "data": "x"}},
		{"GET Hangar's /mcp", "http", map[string]any{"url": p.url}},
	} {
		ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
		text, err := callText(ctx, cs, tc.tool, tc.args)
		cancel()
		if a.Check(err != nil, "%s: allowed: %q", tc.what, firstN(text, 100)) {
			refused = append(refused, tc.what+" ("+firstN(strings.TrimPrefix(err.Error(), "error result: "), 60)+")")
		}
	}
	env, err := callText(a.ctx, cs, "env", nil)
	a.Check(err == nil && strings.TrimSpace(env) == "", "the plugin's environment: %q, %v", env, err)
	a.Figure("refused", "%s", strings.Join(refused, "; "))
	a.Figure("the plugin's environment", "%d variables", len(strings.Fields(env)))
	a.Result("every attempt was refused; the plugin saw an empty environment")
}

func hostOrigin(a *A) {
	p := a.serve(nil, "--config", floodConfig(a, "{}", ""))
	try := func(host, origin string) int {
		c := a.raw(p.url)
		c.hc.Transport = withHeaders{host: host, origin: origin, base: c.tr}
		code, _, err := c.initialize(a.ctx)
		if err != nil {
			a.Fatalf("%v", err)
		}
		return code
	}
	evilHost := try("evil.example", "")
	evilOrigin := try("", "https://evil.example")
	local := try("", "http://localhost:3000")
	a.Figure("Host: evil.example", "HTTP %d", evilHost)
	a.Figure("Origin: https://evil.example", "HTTP %d", evilOrigin)
	a.Figure("Origin: http://localhost:3000 (allowed)", "HTTP %d", local)
	a.Check(evilHost == http.StatusForbidden, "Host: evil.example answered %d", evilHost)
	a.Check(evilOrigin == http.StatusForbidden, "Origin: https://evil.example answered %d", evilOrigin)
	a.Check(local == http.StatusOK, "a localhost origin answered %d", local)
	a.Result("both refused with 403; a localhost origin was served")
}

// withHeaders sends requests with another Host header or an Origin.
type withHeaders struct {
	host, origin string
	base         http.RoundTripper
}

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.host != "" {
		r.Host = h.host
	}
	if h.origin != "" {
		r.Header.Set("Origin", h.origin)
	}
	return h.base.RoundTrip(r)
}
