package pdk

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// uriTemplate is a parsed RFC 6570 level-1 URI template: literal text and
// simple {name} expressions.
type uriTemplate struct {
	pattern *regexp.Regexp
	vars    []string
}

// varName matches an RFC 6570 variable name (without percent-encoded
// characters).
var varName = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)

// varValue matches the expansion of a level-1 variable. Expansions encode
// every reserved character, so a value never contains '/', '?' or '#';
// other characters are accepted as clients do not always encode them.
const varValue = `([^/?#]+)`

// parseURITemplate parses a level-1 URI template. Expressions with
// operators, modifiers or several variables are rejected.
func parseURITemplate(tmpl string) (*uriTemplate, error) {
	var (
		expr strings.Builder
		vars []string
		rest = tmpl
	)
	expr.WriteByte('^')
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			expr.WriteString(regexp.QuoteMeta(rest))
			break
		}
		if rest[open] == '}' {
			return nil, fmt.Errorf("uri template %q: unmatched '}'", tmpl)
		}
		expr.WriteString(regexp.QuoteMeta(rest[:open]))
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("uri template %q: unclosed '{'", tmpl)
		}
		name := rest[open+1 : open+end]
		if !varName.MatchString(name) {
			return nil, fmt.Errorf("uri template %q: unsupported expression {%s}: only level-1 {name} expressions are supported", tmpl, name)
		}
		for _, v := range vars {
			if v == name {
				return nil, fmt.Errorf("uri template %q: variable %q appears twice", tmpl, name)
			}
		}
		vars = append(vars, name)
		expr.WriteString(varValue)
		rest = rest[open+end+1:]
	}
	expr.WriteByte('$')
	return &uriTemplate{pattern: regexp.MustCompile(expr.String()), vars: vars}, nil
}

// match reports whether uri is an expansion of the template and, if so,
// returns the percent-decoded value of each variable.
func (t *uriTemplate) match(uri string) (map[string]string, bool) {
	m := t.pattern.FindStringSubmatch(uri)
	if m == nil {
		return nil, false
	}
	vars := make(map[string]string, len(t.vars))
	for i, name := range t.vars {
		v, err := url.PathUnescape(m[i+1])
		if err != nil {
			return nil, false
		}
		vars[name] = v
	}
	return vars, true
}
