package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Settings for running Hangar as a service: TLS and authentication of the
// HTTP transport (http.tls, http.auth), the operations listener (metrics)
// and tracing. See the package documentation for what each key means.

// TLS holds the certificate and key HTTP is served with.
type TLS struct {
	Cert string // PEM certificate chain, absolute and clean
	Key  string // PEM private key, absolute and clean
}

// Auth says who may use the HTTP transport, and which plugins each may
// use. At least one of Tokens and OAuth is set.
type Auth struct {
	// Tokens are the static bearer tokens, from tokens_file and tokens_env.
	Tokens []Token
	// OAuth, if set, accepts JWT access tokens issued by an OAuth 2.1
	// authorization server.
	OAuth *OAuth
}

// AllPlugins, in a list of plugins a token may use, stands for every
// plugin.
const AllPlugins = "*"

// MinTokenLength is the fewest characters a static token may have.
const MinTokenLength = 32

// Token is a static bearer token.
type Token struct {
	ID      string   // names the token in logs; unique
	SHA256  string   // the SHA-256 of the token, 64 lower-case hex digits
	Plugins []string // the plugins it may use; AllPlugins for every one
}

// OAuth configures OAuth 2.1 resource-server mode: bearer tokens are JWTs,
// signed by a key of the authorization server's JWKS.
type OAuth struct {
	Issuer   string // the iss every token must carry
	Resource string // this server's canonical URL, as in protected-resource metadata
	Audience string // an aud every token must carry; defaults to Resource
	JWKSURL  string // where the signing keys are fetched; or
	JWKSFile string // a file holding them, absolute and clean
	// AuthorizationServers are listed in the protected-resource metadata;
	// defaults to Issuer.
	AuthorizationServers []string
	// ScopesSupported are listed in the protected-resource metadata.
	ScopesSupported []string
	// Plugins every valid token may use, besides those its scopes name
	// ("plugin:NAME", or "plugin:*").
	Plugins []string
}

// Metrics configures the operations listener.
type Metrics struct {
	// Addr, if set, serves /metrics, /healthz and /readyz on a listener of
	// their own, and /metrics no longer beside /mcp.
	Addr string
}

// Tracing configures OpenTelemetry tracing. Tracing is off when the
// configuration has no tracing section.
type Tracing struct {
	Endpoint    string            // OTLP/HTTP traces URL, such as http://127.0.0.1:4318/v1/traces
	Headers     map[string]string // sent with every export; ${NAME} expanded
	SampleRatio float64           // of traces started here (not those a client's traceparent decides), 0..1
	ServiceName string            // service.name of the spans
}

// Defaults of the tracing section.
const (
	DefaultServiceName = "hangar"
	DefaultSampleRatio = 1.0
)

