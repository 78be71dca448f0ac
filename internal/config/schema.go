package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var (
	nameRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	prefixRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.-]{0,31}$`)
)

// Keys of each mapping, in documentation order (used in messages).
var (
	httpKeys   = []string{"addr", "allowed_origins", "allowed_hosts", "legacy_sse", "session_idle_timeout", "max_sessions", "max_connections", "max_listens", "max_listens_per_client", "trusted_proxies", "read_header_timeout", "read_timeout", "write_timeout", "idle_timeout", "drain_timeout", "tls", "auth"}
	pluginKeys = []string{"name", "source", "path", "sha256", "verify", "prefix", "config", "limits", "grants", "compile", "tasks"}
	limitKeys  = []string{"memory", "call_timeout", "host_timeout", "max_instances", "max_output"}
	grantKeys  = []string{"allowed_hosts", "allowed_paths", "env"}
	mountKeys  = []string{"host", "guest", "read_only"}
)

// Hints for keys written at the wrong level.
var (
	rootHints   = map[string]string{}
	pluginHints = map[string]string{}
	limitHints  = map[string]string{"compile": "it belongs to the plugin, beside limits"}
)

func init() {
	for _, k := range pluginKeys {
		rootHints[k] = "plugin settings belong in an item of the plugins list"
	}
	for _, k := range httpKeys {
		rootHints[k] = "it belongs under http"
	}
	rootHints["allowed_hosts"] = "it belongs under http, or under a plugin's grants"
	for _, k := range limitKeys {
		pluginHints[k] = "it belongs under limits"
	}
	for _, k := range grantKeys {
		pluginHints[k] = "it belongs under grants"
	}
	for _, k := range verifyKeys {
		pluginHints[k] = "it belongs under verify"
	}
}

func (d *decoder) http(n *yaml.Node, p string) HTTP {
	h := DefaultHTTP()
	f := d.mapping(n, p, httpKeys, nil)
	for _, t := range []struct {
		key   string
		field *time.Duration
	}{
		{"session_idle_timeout", &h.SessionIdleTimeout},
		{"read_header_timeout", &h.ReadHeaderTimeout},
		{"read_timeout", &h.ReadTimeout},
		{"write_timeout", &h.WriteTimeout},
		{"idle_timeout", &h.IdleTimeout},
		{"drain_timeout", &h.DrainTimeout},
	} {
		if e, ok := f[t.key]; ok {
			if v, ok := d.duration(e.val, join(p, t.key)); ok {
				*t.field = v
			}
		}
	}
	if e, ok := f["max_sessions"]; ok {
		if v, ok := d.count(e.val, join(p, "max_sessions"), 1); ok {
			h.MaxSessions = v
		}
	}
	if e, ok := f["max_connections"]; ok {
		if v, ok := d.count(e.val, join(p, "max_connections"), 0); ok {
			h.MaxConnections = v
		}
	}
	if e, ok := f["max_listens"]; ok {
		if v, ok := d.count(e.val, join(p, "max_listens"), 0); ok {
			h.MaxListens = v
		}
	}
	if e, ok := f["max_listens_per_client"]; ok {
		if v, ok := d.count(e.val, join(p, "max_listens_per_client"), 1); ok {
			h.MaxListensPerClient = v
		}
	}
	if e, ok := f["trusted_proxies"]; ok {
		pp := join(p, "trusted_proxies")
		h.TrustedProxies = d.normalizeList(d.strList(e.val, pp, "a list of addresses"), pp, "proxy address", checkProxy)
	}
	h.Addr = d.addr(f, p)
	if e, ok := f["allowed_origins"]; ok {
		pp := join(p, "allowed_origins")
		h.AllowedOrigins = d.normalizeList(d.strList(e.val, pp, "a list of origins"), pp, "origin", checkOrigin)
	}
	if e, ok := f["allowed_hosts"]; ok {
		pp := join(p, "allowed_hosts")
		h.AllowedHosts = d.normalizeList(d.strList(e.val, pp, "a list of host names"), pp, "host", checkHostHeader)
	}
	if e, ok := f["legacy_sse"]; ok {
		h.LegacySSE, _ = d.boolean(e.val, join(p, "legacy_sse"))
	}
	d.service(f, p, &h) // tls and auth (service.go)
	return h
}

// count decodes an integer in min..maxHTTPCount.
func (d *decoder) count(n *yaml.Node, p string, min int64) (int, bool) {
	v, ok := d.integer(n, p)
	if !ok {
		return 0, false
	}
	if v < min || v > maxHTTPCount {
		d.errorf(resolve(n), p, "must be between %d and %d, got %d", min, maxHTTPCount, v)
		return 0, false
	}
	return int(v), true
}

// normalizeList checks and normalizes each item, reporting problems and
// items that normalize to one listed before.
// checkProxy normalizes a trusted proxy's address, an IP address or a
// CIDR range, to a range ("10.0.0.5" becomes "10.0.0.5/32").
func checkProxy(s string) (string, string) {
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return "", "write an IP address (10.0.0.5) or a CIDR range (10.0.0.0/8)"
		}
		if pfx.Masked() != pfx {
			return "", fmt.Sprintf("the range has bits set past its length; write %s", pfx.Masked())
		}
		return pfx.String(), ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", "write an IP address (10.0.0.5) or a CIDR range (10.0.0.0/8), not a host name"
	}
	if a.Zone() != "" {
		return "", "remove the zone (%" + a.Zone() + "): a request's address carries none"
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()).String(), ""
}

func (d *decoder) normalizeList(items []listItem, p, what string, check func(string) (string, string)) []string {
	var out []string
	first := map[string]int{}
	for _, it := range items {
		ip := fmt.Sprintf("%s[%d]", p, it.index)
		norm, problem := check(it.val)
		if problem != "" {
			d.errorf(it.node, ip, "invalid %s %q: %s", what, it.val, problem)
			continue
		}
		if line, dup := first[norm]; dup {
			d.errorf(it.node, ip, "%s %q is already listed on line %d", what, it.val, line)
			continue
		}
		first[norm] = it.node.Line
		out = append(out, norm)
	}
	return out
}

func (d *decoder) plugins(n *yaml.Node, p string) []Plugin {
	if r := resolve(n); r.Kind == yaml.MappingNode {
		d.errorf(r, p, `expected a list of plugins, got a mapping; write each plugin as a list item starting with "- name: "`)
		return nil
	}
	items, ok := d.seq(n, p, "a list of plugins")
	if !ok {
		return nil
	}
	var out []Plugin
	names := map[string]*yaml.Node{}
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", p, i)
		pl, nameNode := d.plugin(it, ip)
		if nameNode != nil {
			if first, dup := names[pl.Name]; dup {
				d.errorf(nameNode, ip+".name", "duplicate plugin name %q (first used on line %d)", pl.Name, first.Line)
			} else {
				names[pl.Name] = nameNode
			}
		}
		out = append(out, pl)
	}
	return out
}

// plugin decodes one plugin. It returns the node of the name when the name
// is valid, for the duplicate check.
func (d *decoder) plugin(n *yaml.Node, p string) (Plugin, *yaml.Node) {
	pl := Plugin{Limits: DefaultLimits(), Compile: CompileLazy}
	if isNull(n) {
		d.errorf(n, p, "empty list item; a plugin needs at least name and source (or path)")
		return pl, nil
	}
	f := d.mapping(n, p, pluginKeys, pluginHints)
	if f == nil {
		return pl, nil
	}
	var nameNode *yaml.Node
	if _, ok := f["name"]; !ok {
		d.errorf(n, p, "missing required key %q", "name")
	}
	if e, ok := f["name"]; ok {
		pp := join(p, "name")
		v := resolve(e.val)
		if s, ok := d.str(v, pp); ok {
			switch {
			case s == "":
				d.errorf(v, pp, "must not be empty")
			case !nameRe.MatchString(s):
				d.errorf(v, pp, `invalid plugin name %q: use 1 to 64 lower-case letters, digits, "_" and "-", starting with a letter or digit`, s)
			default:
				pl.Name, nameNode = s, v
			}
		}
	}
	d.source(n, p, f, &pl)
	if e, ok := f["prefix"]; ok {
		pp := join(p, "prefix")
		if s, ok := d.str(e.val, pp); ok && s != "" {
			if !prefixRe.MatchString(s) {
				d.errorf(resolve(e.val), pp, `invalid prefix %q: use 1 to 32 letters, digits, "." and "-", starting with a letter`, s)
			} else {
				pl.Prefix = s
			}
		}
	}
	if e, ok := f["config"]; ok {
		pp := join(p, "config")
		_, vals, nodes := d.stringMap(e.val, pp)
		for k := range vals {
			if strings.TrimSpace(k) == "" {
				d.errorf(nodes[k].key, pp, "keys must not be blank")
				delete(vals, k)
			}
		}
		pl.Config = vals
	}
	if e, ok := f["limits"]; ok {
		pl.Limits = d.limits(e.val, join(p, "limits"))
	}
	if e, ok := f["grants"]; ok {
		pl.Grants = d.grants(e.val, join(p, "grants"))
	}
	if e, ok := f["compile"]; ok {
		pp := join(p, "compile")
		v := resolve(e.val)
		if s, ok := d.str(v, pp); ok {
			switch c := Compile(s); c {
			case CompileLazy, CompileEager:
				pl.Compile = c
			default:
				d.errorf(v, pp, `must be "lazy" (compile on the first call) or "eager" (compile at start), got %q`, s)
			}
		}
	}
	if e, ok := f["tasks"]; ok {
		pp := join(p, "tasks")
		names, vals, nodes := d.stringMap(e.val, pp)
		for _, name := range names {
			switch vals[name] {
			case "auto", "never", "always", "required":
				if pl.Tasks == nil {
					pl.Tasks = map[string]string{}
				}
				pl.Tasks[name] = vals[name]
			default:
				d.errorf(nodes[name].val, join(pp, name), `must be "auto" (a task once the call runs past tasks.after), "never", "always" or "required", got %q`, vals[name])
			}
		}
	}
	return pl, nameNode
}

func (d *decoder) limits(n *yaml.Node, p string) Limits {
	l := DefaultLimits()
	f := d.mapping(n, p, limitKeys, limitHints)
	if e, ok := f["memory"]; ok {
		if v, ok := d.size(e.val, join(p, "memory"), maxMemory, ", the most a 32-bit WebAssembly memory can hold"); ok {
			l.MemoryPages = uint32((v + PageSize - 1) / PageSize)
		}
	}
	if e, ok := f["call_timeout"]; ok {
		if v, ok := d.duration(e.val, join(p, "call_timeout")); ok {
			l.CallTimeout = v
			if d.callTimeoutAt == nil {
				d.callTimeoutAt = map[string]*yaml.Node{}
			}
			d.callTimeoutAt[join(p, "call_timeout")] = resolve(e.val)
		}
	}
	if e, ok := f["host_timeout"]; ok {
		if v, ok := d.duration(e.val, join(p, "host_timeout")); ok {
			l.HostTimeout = v
		}
	}
	if e, ok := f["max_instances"]; ok {
		pp := join(p, "max_instances")
		if v, ok := d.integer(e.val, pp); ok {
			if v < 0 || v > maxMaxInstances {
				d.errorf(resolve(e.val), pp, "must be between 0 (automatic) and %d, got %d", maxMaxInstances, v)
			} else {
				l.MaxInstances = int(v)
			}
		}
	}
	if e, ok := f["max_output"]; ok {
		if v, ok := d.size(e.val, join(p, "max_output"), maxOutput, ""); ok {
			l.MaxOutput = v
		}
	}
	return l
}

func (d *decoder) grants(n *yaml.Node, p string) Grants {
	var g Grants
	f := d.mapping(n, p, grantKeys, nil)
	if e, ok := f["allowed_hosts"]; ok {
		pp := join(p, "allowed_hosts")
		g.AllowedHosts = d.normalizeList(d.strList(e.val, pp, "a list of host names"), pp, "host", checkGrantHost)
	}
	if e, ok := f["allowed_paths"]; ok {
		g.AllowedPaths = d.mounts(e.val, join(p, "allowed_paths"))
	}
	if e, ok := f["env"]; ok {
		pp := join(p, "env")
		keys, vals, nodes := d.stringMap(e.val, pp)
		for _, k := range keys {
			if !envNameRe.MatchString(k) {
				d.errorf(nodes[k].key, pp, "invalid variable name %q: use letters, digits and underscores, not starting with a digit", k)
				delete(vals, k)
				continue
			}
			v, ok := d.expand(vals[k], nodes[k].val, join(pp, k))
			if !ok {
				delete(vals, k)
				continue
			}
			if strings.IndexByte(v, 0) >= 0 {
				d.errorf(nodes[k].val, join(pp, k), "the expanded value contains a NUL character")
				delete(vals, k)
				continue
			}
			vals[k] = v
		}
		if len(vals) > 0 {
			g.Env = vals
		}
	}
	return g
}

// expand replaces the ${NAME} references in a value (see expandEnv),
// reporting each problem at n.
func (d *decoder) expand(val string, n *yaml.Node, p string) (string, bool) {
	var missing []string // variables unset or holding the placeholder
	v, problems := expandEnv(val, func(name string) (string, bool) {
		v, ok := d.getenv(name)
		if !ok || v == EnvPlaceholder(name) {
			missing = append(missing, name)
		}
		return v, ok
	})
	for _, pr := range problems {
		d.errorf(n, p, "%s", pr)
		for _, m := range missing {
			if pr == unsetProblem(m) || pr == placeholderProblem(m) {
				d.errs[len(d.errs)-1].EnvVar = m
			}
		}
	}
	return v, len(problems) == 0
}

func (d *decoder) mounts(n *yaml.Node, p string) []Mount {
	items, ok := d.seq(n, p, "a list of mappings with host, guest and read_only")
	if !ok {
		return nil
	}
	var out []Mount
	hosts, guests := map[string]int{}, map[string]int{}
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", p, i)
		if isNull(it) {
			d.errorf(it, ip, "empty list item; a mount needs at least host")
			continue
		}
		f := d.mapping(it, ip, mountKeys, nil)
		if f == nil {
			continue
		}
		var m Mount
		valid := true
		he, ok := f["host"]
		if !ok {
			d.errorf(it, ip, "missing required key %q", "host")
			valid = false
		} else {
			pp := join(ip, "host")
			v := resolve(he.val)
			s, ok := d.str(v, pp)
			if ok && s == "" {
				d.errorf(v, pp, "must not be empty")
				ok = false
			}
			if ok {
				var abs string
				if abs, ok = d.hostPath(v, pp, s); ok {
					if problem := checkFile(abs, true); problem != "" {
						d.errorf(v, pp, "%s", describePath(s, abs)+problem)
						ok = false
					}
				}
				m.Host = abs
			}
			valid = valid && ok
		}
		guestNode := it
		if ge, ok := f["guest"]; ok {
			pp := join(ip, "guest")
			v := resolve(ge.val)
			if s, ok := d.str(v, pp); !ok {
				valid = false
			} else if s != "" {
				switch {
				case !strings.HasPrefix(s, "/"):
					d.errorf(v, pp, "guest path %q must be absolute, such as /data", s)
					valid = false
				case strings.IndexByte(s, 0) >= 0:
					d.errorf(v, pp, "must not contain a NUL character")
					valid = false
				default:
					m.Guest = path.Clean(s)
					guestNode = v
				}
			}
		}
		if e, ok := f["read_only"]; ok {
			if b, ok := d.boolean(e.val, join(ip, "read_only")); ok {
				m.ReadOnly = b
			} else {
				valid = false
			}
		}
		if !valid {
			continue
		}
		if m.Guest == "" {
			m.Guest = defaultGuest(m.Host)
			guestNode = resolve(he.val)
		}
		hostNode := resolve(he.val)
		if line, dup := hosts[m.Host]; dup {
			d.errorf(hostNode, ip, "host directory %s is already mounted on line %d", m.Host, line)
			continue
		}
		if line, dup := guests[m.Guest]; dup {
			d.errorf(guestNode, ip, "guest path %s is already mounted on line %d", m.Guest, line)
			continue
		}
		hosts[m.Host] = hostNode.Line
		guests[m.Guest] = guestNode.Line
		out = append(out, m)
	}
	return out
}

// defaultGuest maps a host directory to the same path inside the plugin.
func defaultGuest(host string) string {
	g := filepath.ToSlash(host)
	if !strings.HasPrefix(g, "/") { // a Windows volume, as in C:/data
		g = "/" + g
	}
	return path.Clean(g)
}

// hostPath resolves a path from the file against the base directory.
func (d *decoder) hostPath(n *yaml.Node, p, s string) (string, bool) {
	switch {
	case s == "":
		d.errorf(n, p, "must not be empty")
		return "", false
	case strings.IndexByte(s, 0) >= 0:
		d.errorf(n, p, "must not contain a NUL character")
		return "", false
	case s == "~" || strings.HasPrefix(s, "~/") || strings.HasPrefix(s, `~\`):
		d.errorf(n, p, "%q: ~ is not expanded; use an absolute path or one relative to the configuration file", s)
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(d.baseDir, s)
	}
	return filepath.Clean(s), true
}

// checkFile checks that abs exists and is a directory (dir) or not one.
func checkFile(abs string, dir bool) string {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "cannot be used: " + err.Error()
	case dir && !fi.IsDir():
		return "is not a directory"
	case !dir && fi.IsDir():
		return "is a directory, not a WebAssembly file"
	}
	return ""
}

// describePath names a path for a message, showing what a relative path
// resolved to.
func describePath(written, abs string) string {
	if written == abs {
		return fmt.Sprintf("%s ", abs)
	}
	return fmt.Sprintf("%s (resolved to %s) ", written, abs)
}
