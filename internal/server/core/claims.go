package core

import (
	"fmt"
	"strings"
	"sync"
)

// Who owns a name or URI (RATIONALE.md, "Why do names and URIs belong to
// the first plugin to claim them?"):
//
//   - a tool or prompt name ("p_name") or URI ("p+uri") that carries the
//     prefix of a configured plugin is that plugin's alone: no other
//     plugin may offer it, even before that plugin does;
//   - otherwise a name, URI or URI template belongs to the plugin that
//     claimed it first. At start-up (and at each reload) the plugins claim
//     together: a name, URI or template shape two of them offer stops the
//     start. Afterwards (a plugin's lists change at run time), a claim of
//     what another plugin owns is refused, logged once and counted in the
//     metrics;
//   - URI templates are compared by their shape, without the names of
//     their variables ("x://{a}" and "x://{b}" are one), and a URI that
//     templates of several plugins match is served by the template claimed
//     first; a resource added at run time that another plugin's older
//     template matches is refused.
//
// A tool name must also follow MCP's naming rules: a name longer than
// MaxNameLength is refused, and one with characters the rules do not list
// is offered with a warning (the rules say "should").

// MaxNameLength is the longest tool name MCP allows (server/tools, "Tool
// Names": 1 to 128 characters), prefix included: a longer one is refused.
const MaxNameLength = 128

// The reasons a plugin's item is refused: the values of the reason label
// of metrics.Metrics.Refused.
const (
	reasonConflict = "conflict" // another plugin owns its name, URI or shape
	reasonInvalid  = "invalid"  // its name breaks MCP's rules, or its schema does not compile
)

// claims is the core's record of who owns what, besides the maps by key.
// Guarded by Core.mu.
type claims struct {
	prefixes map[string]*mount // plugin prefix -> its mount
	shapes   map[string]*mount // URI template shape -> the mount of the template
	// order is the order of each template's claim: 0 for those of the
	// last install, then one number per change of a plugin's lists.
	order   map[string]uint64
	seq     uint64
	current uint64 // the order of the claims being made
	initial bool   // installing: claims are the set's own
}

func (c *claims) reset(ms []*mount) {
	c.prefixes = map[string]*mount{}
	for _, m := range ms {
		if m.Prefix != "" {
			c.prefixes[m.Prefix] = m
		}
	}
	c.shapes, c.order, c.seq = map[string]*mount{}, map[string]uint64{}, 0
}

// carriedPrefix returns the prefix a key of the kind carries: what comes
// before the first "_" of a name or "+" of a URI (neither is allowed in a
// prefix), after "ui://" in a view's URI (mount.exposedURI), or "".
func carriedPrefix(kind Kind, key string) string {
	sep := "_"
	if kind == Resources || kind == Templates {
		sep = "+"
		key = strings.TrimPrefix(key, uiScheme)
	}
	p, _, ok := strings.Cut(key, sep)
	if !ok {
		return ""
	}
	return p
}

// templateShape is a URI template without the names of its variables,
// where they do not show in the URIs it matches: in expressions without an
// operator or with +, #, . or /. The names of ;, ? and & expressions
// appear in the URI, so they stay.
func templateShape(t string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(t, '{')
		if open < 0 {
			b.WriteString(t)
			return b.String()
		}
		end := strings.IndexByte(t[open:], '}')
		if end < 0 {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:open+1])
		expr := t[open+1 : open+end]
		t = t[open+end:]
		op := ""
		if expr != "" && strings.ContainsRune("+#./;?&", rune(expr[0])) {
			op, expr = expr[:1], expr[1:]
		}
		b.WriteString(op)
		if op == ";" || op == "?" || op == "&" {
			b.WriteString(expr)
			continue
		}
		for i, spec := range strings.Split(expr, ",") {
			if i > 0 {
				b.WriteByte(',')
			}
			// Keep the modifier (":3" or "*"), not the name.
			if j := strings.IndexAny(spec, ":*"); j >= 0 {
				b.WriteString(spec[j:])
			}
		}
	}
}