var (
	tlsKeys     = []string{"cert", "key"}
	authKeys    = []string{"tokens_file", "tokens_env", "oauth"}
	oauthKeys   = []string{"issuer", "resource", "audience", "jwks_url", "jwks_file", "authorization_servers", "scopes_supported", "plugins"}
	tokenKeys   = []string{"id", "token", "sha256", "plugins"}
	metricsKeys = []string{"addr"}
	tracingKeys = []string{"endpoint", "headers", "sample_ratio", "service_name"}

	tokenIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// IsLoopback reports whether the listen address addr ("host:port") can only
// be reached from this machine: its host is localhost or a loopback IP
// address. An empty host ("" or ":8080") listens on every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// ExposedWithoutAuth is the problem with serving HTTP on addr, which is not
// a loopback address, without authentication.
func ExposedWithoutAuth(addr string) string {
	return fmt.Sprintf("%s can be reached from other machines, and http.auth is not configured: anyone who can connect could call every plugin. "+
		"Configure http.auth (tokens_file, tokens_env or oauth), or listen on a loopback address such as 127.0.0.1:8080", addr)
}

// service decodes the keys of the http section for serving as a service
// (tls, auth), and checks that an address other machines can reach is
// served only with authentication.
func (d *decoder) service(f map[string]entry, p string, h *HTTP) {
	if e, ok := f["tls"]; ok && !isNull(resolve(e.val)) {
		h.TLS = d.tls(e.val, join(p, "tls"))
	}
	if e, ok := f["auth"]; ok && !isNull(resolve(e.val)) {
		h.Auth = d.auth(e.val, join(p, "auth"))
		if h.Auth != nil && h.LegacySSE {
			d.errorf(resolve(e.key), join(p, "auth"), "cannot be combined with legacy_sse: the HTTP+SSE transport of 2024-11-05 cannot bind a session to its token; remove legacy_sse (clients of every protocol version can use /mcp)")
		}
	}
	if e, ok := f["addr"]; ok && h.Addr != "" && h.Auth == nil && !IsLoopback(h.Addr) {
		d.errorf(resolve(e.val), join(p, "addr"), "%s", ExposedWithoutAuth(h.Addr))
	}
}

func (d *decoder) tls(n *yaml.Node, p string) *TLS {
	f := d.mapping(n, p, tlsKeys, nil)
	if f == nil {
		return nil
	}
	t := &TLS{}
	ok := true
	for _, k := range []struct {
		key   string
		field *string
	}{{"cert", &t.Cert}, {"key", &t.Key}} {
		e, found := f[k.key]
		if !found {
			d.errorf(resolve(n), p, "missing required key %q", k.key)
			ok = false
			continue
		}
		path, good := d.existingFile(e.val, join(p, k.key))
		*k.field, ok = path, ok && good
	}
	if !ok {
		return nil
	}
	return t
}

// existingFile decodes a path to a file that must exist, relative to the
// configuration file's directory.
func (d *decoder) existingFile(n *yaml.Node, p string) (string, bool) {
	v := resolve(n)
	s, ok := d.str(v, p)
	if !ok {
		return "", false
	}
	abs, ok := d.hostPath(v, p, s)
	if !ok {
		return "", false
	}
	if problem := checkFile(abs, false); problem != "" {
		problem = strings.TrimSuffix(problem, ", not a WebAssembly file")
		d.errorf(v, p, "%s", describePath(s, abs)+problem)
		return "", false
	}
	return abs, true
}

func (d *decoder) auth(n *yaml.Node, p string) *Auth {
	f := d.mapping(n, p, authKeys, nil)
	if f == nil {
		return nil
	}
	a := &Auth{}
	ids := map[string]string{} // token ID -> where it was first given
	if e, ok := f["tokens_file"]; ok {
		if path, ok := d.existingFile(e.val, join(p, "tokens_file")); ok {
			if data, err := readFile(path); err != nil {
				d.errorf(resolve(e.val), join(p, "tokens_file"), "%v", err)
			} else {
				name := resolve(e.val).Value
				if !filepath.IsAbs(name) {
					name = path
				}
				a.Tokens = append(a.Tokens, d.tokens(data, name, ids)...)
			}
		}
	}
	if e, ok := f["tokens_env"]; ok {
		pp := join(p, "tokens_env")
		v := resolve(e.val)
		if name, ok := d.str(v, pp); ok {
			switch val, set := d.getenv(name); {
			case !envNameRe.MatchString(name):
				d.errorf(v, pp, "invalid variable name %q: use letters, digits and underscores, not starting with a digit", name)
			case !set:
				d.errorf(v, pp, "environment variable %s is not set", name)
			default:
				a.Tokens = append(a.Tokens, d.tokens([]byte(val), "$"+name, ids)...)
			}
		}
	}
	if e, ok := f["oauth"]; ok && !isNull(resolve(e.val)) {
		a.OAuth = d.oauth(e.val, join(p, "oauth"))
	}
	_, file := f["tokens_file"]
	_, env := f["tokens_env"]
	if !file && !env && a.OAuth == nil {
		if _, ok := f["oauth"]; !ok {
			d.errorf(resolve(n), p, "configure tokens_file, tokens_env or oauth (or remove auth, and listen on a loopback address)")
		}
		return nil
	}
	return a
}

// tokens decodes a list of static tokens, from a file or an environment
// variable called name. ids records the token IDs seen so far.
func (d *decoder) tokens(data []byte, name string, ids map[string]string) []Token {
	sub := &decoder{file: name, baseDir: d.baseDir, getenv: d.getenv}
	defer func() { d.errs = append(d.errs, sub.errs...) }()
	root := sub.document(data)
	if root == nil {
		sub.errorf(nil, "", "no tokens: the file must hold a list of tokens, each with id, token (or sha256) and plugins")
		return nil
	}
	items, ok := sub.seq(root, "", "a list of tokens, each with id, token (or sha256) and plugins")
	if !ok {
		return nil
	}
	var out []Token
	for i, it := range items {
		ip := fmt.Sprintf("[%d]", i)
		f := sub.mapping(it, ip, tokenKeys, nil)
		if f == nil {
			continue
		}
		t := Token{}
		valid := true
		if e, ok := f["id"]; !ok {
			sub.errorf(it, ip, "missing required key %q", "id")
			valid = false
		} else if s, ok := sub.str(e.val, ip+".id"); ok {
			v := resolve(e.val)
			switch first, dup := ids[s]; {
			case !tokenIDRe.MatchString(s):
				sub.errorf(v, ip+".id", `invalid token id %q: use 1 to 64 letters, digits, ".", "_" and "-", starting with a letter or digit`, s)
				valid = false
			case dup:
				sub.errorf(v, ip+".id", "duplicate token id %q (first in %s)", s, first)
				valid = false
			default:
				ids[s] = fmt.Sprintf("%s:%d", name, v.Line)
				t.ID = s
			}
		} else {
			valid = false
		}
		te, hasToken := f["token"]
		he, hasHash := f["sha256"]
		switch {
		case hasToken && hasHash:
			sub.errorf(resolve(he.key), ip, "give token or sha256, not both")
			valid = false
		case hasToken:
			v := resolve(te.val)
			if s, ok := sub.str(v, ip+".token"); !ok {
				valid = false
			} else if len(s) < MinTokenLength || strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\r\n") {
				sub.errorf(v, ip+".token", "a token must be at least %d characters with no spaces; generate one with: openssl rand -hex 32", MinTokenLength)
				valid = false
			} else {
				t.SHA256 = sha256Hex(s)
			}
		case hasHash:
			if h, ok := sub.sha256(he.val, ip+".sha256"); ok {
				t.SHA256 = h
			} else {
				valid = false
			}
		default:
			sub.errorf(it, ip, "missing required key %q (or %q, the token's SHA-256)", "token", "sha256")
			valid = false
		}
		if e, ok := f["plugins"]; !ok {
			sub.errorf(it, ip, "missing required key %q: list the plugins the token may use, or [\"*\"] for every plugin", "plugins")
			valid = false
		} else {
			before := len(sub.errs)
			t.Plugins = sub.pluginList(e.val, ip+".plugins")
			if len(sub.errs) > before {
				valid = false
			} else if len(t.Plugins) == 0 {
				sub.errorf(resolve(e.val), ip+".plugins", "must name at least one plugin, or \"*\" for every plugin")
				valid = false
			}
		}
		if valid {
			out = append(out, t)
		}
	}
	if len(sub.errs) > 0 {
		return nil
	}
	return out
}

