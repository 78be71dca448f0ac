package plugin

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
)

// The deployment's addresses, and the marker on plugin requests.
//
// A plugin granted 127.0.0.1 (or the LAN) could reach the other replicas
// of its deployment, or the load balancer in front of them, and through
// them call every other plugin with that plugin's grants: ProtectAddr
// covers only this process's own listeners. Two guards close that path:
//
//   - At dial time, every address the configuration's deployment.addresses
//     names is refused, whatever the plugin's grants (ProtectDeployment).
//   - Every HTTP request a plugin makes carries the header MarkerHeader,
//     set by Hangar last, on each request and redirect; a plugin that sets
//     it is refused. Every Hangar refuses an inbound request that carries
//     it (RefuseMarked), so a deployment address missing from the
//     configuration, a proxy, or a DNS name that resolves somewhere new
//     still ends at a 403. The header's value is fixed: it is no secret (a
//     plugin can read it back from a server of its own), and presence is
//     what counts, so that a plugin of one deployment is refused by the
//     Hangars of every other one too (RATIONALE.md, "Why a fixed marker
//     on plugin requests?").

// MarkerHeader marks every HTTP request a plugin makes.
const MarkerHeader = "Hangar-Plugin-Request"

// markerValue is MarkerHeader's value.
const markerValue = "1"

// RefuseMarked refuses, with 403, every request that carries MarkerHeader:
// a request a plugin made, which must never reach a Hangar server, and
// hands the others to next.
func RefuseMarked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header[MarkerHeader]; ok {
			http.Error(w, "Forbidden: this request was made by a Hangar plugin (it carries the "+MarkerHeader+" header); plugins may not call a Hangar server", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// markedTransport sets MarkerHeader on every request it sends, redirects
// included.
type markedTransport struct{ base http.RoundTripper }

func (t markedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(MarkerHeader, markerValue)
	return t.base.RoundTrip(r)
}

// isMarker reports whether name is MarkerHeader, in any case.
func isMarker(name string) bool {
	return strings.EqualFold(strings.TrimSpace(name), MarkerHeader)
}

var deployment struct {
	sync.Mutex
	addrs []config.AddrRange
	names map[string]*resolved // host names of addrs, resolved
}

// resolved is a host name's addresses, as last resolved.
type resolved struct {
	addrs   []netip.Addr
	expires time.Time
	known   bool // resolved at least once
}

// resolveTTL is how long a deployment name's addresses are used before
// they are resolved again.
const resolveTTL = 30 * time.Second

// ProtectDeployment makes the deployment's addresses unreachable to the
// HTTP requests of every plugin, whatever its grants, as ProtectAddr does
// for the process's own listeners. A loopback address stands for every
// loopback address, an unspecified one (0.0.0.0, ::) for every address of
// this machine, a host name for the addresses it resolves to (again every
// 30 seconds) and for itself as a request's host, and "*" for every
// address. It replaces the addresses set before; the returned function
// removes them.
func ProtectDeployment(addrs []config.AddrRange) (remove func()) {
	deployment.Lock()
	deployment.addrs = append([]config.AddrRange(nil), addrs...)
	deployment.names = map[string]*resolved{}
	for _, r := range addrs {
		if _, err := netip.ParseAddr(r.Host); err != nil && r.Host != "*" {
			deployment.names[r.Host] = &resolved{}
		}
	}
	deployment.Unlock()
	return func() {
		deployment.Lock()
		deployment.addrs, deployment.names = nil, nil
		deployment.Unlock()
	}
}

// inDeployment returns the deployment address a connection to ap, for a
// request to host, would reach, if any.
func inDeployment(ctx context.Context, host string, ap netip.AddrPort) (config.AddrRange, bool) {
	deployment.Lock()
	addrs := deployment.addrs
	deployment.Unlock()
	a := ap.Addr().Unmap().WithZone("")
	for _, r := range addrs {
		if !r.HasPort(ap.Port()) {
			continue
		}
		if r.Host == "*" || r.Host == host {
			return r, true
		}
		if ra, err := netip.ParseAddr(r.Host); err == nil {
			if sameHost(ra, a) {
				return r, true
			}
			continue
		}
		known, ok := lookupDeployment(ctx, r.Host)
		if !ok && nonPublic(a) != "" {
			// The name does not resolve, and never has: refuse every
			// non-public address at its ports, where a deployment lives.
			return r, true
		}
		for _, ra := range known {
			if sameHost(ra, a) {
				return r, true
			}
		}
	}
	return config.AddrRange{}, false
}

// sameHost reports whether a connection to a may reach a listener on d. It
// errs on the side of yes, as isOwn does.
func sameHost(d, a netip.Addr) bool {
	d = d.Unmap().WithZone("")
	switch {
	case d == a:
		return true
	case d.IsLoopback() && a.IsLoopback():
		return true
	case d.IsUnspecified():
		return isLocal(a)
	case a.IsUnspecified():
		return isLocal(d)
	}
	return false
}

// lookupDeployment returns the addresses of a deployment host name,
// resolved at most resolveTTL ago; when it cannot be resolved, the last
// addresses it had. ok is false when it never resolved.
func lookupDeployment(ctx context.Context, name string) (addrs []netip.Addr, ok bool) {
	deployment.Lock()
	r := deployment.names[name]
	if r == nil {
		deployment.Unlock()
		return nil, false
	}
	if r.known && time.Now().Before(r.expires) {
		addrs, ok = r.addrs, true
		deployment.Unlock()
		return addrs, ok
	}
	deployment.Unlock()
	ips, err := lookupNetIP(ctx, "ip", name)
	deployment.Lock()
	defer deployment.Unlock()
	if err == nil {
		r.addrs, r.known, r.expires = nil, true, time.Now().Add(resolveTTL)
		for _, ip := range ips {
			r.addrs = append(r.addrs, ip.Unmap().WithZone(""))
		}
	}
	return r.addrs, r.known
}
