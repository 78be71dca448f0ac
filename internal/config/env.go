package config

import (
	"fmt"
	"regexp"
	"strings"
)

// envNameRe is what Hangar accepts as an environment variable name, both as
// a key of grants.env and inside ${...}.
var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expandEnv replaces each ${NAME} in s with the value getenv reports for
// NAME; "$$" is a literal "$". It returns every problem found: unset
// variables, malformed references and "$NAME" written without braces.
// A "$" followed by anything else is kept literally.
func expandEnv(s string, getenv func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var (
		b        strings.Builder
		problems []string
		seen     = map[string]bool{}
	)
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				add(fmt.Sprintf("unterminated %q; write ${NAME}, or $$ for a literal $", s[i:]))
				return "", problems
			}
			name := s[i+2 : i+2+end]
			i += 2 + end
			switch {
			case isShellOp(name):
				add(fmt.Sprintf("${%s}: defaults and other shell operators are not supported; only ${NAME}", name))
			case !envNameRe.MatchString(name):
				add(fmt.Sprintf("invalid reference ${%s}: a name is letters, digits and underscores, not starting with a digit", name))
			default:
				v, ok := getenv(name)
				if !ok {
					add(unsetProblem(name))
					continue
				}
				if v == EnvPlaceholder(name) {
					add(placeholderProblem(name))
					continue
				}
				b.WriteString(v)
			}
		case next == '_' || next >= 'A' && next <= 'Z' || next >= 'a' && next <= 'z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			add(fmt.Sprintf("%q is not expanded: write ${%s} to use the variable, or $%s for a literal $", s[i:j], s[i+1:j], s[i:j]))
			b.WriteString(s[i:j])
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	if len(problems) > 0 {
		return "", problems
	}
	return b.String(), nil
}

// EnvPlaceholder is the value hangar client-config writes for a variable
// it has no value for, in the env block of an MCP client's entry for
// hangar. A ${NAME} reference to a variable holding it is an error, as if
// the variable were not set, so that a placeholder left in place is not
// passed to a plugin as a value.
func EnvPlaceholder(name string) string { return "<value of " + name + ">" }

func unsetProblem(name string) string {
	return fmt.Sprintf("environment variable %s is not set", name)
}

func placeholderProblem(name string) string {
	return fmt.Sprintf("environment variable %s holds the placeholder %q: replace it with the value", name, EnvPlaceholder(name))
}

// isShellOp reports whether ref looks like a shell parameter expansion such
// as NAME:-default or NAME?message.
func isShellOp(ref string) bool {
	i := strings.IndexAny(ref, ":-=?+")
	return i > 0 && envNameRe.MatchString(ref[:i])
}