// pluginList decodes a list of plugin names, or "*".
func (d *decoder) pluginList(n *yaml.Node, p string) []string {
	var out []string
	seen := map[string]bool{}
	for _, it := range d.strList(n, p, "a list of plugin names") {
		ip := fmt.Sprintf("%s[%d]", p, it.index)
		switch {
		case it.val != AllPlugins && !nameRe.MatchString(it.val):
			d.errorf(it.node, ip, "invalid plugin name %q", it.val)
		case seen[it.val]:
			d.errorf(it.node, ip, "plugin %q is already listed", it.val)
		default:
			seen[it.val] = true
			out = append(out, it.val)
		}
	}
	return out
}

func (d *decoder) oauth(n *yaml.Node, p string) *OAuth {
	f := d.mapping(n, p, oauthKeys, nil)
	if f == nil {
		return nil
	}
	o := &OAuth{}
	valid := true
	url := func(key string, required bool, field *string) {
		e, ok := f[key]
		if !ok {
			if required {
				d.errorf(resolve(n), p, "missing required key %q", key)
				valid = false
			}
			return
		}
		v := resolve(e.val)
		s, ok := d.str(v, join(p, key))
		if !ok {
			valid = false
			return
		}
		if problem := checkServiceURL(s); problem != "" {
			d.errorf(v, join(p, key), "invalid URL %q: %s", s, problem)
			valid = false
			return
		}
		*field = s
	}
	url("issuer", true, &o.Issuer)
	url("resource", true, &o.Resource)
	url("jwks_url", false, &o.JWKSURL)
	if e, ok := f["audience"]; ok {
		if s, ok := d.str(e.val, join(p, "audience")); ok && s != "" {
			o.Audience = s
		}
	}
	if o.Audience == "" {
		o.Audience = o.Resource
	}
	if e, ok := f["jwks_file"]; ok {
		if path, ok := d.existingFile(e.val, join(p, "jwks_file")); ok {
			o.JWKSFile = path
		} else {
			valid = false
		}
	}
	_, hasURL := f["jwks_url"]
	_, hasFile := f["jwks_file"]
	switch {
	case hasURL && hasFile:
		d.errorf(resolve(f["jwks_file"].key), p, "give jwks_url or jwks_file, not both")
		valid = false
	case !hasURL && !hasFile:
		d.errorf(resolve(n), p, "missing required key %q (or %q): where the authorization server's signing keys are", "jwks_url", "jwks_file")
		valid = false
	}
	if e, ok := f["authorization_servers"]; ok {
		pp := join(p, "authorization_servers")
		for _, it := range d.strList(e.val, pp, "a list of URLs") {
			if problem := checkServiceURL(it.val); problem != "" {
				d.errorf(it.node, fmt.Sprintf("%s[%d]", pp, it.index), "invalid URL %q: %s", it.val, problem)
				valid = false
				continue
			}
			o.AuthorizationServers = append(o.AuthorizationServers, it.val)
		}
	}
	if len(o.AuthorizationServers) == 0 && o.Issuer != "" {
		o.AuthorizationServers = []string{o.Issuer}
	}
	if e, ok := f["scopes_supported"]; ok {
		for _, it := range d.strList(e.val, join(p, "scopes_supported"), "a list of scopes") {
			o.ScopesSupported = append(o.ScopesSupported, it.val)
		}
	}
	if e, ok := f["plugins"]; ok {
		o.Plugins = d.pluginList(e.val, join(p, "plugins"))
	}
	if !valid {
		return nil
	}
	return o
}

