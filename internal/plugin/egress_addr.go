package plugin

import "net/netip"

// Which addresses a plugin may reach without naming them.
//
// A grant of "*" or "*.domain" lets a plugin reach hosts whose names it
// did not know in advance; it must not also let it reach the machine Hangar
// runs on, the networks behind it, or the cloud's metadata service, through
// a name that happens to resolve there (or is made to). So the addresses a
// plugin connects to are classified, after resolution: only global unicast
// addresses are "public"; everything else (loopback, private, link-local,
// shared, documentation, multicast and reserved ranges, and the IPv6 forms
// that carry one of those) is reached only through a grant that names the
// host or the address itself.

// nonPublic returns what kind of non-public address a is ("loopback",
// "private", ...), or "" when a is a public, global unicast address. An
// IPv4 address embedded in IPv6 (IPv4-mapped, NAT64, 6to4) is judged by the
// IPv4 address it leads to.
func nonPublic(a netip.Addr) string {
	a = a.WithZone("")
	if !a.IsValid() {
		return "invalid"
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is4() {
		return nonPublic4(a)
	}
	for _, r := range special6 {
		if r.p.Contains(a) {
			if r.embedsV4 != nil {
				return embedded(r.embedsV4(a), r.kind)
			}
			return r.kind
		}
	}
	if !global6.Contains(a) {
		// Outside 2000::/3, nothing is allocated as global unicast.
		return "reserved"
	}
	return ""
}

func nonPublic4(a netip.Addr) string {
	for _, r := range special4 {
		if r.p.Contains(a) {
			return r.kind
		}
	}
	return ""
}

// embedded judges an IPv6 address by the IPv4 address it embeds.
func embedded(v4 netip.Addr, via string) string {
	if kind := nonPublic4(v4); kind != "" {
		return kind + " (" + v4.String() + " in a " + via + " address)"
	}
	return ""
}

type addrRange struct {
	p        netip.Prefix
	kind     string
	embedsV4 func(netip.Addr) netip.Addr // the IPv4 address a packet to it reaches
}

// special4 is the IANA IPv4 special-purpose address registry, with the
// ranges that are not globally reachable (and multicast, which TCP cannot
// use anyway).
var special4 = []addrRange{
	{p: pfx("0.0.0.0/8"), kind: "unspecified"}, // "this network": 0.0.0.0 reaches the local host
	{p: pfx("10.0.0.0/8"), kind: "private"},
	{p: pfx("100.64.0.0/10"), kind: "shared (carrier-grade NAT)"},
	{p: pfx("127.0.0.0/8"), kind: "loopback"},
	{p: pfx("169.254.0.0/16"), kind: "link-local"}, // includes the cloud metadata service, 169.254.169.254
	{p: pfx("172.16.0.0/12"), kind: "private"},
	{p: pfx("192.0.0.0/24"), kind: "special-purpose"},
	{p: pfx("192.0.2.0/24"), kind: "documentation"},
	{p: pfx("192.88.99.0/24"), kind: "reserved"}, // the former 6to4 relay anycast
	{p: pfx("192.168.0.0/16"), kind: "private"},
	{p: pfx("198.18.0.0/15"), kind: "benchmarking"},
	{p: pfx("198.51.100.0/24"), kind: "documentation"},
	{p: pfx("203.0.113.0/24"), kind: "documentation"},
	{p: pfx("224.0.0.0/4"), kind: "multicast"},
	{p: pfx("240.0.0.0/4"), kind: "reserved"}, // includes the broadcast address
}

// global6 holds every global unicast IPv6 address.
var global6 = pfx("2000::/3")

// special6 lists the IPv6 ranges that are not globally reachable, or that
// lead to an IPv4 address. IPv4-mapped addresses (::ffff:0:0/96) never get
// here: they are IPv4.
var special6 = []addrRange{
	{p: pfx("::/128"), kind: "unspecified"},
	{p: pfx("::1/128"), kind: "loopback"},
	{p: pfx("64:ff9b::/96"), kind: "NAT64", embedsV4: func(a netip.Addr) netip.Addr { return v4At(a, 12) }},
	{p: pfx("64:ff9b:1::/48"), kind: "private"}, // local-use NAT64
	{p: pfx("fc00::/7"), kind: "private"},       // unique local
	{p: pfx("fe80::/10"), kind: "link-local"},
	{p: pfx("fec0::/10"), kind: "private"}, // the former site-local
	{p: pfx("ff00::/8"), kind: "multicast"},
	{p: pfx("2001::/32"), kind: "Teredo"}, // embeds an obfuscated IPv4 address: never judged public
	{p: pfx("2001:db8::/32"), kind: "documentation"},
	{p: pfx("3fff::/20"), kind: "documentation"},
	{p: pfx("2001::/23"), kind: "special-purpose"}, // IETF protocol assignments (benchmarking, ORCHID...)
	{p: pfx("2002::/16"), kind: "6to4", embedsV4: func(a netip.Addr) netip.Addr { return v4At(a, 2) }},
}

// v4At returns the IPv4 address held in bytes i to i+3 of a.
func v4At(a netip.Addr, i int) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte(b[i : i+4]))
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
