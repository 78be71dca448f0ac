package plugin

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	extism "github.com/extism/go-sdk"
)

// Extism's http_request host function checks the first URL of a request
// against the plugin's allowed hosts, then sends it with http.DefaultClient,
// which follows redirects anywhere. The client is not injectable, so Hangar
// installs a CheckRedirect on http.DefaultClient itself, once, at start-up
// (package initialization, before any goroutine can use the client).
//
// The hook only acts on requests whose context belongs to a plugin call:
// Extism sends every request with the context of the call, which carries
// Hangar's call state and Extism's own plugin. For those, each redirect is
// checked against the plugin's allowed hosts like the first URL, and refused
// (the request fails, and with it the plugin call) when the host is not
// allowed. Every other request in the process keeps the standard policy (at
// most 10 redirects, or whatever CheckRedirect was installed before).
//
// The same goes for the client's Transport, which Hangar replaces with one
// that sends plugin requests through a transport of the plugin's own, whose
// dialer checks every address connected to (see egress.go); every other
// request goes through the transport installed before, unchanged.
//
// The tradeoff is a process-wide hook on a global. If anything replaces
// http.DefaultClient, its CheckRedirect or its Transport later, redirects
// and addresses are no longer checked; Load then refuses plugins that are
// granted hosts (see checkRedirectGuard) rather than run them unguarded.

// maxRedirects is the standard library's limit, kept for plugin requests.
const maxRedirects = 10

var (
	guardedClient    *http.Client
	guardedTransport *egressTransport
	previousRedirect func(*http.Request, []*http.Request) error
)

func init() {
	guardedClient = http.DefaultClient
	previousRedirect = guardedClient.CheckRedirect
	guardedClient.CheckRedirect = checkPluginRedirect
	guardedTransport = &egressTransport{next: guardedClient.Transport}
	guardedClient.Transport = guardedTransport
}

// ErrRedirectDenied reports a redirect to a host the plugin may not reach.
// Such an error also wraps ErrHostDenied.
var ErrRedirectDenied = errors.New("redirect to a host not in allowed_hosts")

// checkPluginRedirect is http.DefaultClient's CheckRedirect.
func checkPluginRedirect(req *http.Request, via []*http.Request) error {
	name, hosts, ok := pluginHosts(req)
	if !ok {
		if previousRedirect != nil {
			return previousRedirect(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("plugin HTTP request stopped after %d redirects", maxRedirects)
	}
	if host := strings.ToLower(req.URL.Hostname()); !hostAllowed(hosts, host) {
		return &hostDeniedError{plugin: name, host: host, why: notGranted, redirect: true}
	}
	return nil
}

// pluginHosts returns the name and allowed hosts of the plugin whose call
// sent req, and false when req was not sent by a plugin.
func pluginHosts(req *http.Request) (string, []string, bool) {
	ctx := req.Context()
	if s := stateFrom(ctx); s != nil {
		return s.plugin.name, s.plugin.opts.Grants.AllowedHosts, true
	}
	// An Extism plugin outside a Hangar call (there is none today): use the
	// hosts Extism itself checked the first URL against.
	if p, ok := ctx.Value(extism.PluginCtxKey("plugin")).(*extism.Plugin); ok && p != nil {
		return "(unnamed)", p.AllowedHosts, true
	}
	return "", nil, false
}

// hostAllowed reports whether host matches one of the allowed entries: a
// host name or IP address (compared without regard to case), "*.domain",
// which matches every name ending in ".domain" but not domain itself, or
// "*", which matches every host (the dialer then keeps it to public
// addresses; see egress.go). It is the configuration's meaning of
// grants.allowed_hosts; Extism's own check of the first URL is a glob match
// that agrees with it on every entry the configuration accepts.
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

// checkRedirectGuard reports an error when the redirect check or the
// plugin transport is no longer installed on the client Extism uses.
func checkRedirectGuard() error {
	c := http.DefaultClient
	if c != guardedClient || c.CheckRedirect == nil ||
		reflect.ValueOf(c.CheckRedirect).Pointer() != reflect.ValueOf(checkPluginRedirect).Pointer() {
		return errors.New("http.DefaultClient or its CheckRedirect was replaced, so redirects of plugin HTTP requests cannot be checked against allowed_hosts")
	}
	if t, ok := c.Transport.(*egressTransport); !ok || t != guardedTransport {
		return errors.New("http.DefaultClient's Transport was replaced, so the addresses plugin HTTP requests connect to cannot be checked")
	}
	return nil
}