// checkServiceURL checks the URL of an authorization server, a JWKS or this
// server as a resource: https, or http to a loopback host; no credentials
// or fragment.
func checkServiceURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "want an absolute URL such as https://auth.example.com"
	case u.User != nil:
		return "a URL here may not hold credentials"
	case u.Fragment != "" || strings.HasSuffix(s, "#"):
		return "a URL here may not have a fragment"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http":
		if IsLoopback(net.JoinHostPort(u.Hostname(), "0")) {
			return ""
		}
		return "plain http is allowed only to a loopback host; use https"
	}
	return "the scheme must be https"
}

func (d *decoder) metrics(n *yaml.Node, p string) Metrics {
	var m Metrics
	f := d.mapping(n, p, metricsKeys, nil)
	m.Addr = d.addr(f, p)
	return m
}

// addr decodes the "addr" key of the mapping f at p: a listening address
// ("host:port"), or "" when it is unset or invalid (and reported).
func (d *decoder) addr(f map[string]entry, p string) string {
	e, ok := f["addr"]
	if !ok {
		return ""
	}
	s, ok := d.str(e.val, join(p, "addr"))
	if !ok || s == "" {
		return ""
	}
	if problem := checkAddr(s); problem != "" {
		d.errorf(resolve(e.val), join(p, "addr"), "invalid address %q: %s", s, problem)
		return ""
	}
	return s
}

func (d *decoder) tracing(n *yaml.Node, p string) *Tracing {
	r := resolve(n)
	if isNull(r) {
		return nil
	}
	f := d.mapping(n, p, tracingKeys, nil)
	if f == nil {
		return nil
	}
	t := &Tracing{SampleRatio: DefaultSampleRatio, ServiceName: DefaultServiceName}
	if e, ok := f["endpoint"]; !ok {
		d.errorf(r, p, "missing required key %q: the OTLP/HTTP traces URL of a collector, such as http://127.0.0.1:4318/v1/traces", "endpoint")
	} else {
		v := resolve(e.val)
		if s, ok := d.str(v, join(p, "endpoint")); ok {
			u, err := url.Parse(s)
			switch {
			case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
				d.errorf(v, join(p, "endpoint"), "invalid URL %q: want http:// or https:// and a host, such as http://127.0.0.1:4318/v1/traces", s)
			case u.User != nil:
				d.errorf(v, join(p, "endpoint"), "invalid URL %q: put credentials in headers, not in the URL", s)
			default:
				t.Endpoint = s
			}
		}
	}
	if e, ok := f["headers"]; ok {
		pp := join(p, "headers")
		keys, vals, nodes := d.stringMap(e.val, pp)
		for _, k := range keys {
			if v, ok := d.expand(vals[k], nodes[k].val, join(pp, k)); ok {
				vals[k] = v
			} else {
				delete(vals, k)
			}
		}
		t.Headers = vals
	}
	if e, ok := f["sample_ratio"]; ok {
		v := resolve(e.val)
		pp := join(p, "sample_ratio")
		ratio, err := strconv.ParseFloat(v.Value, 64)
		switch {
		case v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!float" && v.ShortTag() != "!!int") || err != nil:
			d.typeError(v, pp, "a number from 0 to 1")
		case ratio < 0 || ratio > 1:
			d.errorf(v, pp, "must be between 0 and 1, got %s", v.Value)
		default:
			t.SampleRatio = ratio
		}
	}
	if e, ok := f["service_name"]; ok {
		if s, ok := d.str(e.val, join(p, "service_name")); ok && s != "" {
			t.ServiceName = s
		}
	}
	return t
}

// sha256Hex is the SHA-256 of s, in lower-case hex.
func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
