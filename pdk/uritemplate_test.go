package pdk

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestURITemplateMatch(t *testing.T) {
	tests := []struct {
		template string
		uri      string
		want     map[string]string // nil: no match
	}{
		{"test://template/{id}/data", "test://template/123/data", map[string]string{"id": "123"}},
		{"test://template/{id}/data", "test://template//data", nil},
		{"test://template/{id}/data", "test://template/1/2/data", nil},
		{"test://template/{id}/data", "test://template/123/data/more", nil},
		{"test://template/{id}/data", "xtest://template/123/data", nil},
		{"notes://note/{id}", "notes://note/a%20b", map[string]string{"id": "a b"}},
		{"notes://note/{id}", "notes://note/%zz", nil},
		{"notes://note/{id}", "notes://note/x?y", nil},
		{"file:///{dir}/{name}.txt", "file:///docs/a.b.txt", map[string]string{"dir": "docs", "name": "a.b"}},
		{"weather://{city.name}", "weather://Paris", map[string]string{"city.name": "Paris"}},
		{"a+b://{x}", "a+b://1", map[string]string{"x": "1"}},
		{"a+b://{x}", "aab://1", nil},
		{"static://only", "static://only", map[string]string{}},
		// Each variable, from the first, takes the longest value the rest
		// of the template follows.
		{"x://{a}{b}", "x://abc", map[string]string{"a": "ab", "b": "c"}},
		{"x://{a}{b}", "x://ab€", map[string]string{"a": "ab", "b": "€"}},
		{"x://{a}.{b}", "x://1.2.3", map[string]string{"a": "1.2", "b": "3"}},
		{"x://{a}-{b}-{c}", "x://1-2-3-4", map[string]string{"a": "1-2", "b": "3", "c": "4"}},
		{"x://{a}/{b}", "x://1/2/3", nil},
		{"x://{a}{b}", "x://a", nil},
		{"x://{a}x{b}", "x://xxx", map[string]string{"a": "x", "b": "x"}},
		{"{a}", "%41+b", map[string]string{"a": "A+b"}},
		{"{a}", "%4", nil},
	}
	for _, tt := range tests {
		tmpl, err := parseURITemplate(tt.template)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.template, err)
		}
		got, ok := tmpl.match(tt.uri)
		if ok != (tt.want != nil) || !maps.Equal(got, tt.want) {
			t.Errorf("%q match %q = %v, %v; want %v", tt.template, tt.uri, got, ok, tt.want)
		}
	}
}

func TestURITemplateRejectsBeyondLevel1(t *testing.T) {
	for _, tmpl := range []string{
		"x://{+path}", "x://{#frag}", "x://{?q}", "x://{a,b}", "x://{list*}", "x://{s:3}",
		"x://{}", "x://{a", "x://a}", "x://{a}/{a}", "x://{a-b}", "x://\xff{a}",
	} {
		if _, err := parseURITemplate(tmpl); err == nil {
			t.Errorf("parseURITemplate(%q) succeeded", tmpl)
		}
	}
}

// TestURITemplateLinear matches URIs that a backtracking matcher would
// take hours over: a template of many variables and a long URI that
// matches it, or almost does.
func TestURITemplateLinear(t *testing.T) {
	tmpl, err := parseURITemplate("x://{a}{b}{c}{d}{e}{f}.end")
	if err != nil {
		t.Fatal(err)
	}
	long := "x://" + strings.Repeat("a.", 50000) // the last '.' is the literal's
	if vars, ok := tmpl.match(long + "end"); !ok || len(vars["a"]) != 100000-1-5 || vars["f"] != "a" {
		t.Errorf("long match: a of %d bytes, f = %q, %v", len(vars["a"]), vars["f"], ok)
	}
	if _, ok := tmpl.match(long + "ned"); ok {
		t.Error("long mismatch matched")
	}
}

// regexpURITemplate is the implementation of uriTemplate before it stopped
// using package regexp, kept to check that the hand-written matcher
// behaves the same.
type regexpURITemplate struct {
	pattern *regexp.Regexp
	vars    []string
}

var regexpVarName = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)

