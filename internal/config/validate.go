package config

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// checkAddr validates a listen address "host:port". The host may be empty
// (all interfaces), an IP address or a name; the port is numeric.
func checkAddr(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "want host:port, such as 127.0.0.1:8080 or :8080"
	}
	if problem := checkPort(port, true); problem != "" {
		return problem
	}
	if host == "" {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	if problem := checkDNSName(host); problem != "" {
		return "host " + problem
	}
	return ""
}

// checkPort validates a decimal port; zero (any free port) is allowed only
// for listening.
func checkPort(port string, zeroOK bool) string {
	n, err := strconv.Atoi(port)
	if err != nil || port == "" || port[0] == '+' || port[0] == '-' {
		return "the port must be a number"
	}
	if n > 65535 || n == 0 && !zeroOK {
		return "the port must be between 1 and 65535"
	}
	return ""
}

// checkOrigin validates a browser origin and returns it normalized: lower
// case, without the default port of http or https.
func checkOrigin(s string) (string, string) {
	if s == "*" {
		return "", `list the origins instead; "*" would let every web page use the server`
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" || u.Host == "" {
		return "", "want scheme://host[:port], such as http://localhost:3000"
	}
	switch {
	case u.User != nil:
		return "", "an origin has no user information"
	case u.Path == "/" && u.RawQuery == "" && u.Fragment == "":
		return "", "remove the trailing slash; an origin has no path"
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", "an origin has no path, query or fragment; want scheme://host[:port]"
	case strings.Contains(u.Host, "*"):
		return "", "wildcards are not supported; list each origin"
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if _, err := netip.ParseAddr(host); err != nil {
		if problem := checkDNSName(host); problem != "" {
			return "", "host " + problem
		}
	}
	port := u.Port()
	if port != "" {
		if problem := checkPort(port, false); problem != "" {
			return "", problem
		}
		if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
			port = ""
		}
	}
	hostport := host
	if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport += ":" + port
	}
	return scheme + "://" + hostport, ""
}

// checkHostHeader validates a Host header value, "host" or "host:port"
// (IPv6 in brackets), and returns it in lower case.
func checkHostHeader(s string) (string, string) {
	if strings.Contains(s, "://") {
		return "", "remove the scheme; list the host as in a Host header, such as mcp.example.com or mcp.example.com:8443"
	}
	if strings.ContainsAny(s, "/?#@") {
		return "", "list the host only, such as mcp.example.com or mcp.example.com:8443"
	}
	if strings.Contains(s, "*") {
		return "", "wildcards are not supported; list each host"
	}
	s = strings.ToLower(s)
	host, port := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "missing ] after the IPv6 address"
		}
		host = s[1:end]
		switch rest := s[end+1:]; {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			port = rest[1:]
		default:
			return "", "unexpected text after ]"
		}
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", "not an IPv6 address in brackets"
		}
	case strings.Count(s, ":") > 1:
		return "", "write an IPv6 address in brackets, as in a Host header: [::1]"
	case strings.Contains(s, ":"):
		host, port, _ = strings.Cut(s, ":")
		fallthrough
	default:
		if _, err := netip.ParseAddr(host); err != nil {
			if problem := checkDNSName(host); problem != "" {
				return "", problem
			}
		}
	}
	if port != "" || strings.HasSuffix(s, ":") {
		if problem := checkPort(port, false); problem != "" {
			return "", problem
		}
	}
	return s, ""
}

// checkGrantHost validates an entry of grants.allowed_hosts: a host name,
// an IP address, "*." followed by a domain, or "*" (every public host), and
// returns it in lower case.
func checkGrantHost(s string) (string, string) {
	switch {
	case s == "*":
		return s, ""
	case strings.Contains(s, "://"):
		return "", "remove the scheme; list the host name only, such as api.example.com"
	case strings.ContainsAny(s, "/?#@"):
		return "", "list the host name only, such as api.example.com, without a path"
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		if a.Zone() != "" {
			return "", "IPv6 zones are not supported"
		}
		return a.String(), ""
	}
	if strings.Contains(s, ":") {
		return "", "list the host name without a port"
	}
	s = strings.ToLower(s)
	name := s
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		name = rest
		if !strings.Contains(rest, ".") {
			return "", `too broad; a pattern must name a domain with at least two labels, such as "*.example.com"`
		}
	}
	if strings.Contains(name, "*") {
		return "", `a wildcard is allowed only as a leading "*.", as in "*.example.com"`
	}
	if problem := checkDNSName(name); problem != "" {
		return "", problem
	}
	return s, ""
}

// checkDNSName checks a lower- or mixed-case host name: labels of 1 to 63
// letters, digits, "-" and "_", not starting or ending with "-", at most
// 253 characters in all.
func checkDNSName(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > 253:
		return "is longer than 253 characters"
	case strings.HasSuffix(s, "."):
		return "remove the trailing dot"
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" {
			return "has an empty label (two dots in a row, or a leading dot)"
		}
		if len(label) > 63 {
			return "has a label longer than 63 characters"
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return `has a label starting or ending with "-"`
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "is not a valid host name: it contains " + strconv.QuoteRune(c)
			}
		}
	}
	return ""
}
