package pdk

import (
	"maps"
	"testing"
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
		"x://{}", "x://{a", "x://a}", "x://{a}/{a}", "x://{a-b}",
	} {
		if _, err := parseURITemplate(tmpl); err == nil {
			t.Errorf("parseURITemplate(%q) succeeded", tmpl)
		}
	}
}