func parseRegexpURITemplate(tmpl string) (*regexpURITemplate, error) {
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
		if !regexpVarName.MatchString(name) {
			return nil, fmt.Errorf("uri template %q: unsupported expression {%s}: only level-1 {name} expressions are supported", tmpl, name)
		}
		for _, v := range vars {
			if v == name {
				return nil, fmt.Errorf("uri template %q: variable %q appears twice", tmpl, name)
			}
		}
		vars = append(vars, name)
		expr.WriteString(`([^/?#]+)`)
		rest = rest[open+end+1:]
	}
	expr.WriteByte('$')
	// Compile, not MustCompile: a template of invalid UTF-8 made
	// MustCompile panic.
	re, err := regexp.Compile(expr.String())
	if err != nil {
		return nil, err
	}
	return &regexpURITemplate{pattern: re, vars: vars}, nil
}

func (t *regexpURITemplate) match(uri string) (map[string]string, bool) {
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

// sameAsRegexp checks that uriTemplate parses tmpl and matches each of
// uris as regexpURITemplate does.
func sameAsRegexp(t *testing.T, tmpl string, uris ...string) {
	t.Helper()
	want, wantErr := parseRegexpURITemplate(tmpl)
	got, err := parseURITemplate(tmpl)
	switch {
	case !utf8.ValidString(tmpl):
		if err == nil {
			t.Fatalf("parseURITemplate(%q) accepted invalid UTF-8", tmpl)
		}
		return
	case (err == nil) != (wantErr == nil):
		t.Fatalf("parseURITemplate(%q) = %v, regexp: %v", tmpl, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("parseURITemplate(%q): %q, regexp: %q", tmpl, err, wantErr)
		}
		return
	}
	for _, uri := range uris {
		if !utf8.ValidString(uri) && strings.ContainsRune(tmpl, utf8.RuneError) {
			// Package regexp reads an invalid byte as U+FFFD, and
			// matches it against a U+FFFD of the template or not
			// depending on the engine it picks; uriTemplate compares
			// bytes.
			continue
		}
		gotVars, gotOK := got.match(uri)
		wantVars, wantOK := want.match(uri)
		if gotOK != wantOK || !maps.Equal(gotVars, wantVars) {
			t.Fatalf("%q match %q = %q, %v; regexp: %q, %v", tmpl, uri, gotVars, gotOK, wantVars, wantOK)
		}
	}
}

var uriTemplateSeeds = []struct{ template, uri string }{
	{"test://template/{id}/data", "test://template/123/data"},
	{"notes://note/{id}", "notes://note/a%20b"},
	{"notes://note/{id}", "notes://note/%zz"},
	{"file:///{dir}/{name}.txt", "file:///docs/a.b.txt"},
	{"weather://{city.name}", "weather://Paris"},
	{"a+b://{x}", "a+b://1"},
	{"x://{a}{b}", "x://ab€"},
	{"x://{a}{b}{c}", "x://\xe2\x82"},
	{"x://{a}\uFFFD{b}", "x://a\uFFFDb"},
	{"x://{a}.{b}.{c}", "x://1.2.3.4"},
	{"{a}x{b}", "xxxx"},
	{"{a}?{b}#{c}", "1?2#3"},
	{"x://{a}/{b}", "x://%41/%4"},
	{"x://{a.b}", "x://1"},
	{"x://{a..b}", "x://1"},
	{"x://{.a}", "x://1"},
	{"x://{a}}", "x://1"},
	{"x://{{a}", "x://1"},
	{"x://{a}/{a}", "x://1/2"},
	{"x://\xff{a}", "x://\xff1"},
	{"", ""},
	{"static://only", "static://only"},
}

func TestURITemplateSameAsRegexp(t *testing.T) {
	for _, s := range uriTemplateSeeds {
		sameAsRegexp(t, s.template, s.uri)
	}
	// Every template of a few pieces against every URI of a few pieces.
	pieces := []string{"{a}", "{b}", "{c}", "/", ".", "x", "€", "?", "%41", "%"}
	chars := []string{"/", ".", "x", "€", "?", "#", "%41", "%", "\xe2", "\x82"}
	var templates, uris []string
	var grow func(parts []string, s string, n int, out *[]string)
	grow = func(parts []string, s string, n int, out *[]string) {
		*out = append(*out, s)
		if n == 0 {
			return
		}
		for _, p := range parts {
			grow(parts, s+p, n-1, out)
		}
	}
	grow(pieces, "", 3, &templates)
	grow(chars, "", 3, &uris)
	for _, tmpl := range templates {
		sameAsRegexp(t, tmpl, uris...)
	}
}

func FuzzURITemplate(f *testing.F) {
	for _, s := range uriTemplateSeeds {
		f.Add(s.template, s.uri)
	}
	f.Fuzz(func(t *testing.T, tmpl, uri string) { sameAsRegexp(t, tmpl, uri) })
}
