package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Deployment describes the deployment this server is a part of: the other
// servers of the same service (replicas behind a load balancer), and what
// stands in front of them. The zero value describes a server alone.
type Deployment struct {
	// Addresses are where the deployment serves MCP, metrics or probes:
	// every replica, the load balancer, the operations listeners. A
	// plugin's HTTP requests reach none of them, whatever its grants; the
	// server's own listeners are refused without being listed.
	Addresses []AddrRange
}

// AddrRange is a host and a range of ports on it.
type AddrRange struct {
	// Host is an IP address (IPv6 without brackets), a lower-case host
	// name, or "*" for every address.
	Host string
	// FirstPort and LastPort bound the range, both included; they are equal
	// for a single port.
	FirstPort, LastPort uint16
}

// String writes r as the configuration does: host:port or host:first-last,
// with an IPv6 address in brackets.
func (r AddrRange) String() string {
	host := r.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if r.FirstPort == r.LastPort {
		return fmt.Sprintf("%s:%d", host, r.FirstPort)
	}
	return fmt.Sprintf("%s:%d-%d", host, r.FirstPort, r.LastPort)
}

// HasPort reports whether port is in r's range.
func (r AddrRange) HasPort(port uint16) bool { return port >= r.FirstPort && port <= r.LastPort }

var (
	deploymentKeys = []string{"addresses"}
)

func (d *decoder) deployment(n *yaml.Node, p string) Deployment {
	var dep Deployment
	f := d.mapping(n, p, deploymentKeys, nil)
	if e, ok := f["addresses"]; ok {
		pp := join(p, "addresses")
		seen := map[AddrRange]int{}
		for _, it := range d.strList(e.val, pp, "a list of host:port addresses") {
			ip := fmt.Sprintf("%s[%d]", pp, it.index)
			r, problem := parseAddrRange(it.val)
			if problem != "" {
				d.errorf(it.node, ip, "invalid address %q: %s", it.val, problem)
				continue
			}
			if line, dup := seen[r]; dup {
				d.errorf(it.node, ip, "address %q is already listed on line %d", it.val, line)
				continue
			}
			seen[r] = it.node.Line
			dep.Addresses = append(dep.Addresses, r)
		}
	}
	return dep
}

// parseAddrRange reads a deployment address: host:port or
// host:first-last, where host is an IP address (IPv6 in brackets), a host
// name or "*".
func parseAddrRange(s string) (AddrRange, string) {
	const want = "want host:port or host:first-last, such as 10.0.0.7:8080, hangar-2.internal:8080 or *:9000-9009"
	if strings.Contains(s, "://") {
		return AddrRange{}, "remove the scheme; " + want
	}
	if strings.ContainsAny(s, "/?#@") {
		return AddrRange{}, "list the address only, without a path; " + want
	}
	var host, ports string
	if rest, ok := strings.CutPrefix(s, "["); ok {
		h, after, ok := strings.Cut(rest, "]")
		if !ok {
			return AddrRange{}, "missing ] after the IPv6 address"
		}
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() {
			return AddrRange{}, "not an IPv6 address in brackets"
		}
		if a.Zone() != "" {
			return AddrRange{}, "IPv6 zones are not supported"
		}
		p, ok := strings.CutPrefix(after, ":")
		if !ok {
			return AddrRange{}, "a port is required; " + want
		}
		host, ports = a.String(), p
	} else {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return AddrRange{}, "a port is required; " + want
		}
		host, ports = s[:i], s[i+1:]
		switch a, err := netip.ParseAddr(host); {
		case strings.Contains(host, ":"):
			return AddrRange{}, "write an IPv6 address in brackets: [::1]:8080"
		case host == "*":
		case err == nil:
			host = a.String()
		default:
			if problem := checkDNSName(host); problem != "" {
				return AddrRange{}, "host " + problem
			}
			host = strings.ToLower(host)
		}
	}
	first, last, ok := strings.Cut(ports, "-")
	if !ok {
		last = first
	}
	lo, problem := portNumber(first)
	if problem != "" {
		return AddrRange{}, problem
	}
	hi, problem := portNumber(last)
	if problem != "" {
		return AddrRange{}, problem
	}
	if hi < lo {
		return AddrRange{}, fmt.Sprintf("the range %d-%d is empty; write the lower port first", lo, hi)
	}
	return AddrRange{Host: host, FirstPort: lo, LastPort: hi}, ""
}

func portNumber(s string) (uint16, string) {
	if problem := checkPort(s, false); problem != "" {
		return 0, problem
	}
	n, _ := strconv.Atoi(s)
	return uint16(n), ""
}