// claim records m as the owner of the key of the kind, unless the rules
// above give it to another plugin: it then reports the refusal and returns
// false. core.mu must be held.
func (m *mount) claim(owners map[string]*mount, kind Kind, key string) bool {
	c := m.core
	cl := &c.claims
	if prev, ok := owners[key]; ok && prev != m && !prev.retired {
		m.refuse(kind, key, reasonConflict, fmt.Sprintf("plugin %q offers it already (%v)", prev.name, ErrConflict))
		return false
	}
	if owner := cl.prefixes[carriedPrefix(kind, key)]; owner != nil && owner != m && !owner.retired {
		m.refuse(kind, key, reasonConflict, fmt.Sprintf("it carries the prefix of plugin %q, whose names and URIs are its own", owner.name))
		return false
	}
	switch kind {
	case Templates:
		shape := templateShape(key)
		if prev := cl.shapes[shape]; prev != nil && prev != m && !prev.retired {
			m.refuse(kind, key, reasonConflict, fmt.Sprintf("plugin %q offers a template of the same shape already", prev.name))
			return false
		}
		cl.shapes[shape] = m
		if _, ok := cl.order[key]; !ok || owners[key] != m {
			cl.order[key] = cl.current
		}
	case Resources:
		if owners[key] != m && !cl.initial {
			// A resource offered now that another plugin's template serves
			// would take that URI from it.
			if t, _ := c.matchingTemplate(key); t != nil && t != m && !t.retired {
				m.refuse(kind, key, reasonConflict, fmt.Sprintf("a resource template of plugin %q serves that URI already", t.name))
				return false
			}
		}
	}
	owners[key] = m
	return true
}

// unclaim forgets the claim of the key of the kind. core.mu must be held.
func (c *Core) unclaim(owners map[string]*mount, kind Kind, key string) {
	if kind == Templates {
		if m := owners[key]; m != nil && c.claims.shapes[templateShape(key)] == m {
			delete(c.claims.shapes, templateShape(key))
		}
		delete(c.claims.order, key)
	}
	delete(owners, key)
}

// matchingTemplate returns the first template that matches uri (in the
// order of compileTemplates) and its mount, or nil. c.mu must be held.
func (c *Core) matchingTemplate(uri string) (*mount, string) {
	if c.templateOrder == nil {
		c.templateOrder = c.compileTemplates()
	}
	for _, t := range c.templateOrder {
		if t.re != nil && t.re.MatchString(uri) {
			return c.templates[t.key], t.key
		}
	}
	return nil, ""
}

// validToolName checks an exposed tool name against MCP's naming rules. A
// name the rules refuse (refused) is not offered; one with characters
// the rules do not list gets a warning (why), and is offered.
func validToolName(name string) (why string, refused bool) {
	if name == "" || len(name) > MaxNameLength {
		return fmt.Sprintf("the name is %d characters long; MCP allows 1 to %d", len(name), MaxNameLength), true
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("the name has %q, which MCP's naming rules do not list (letters, digits, _, - and .)", r), false
		}
	}
	return "", false
}

// reports keeps a plugin's refusals and warnings logged once each.
type reports struct {
	mu    sync.Mutex
	seen  map[string]bool
	quiet bool // maxReports reached: the rest are only counted
}

// maxReports bounds the refusals and warnings one plugin set logs: a
// plugin that lists ever new bad names is counted, not logged.
const maxReports = 100

// logOnce reports whether the item (kind and key) of m is to be logged:
// the first time only, and up to maxReports per plugin.
func (m *mount) logOnce(kind Kind, key string) bool {
	r := &m.reports
	r.mu.Lock()
	defer r.mu.Unlock()
	id := kind.String() + "\x00" + key
	if r.seen[id] || r.quiet {
		return false
	}
	if len(r.seen) >= maxReports {
		r.quiet = true
		m.core.log.Warn("more refusals and warnings of this plugin are counted (hangar_plugin_refused_total), not logged", "plugin", m.name)
		return false
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[id] = true
	return true
}

// refuse reports an item of m that is not offered: logged once, counted
// each time.
func (m *mount) refuse(kind Kind, key, reason, why string) {
	m.core.metrics.Refused(m.name, kind.String(), reason)
	if m.logOnce(kind, key) {
		m.core.log.Error(fmt.Sprintf("ignoring the plugin's %s: %s", kind, why), kind.String(), shorten(key), "plugin", m.name)
	}
}

// warn reports, once, an item of m that is offered all the same.
func (m *mount) warn(kind Kind, key, why string) {
	if m.logOnce(kind, key) {
		m.core.log.Warn(fmt.Sprintf("the plugin's %s: %s", kind, why), kind.String(), shorten(key), "plugin", m.name)
	}
}

// shorten bounds a name or URI for the log.
func shorten(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:max], len(s))
}
