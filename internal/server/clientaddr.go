package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddress is the address that tells a request's client from others
// where a client without a token is an address: the connection's, or, when
// the connection comes from a trusted proxy, the address the nearest hop
// that is not one put in X-Forwarded-For. The header is read from the
// right, each trusted proxy having appended the address it was reached
// from; entries left of the first untrusted one are the client's own
// words, which any client can write. A header that cannot be read counts
// as absent: the request is the proxy's. "" when RemoteAddr is not an
// address (an in-process request).
func clientAddress(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return ""
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !within(peer, trusted) {
		return host
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		entries := strings.Split(hops[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(entries[j]))
			if err != nil || a.Zone() != "" {
				return host
			}
			if a = a.Unmap(); !within(a, trusted) {
				return a.String()
			}
		}
	}
	return host
}

// within reports whether a is in one of the ranges.
func within(a netip.Addr, ranges []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range ranges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
