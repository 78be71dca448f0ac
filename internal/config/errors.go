package config

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error that reports a problem with the
// content of a configuration: syntax, unknown or duplicate keys, wrong types,
// and values that fail validation. Errors from reading the file (for example
// fs.ErrNotExist) do not wrap it.
var ErrInvalid = errors.New("invalid configuration")

// Error is one problem found in a configuration file. Load and Parse return
// all problems they find, sorted by position and combined with errors.Join;
// use errors.As to get the first, or the Unwrap() []error method of the
// joined error to get them all.
type Error struct {
	File   string // file name as given to Load or Parse; may be empty
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Msg    string // the problem, usually "<yaml path>: <what is wrong>"
	// EnvVar names the environment variable a ${NAME} reference needs,
	// when the problem is that it is not set (or holds the placeholder of
	// EnvPlaceholder); "" for other problems.
	EnvVar string
}

// Error formats the problem as "file:line:col: msg", dropping the parts that
// are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
		if e.Column > 0 {
			b.WriteString(strconv.Itoa(e.Column))
			b.WriteByte(':')
		}
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// suggest returns the candidate closest to key, or "" when none is close
// enough to be a likely typo.
func suggest(key string, candidates []string) string {
	norm := func(s string) string {
		s = strings.ToLower(s)
		s = strings.ReplaceAll(s, "_", "")
		return strings.ReplaceAll(s, "-", "")
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		if norm(c) == norm(key) {
			return c // differs only in case or separators: allowedHosts, Call-Timeout
		}
		d := editDistance(key, c)
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	// Two edits catch most typos; the length guard stops "a" suggesting "addr".
	if bestDist >= 0 && bestDist <= 2 && bestDist*2 < len(key) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, by bytes (keys
// are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
