package plugin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// A plugin's HTTP requests (http_request, env.go) go through a client of
// the plugin's own: its transport checks every address connected to
// (egress.go), and its CheckRedirect checks every redirect against the
// plugin's allowed hosts like the first URL, which http_request checked.
// Nothing else in the process is touched: Extism's http_request used
// http.DefaultClient, which Hangar had to hook process-wide. Every request
// it sends, redirects included, carries MarkerHeader (egress_deploy.go).

// maxRedirects is the standard library's limit, kept for plugin requests.
const maxRedirects = 10

// ErrRedirectDenied reports a redirect to a host the plugin may not reach.
// Such an error also wraps ErrHostDenied.
var ErrRedirectDenied = errors.New("redirect to a host not in allowed_hosts")

// httpClient returns the client of p's HTTP requests.
func (p *Plugin) httpClient() *http.Client {
	return &http.Client{Transport: markedTransport{transportFor(p)}, CheckRedirect: p.checkRedirect}
}

// checkRedirect is the CheckRedirect of p's client.
func (p *Plugin) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("plugin HTTP request stopped after %d redirects", maxRedirects)
	}
	if host := strings.ToLower(req.URL.Hostname()); !hostAllowed(p.opts.Grants.AllowedHosts, host) {
		return &hostDeniedError{plugin: p.name, host: host, why: notGranted, redirect: true}
	}
	return nil
}

// hostAllowed reports whether host matches one of the allowed entries: a
// host name or IP address (compared without regard to case), "*.domain",
// which matches every name ending in ".domain" but not domain itself, or
// "*", which matches every host (the dialer then keeps it to public
// addresses; see egress.go). It is the configuration's meaning of
// grants.allowed_hosts.
func hostAllowed(allowed []string, host string) bool {
	host = strings.ToLower(host)
	if host == "" {
		return false
	}
	for _, a := range allowed {
		a = strings.ToLower(a)
		if a == "*" {
			return true
		}
		if suffix, ok := strings.CutPrefix(a, "*"); ok {
			if strings.HasPrefix(suffix, ".") && len(host) > len(suffix) && strings.HasSuffix(host, suffix) {
				return true
			}
			continue
		}
		if host == a {
			return true
		}
	}
	return false
}
