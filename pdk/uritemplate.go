package pdk

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// uriTemplate is a parsed RFC 6570 level-1 URI template: literal text and
// simple {name} expressions. It is matched by hand rather than with package
// regexp, which would add a quarter of a megabyte of code to every plugin,
// whether it has templates or not (read_resource is always exported).
type uriTemplate struct {
	// lits are the literal texts around the variables: lits[0], then
	// vars[0], lits[1], vars[1], ... and lits[len(vars)], the last one.
	// Those between two variables may be empty.
	lits []string
	vars []string
}

// parseURITemplate parses a level-1 URI template. Expressions with
// operators, modifiers or several variables are rejected.
func parseURITemplate(tmpl string) (*uriTemplate, error) {
	if !utf8.ValidString(tmpl) {
		return nil, templateError(tmpl, "invalid UTF-8")
	}
	t := &uriTemplate{}
	rest := tmpl
	for {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.lits = append(t.lits, rest)
			return t, nil
		}
		if rest[open] == '}' {
			return nil, templateError(tmpl, "unmatched '}'")
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, templateError(tmpl, "unclosed '{'")
		}
		name := rest[open+1 : open+end]
		if !isVarName(name) {
			return nil, templateError(tmpl, "unsupported expression {"+name+"}: only level-1 {name} expressions are supported")
		}
		for _, v := range t.vars {
			if v == name {
				return nil, templateError(tmpl, "variable "+strconv.Quote(name)+" appears twice")
			}
		}
		t.lits = append(t.lits, rest[:open])
		t.vars = append(t.vars, name)
		rest = rest[open+end+1:]
	}
}

func templateError(tmpl, msg string) error {
	return errors.New("uri template " + strconv.Quote(tmpl) + ": " + msg)
}

// isVarName reports whether s is an RFC 6570 variable name (without
// percent-encoded characters): one or more words of letters, digits and
// '_', separated by single dots.
func isVarName(s string) bool {
	word := false // the last byte read is part of a word
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
			word = true
		case c == '.' && word:
			word = false
		default:
			return false
		}
	}
	return word
}

// match reports whether uri is an expansion of the template and, if so,
// returns the percent-decoded value of each variable.
//
// A variable's value is one or more characters other than '/', '?' and
// '#': expansions encode every reserved character, so a value never
// contains those; other characters are accepted, as clients do not always
// encode them. Where a URI can be split in several ways, as "a.b.txt" by
// "{name}.txt" or any URI by "{a}{b}", each variable takes the longest
// value that lets the rest match, from the first on: what the regular
// expression ^lit0([^/?#]+)lit1([^/?#]+)...$ would capture, character by
// character as package regexp reads UTF-8.
func (t *uriTemplate) match(uri string) (map[string]string, bool) {
	k := len(t.vars)
	first, last := t.lits[0], t.lits[k]
	if !strings.HasPrefix(uri, first) {
		return nil, false
	}
	if k == 0 {
		if len(uri) != len(first) {
			return nil, false
		}
		return map[string]string{}, true
	}
	if len(uri) <= len(first)+len(last) || !strings.HasSuffix(uri, last) {
		return nil, false
	}
	// rest[i*n+p] is whether variables i, i+1, ... and the literals that
	// follow them match uri[p:] to its end, variable i taking at least
	// the character at p. It is filled from the last variable and from
	// the end of the URI, so each entry needs only the ones after it:
	// time and space in O(variables × len(uri)), however the URI is
	// built.
	n := len(uri) + 1
	rest := make([]bool, k*n)
	for i := k - 1; i >= 0; i-- {
		for p := len(uri) - 1; p >= len(first); p-- {
			if !valueChar(uri[p]) {
				continue
			}
			next := p + charLen(uri, p)
			rest[i*n+p] = t.follows(uri, i, next, rest) || (next < len(uri) && rest[i*n+next])
		}
	}

	vars := make(map[string]string, k)
	p := len(first)
	for i, name := range t.vars {
		if !rest[i*n+p] {
			return nil, false
		}
		// The longest value that the rest of the template follows.
		end := -1
		for q := p + charLen(uri, p); ; q += charLen(uri, q) {
			if t.follows(uri, i, q, rest) {
				end = q
			}
			if q == len(uri) || !valueChar(uri[q]) {
				break
			}
		}
		v, ok := pathUnescape(uri[p:end])
		if !ok {
			return nil, false
		}
		vars[name] = v
		p = end + len(t.lits[i+1])
	}
	return vars, true
}

// follows reports whether the rest of the template after variable i (the
// literal after it, then the next variable, if any) matches uri[q:] to its
// end, given rest for the variables after i.
func (t *uriTemplate) follows(uri string, i, q int, rest []bool) bool {
	lit := t.lits[i+1]
	if !strings.HasPrefix(uri[q:], lit) {
		return false
	}
	q += len(lit)
	if i+1 == len(t.vars) {
		return q == len(uri)
	}
	return q < len(uri) && rest[(i+1)*(len(uri)+1)+q]
}

// valueChar reports whether the character starting with byte c may be part
// of a variable's value.
func valueChar(c byte) bool {
	return c != '/' && c != '?' && c != '#'
}

// charLen returns the length of the character at s[i], as package regexp
// steps through UTF-8: one byte for ASCII and for each byte that does not
// start a valid encoding.
func charLen(s string, i int) int {
	if s[i] < utf8.RuneSelf {
		return 1
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return n
}

// pathUnescape decodes the percent-encoded octets of s as
// url.PathUnescape does ('+' stays as it is), and reports false when a '%'
// is not followed by two hexadecimal digits.
func pathUnescape(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), true
}

// unhex returns the value of the hexadecimal digit c.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
