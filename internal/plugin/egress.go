package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"
)

// Plugin HTTP requests at dial time.
//
// http_request checks the host name of a plugin's request against its
// grants and sends it with the plugin's client (see net.go). The name says
// nothing of where the connection goes: "*" or "*.example.org" may resolve to
// 127.0.0.1, to the LAN, or to the cloud's metadata service, and a granted
// "localhost" reaches Hangar's own HTTP server, through which the plugin
// could call other plugins with their grants. So Hangar also checks the
// address each plugin connection is made to, after resolution:
//
//   - Hangar's own listening addresses (see ProtectAddr), and those of its
//     deployment (see ProtectDeployment), are refused, whatever the
//     grants;
//   - a non-public address (see nonPublic) is refused unless a grant names
//     the host of the request, or the address, exactly: "*" and "*.domain"
//     never reach one;
//   - a public address is reached when the host matches a grant.
//
// The check sits in the dialer of a transport of the plugin's own, so it
// covers redirects and every address a name resolves to, and the address
// checked is the one connected to (no second resolution). Each plugin has
// its own transport and connection pool: a plugin never reuses a connection
// that Hangar or another plugin opened. Plugin requests do not go through
// the proxies of HTTP_PROXY and HTTPS_PROXY: through a proxy, the address
// connected to would be the proxy's.

// ErrHostDenied reports an HTTP request of a plugin that its grants do not
// allow: a host not in grants.allowed_hosts, a non-public address reached
// through a wildcard grant, or Hangar's own server.
var ErrHostDenied = errors.New("HTTP request denied")

// denial says why.
type denial int

const (
	notGranted    denial = iota // the host matches no grant
	notPublic                   // a non-public address, not granted by name
	ownServer                   // one of Hangar's own listening addresses
	ownDeployment               // an address of Hangar's deployment
	markerSet                   // the plugin set MarkerHeader
)

// hostDeniedError is a refused plugin HTTP request.
type hostDeniedError struct {
	plugin   string
	host     string         // as in the URL, lower case
	addr     netip.AddrPort // the address refused; zero when the name was
	kind     string         // for notPublic: what kind of address; for ownDeployment, the configured address
	why      denial
	redirect bool
	// guest is set on the copy the plugin is told (httpFailure): without
	// the address a name resolved to, or the deployment's configured range,
	// which would let a plugin map what internal names resolve to.
	guest bool
}

func (e *hostDeniedError) Error() string {
	var b strings.Builder
	b.WriteString(ErrHostDenied.Error())
	b.WriteString(": ")
	if e.why == markerSet {
		fmt.Fprintf(&b, "the header %s is Hangar's, which sets it on every plugin request; a plugin may not set it", MarkerHeader)
		return b.String()
	}
	if e.redirect {
		b.WriteString("redirect to ")
	}
	fmt.Fprintf(&b, "host %q", e.host)
	grant := fmt.Sprintf("; to allow it, add %q to grants.allowed_hosts of plugin %s", e.host, e.plugin)
	switch e.why {
	case notGranted:
		b.WriteString(" is not in grants.allowed_hosts")
		b.WriteString(grant)
	case notPublic:
		if e.addr.Addr().String() == e.host {
			fmt.Fprintf(&b, " is a %s address", e.kind)
		} else if e.guest {
			fmt.Fprintf(&b, " resolves to a %s address", e.kind)
		} else {
			fmt.Fprintf(&b, " resolves to %s, a %s address", e.addr.Addr(), e.kind)
		}
		b.WriteString(`, which "*" and "*.domain" grants do not reach`)
		b.WriteString(grant)
	case ownServer:
		if !e.guest {
			fmt.Fprintf(&b, " (%s)", e.addr)
		}
		b.WriteString(" is Hangar's own server, which no grant allows")
	case ownDeployment:
		if !e.guest {
			fmt.Fprintf(&b, " (%s)", e.addr)
		}
		b.WriteString(" is an address of Hangar's deployment")
		if !e.guest {
			fmt.Fprintf(&b, " (%s in deployment.addresses)", e.kind)
		}
		b.WriteString(", which no grant allows")
	}
	return b.String()
}

func (e *hostDeniedError) Unwrap() []error {
	if e.redirect {
		return []error{ErrHostDenied, ErrRedirectDenied}
	}
	return []error{ErrHostDenied}
}

// hostDenied returns the error of a call that failed because the plugin
// made an HTTP request its grants do not allow, or nil if err is another
// failure. The error wraps ErrHostDenied and names the plugin, the host and
// the grant to add.
func (p *Plugin) hostDenied(export string, err error) error {
	var hd *hostDeniedError
	if errors.As(err, &hd) {
		return fmt.Errorf("plugin %s: %s: %w", p.name, export, hd)
	}
	return nil
}

// Hangar's own listening addresses.

var own struct {
	sync.Mutex
	addrs []netip.AddrPort // an unspecified address stands for every local one
}

// ProtectAddr makes addr, an address Hangar listens on, unreachable to the
// HTTP requests of every plugin, whatever its grants. A listener on an
// unspecified address (0.0.0.0 or ::) protects its port on every local
// address. The returned function removes the protection; call it once the
// listener is closed.
func ProtectAddr(addr net.Addr) (remove func()) {
	var ap netip.AddrPort
	if ta, ok := addr.(*net.TCPAddr); ok {
		ap = ta.AddrPort()
	} else if p, err := netip.ParseAddrPort(addr.String()); err == nil {
		ap = p
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	own.Lock()
	own.addrs = append(own.addrs, ap)
	own.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			own.Lock()
			defer own.Unlock()
			for i, a := range own.addrs {
				if a == ap {
					own.addrs = append(own.addrs[:i], own.addrs[i+1:]...)
					break
				}
			}
		})
	}
}

// isOwn reports whether a connection to ap may reach one of Hangar's own
// listeners. It errs on the side of refusing: a loopback listener protects
// its port on every loopback address.
func isOwn(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap().WithZone("")
	own.Lock()
	var wild bool
	for _, o := range own.addrs {
		if o.Port() != ap.Port() {
			continue
		}
		oa := o.Addr()
		switch {
		case oa.IsUnspecified():
			wild = true
		case a == oa, a.IsUnspecified(), a.IsLoopback() && oa.IsLoopback():
			own.Unlock()
			return true
		}
	}
	own.Unlock()
	return wild && isLocal(a)
}

// isLocal reports whether a is an address of this machine.
func isLocal(a netip.Addr) bool {
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: assume it is
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// The dialer.

// dialer checks and opens the connections of one plugin.
type dialer struct {
	plugin string
	grants []string // lower case, as configured
}

// Test hooks: how names are resolved and addresses connected to.
var (
	lookupNetIP = net.DefaultResolver.LookupNetIP
	dialAddr    = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
)

// minDialAttempt is the least time given to one address when a name
// resolves to several (as the standard library's dialer does).
const minDialAttempt = 2 * time.Second

// DialContext resolves address, drops the addresses the plugin may not
// reach, and connects to the others in turn.
func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("invalid port %q", portStr)
	}
	host = strings.ToLower(host)
	if !hostAllowed(d.grants, host) {
		return nil, &hostDeniedError{plugin: d.plugin, host: host, why: notGranted}
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ipnet := "ip"
		switch network {
		case "tcp4":
			ipnet = "ip4"
		case "tcp6":
			ipnet = "ip6"
		}
		if ips, err = lookupNetIP(ctx, ipnet, host); err != nil {
			return nil, err
		}
	}
	var allowed []netip.AddrPort
	var denied error
	for _, ip := range ips {
		// The resolver may answer IPv4 addresses in their IPv4-mapped form.
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		if err := d.check(ctx, host, ap); err != nil {
			if denied == nil {
				denied = err
			}
			continue
		}
		allowed = append(allowed, ap)
	}
	if len(allowed) == 0 {
		if denied == nil {
			denied = fmt.Errorf("no address for %s", host)
		}
		return nil, denied
	}
	var firstErr error
	for i, ap := range allowed {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok && i < len(allowed)-1 {
			share := time.Until(deadline) / time.Duration(len(allowed)-i)
			actx, cancel = context.WithTimeout(ctx, max(share, minDialAttempt))
		}
		conn, err := dialAddr(actx, network, ap.String())
		cancel()
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// check returns an error when the plugin may not connect to ap for a
// request to host.
func (d *dialer) check(ctx context.Context, host string, ap netip.AddrPort) error {
	if isOwn(ap) {
		return &hostDeniedError{plugin: d.plugin, host: host, addr: ap, why: ownServer}
	}
	if r, ok := inDeployment(ctx, host, ap); ok {
		return &hostDeniedError{plugin: d.plugin, host: host, addr: ap, kind: r.String(), why: ownDeployment}
	}
	if kind := nonPublic(ap.Addr()); kind != "" && !grantedByName(d.grants, host, ap.Addr()) {
		return &hostDeniedError{plugin: d.plugin, host: host, addr: ap, kind: kind, why: notPublic}
	}
	return nil
}

// grantedByName reports whether a grant names host, or the address a,
// exactly: not through "*" or "*.domain".
func grantedByName(grants []string, host string, a netip.Addr) bool {
	for _, g := range grants {
		g = strings.ToLower(g)
		if strings.HasPrefix(g, "*") {
			continue
		}
		if g == host {
			return true
		}
		if ga, err := netip.ParseAddr(g); err == nil {
			ga = ga.WithZone("")
			if ga == a.WithZone("") || ga.Unmap() == a.WithZone("").Unmap() {
				return true
			}
		}
	}
	return false
}

// The transports.

// transports holds each plugin's transport, until the plugin is garbage.
var transports struct {
	sync.Mutex
	m map[weak.Pointer[Plugin]]*http.Transport
}

// transportFor returns p's transport, made on first use.
func transportFor(p *Plugin) *http.Transport {
	key := weak.Make(p)
	transports.Lock()
	defer transports.Unlock()
	if t := transports.m[key]; t != nil {
		return t
	}
	if transports.m == nil {
		transports.m = map[weak.Pointer[Plugin]]*http.Transport{}
	}
	t := newPluginTransport(&dialer{plugin: p.name, grants: p.opts.Grants.AllowedHosts})
	transports.m[key] = t
	runtime.AddCleanup(p, func(key weak.Pointer[Plugin]) {
		transports.Lock()
		t := transports.m[key]
		delete(transports.m, key)
		transports.Unlock()
		if t != nil {
			t.CloseIdleConnections()
		}
	}, key)
	return t
}

// newPluginTransport returns a transport with the standard library's
// defaults, no proxy, and d as its dialer.
func newPluginTransport(d *dialer) *http.Transport {
	return &http.Transport{
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
