package rawjson

import (
	"strings"
	"testing"
)

// TestObject pins what Object reads: the members in order, with their
// values' bytes; and what it refuses.
func TestObject(t *testing.T) {
	var got []string
	ok := Object([]byte(`{ "a" : 1 , "b":"x\"y","c":{"d":[1,{"e":null}]},"f":true} `), func(key, v []byte) bool {
		got = append(got, string(key)+"="+string(v))
		return true
	})
	if want := []string{`a=1`, `b="x\"y"`, `c={"d":[1,{"e":null}]}`, `f=true`}; !ok || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Object: %v, %q; want true, %q", ok, got, want)
	}
	if !Object([]byte(`{}`), func([]byte, []byte) bool { t.Error("a member of {}"); return true }) {
		t.Error("Object refuses {}")
	}
	deep := `{"a":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `}`
	edge := `{"a":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`[1]`, false},
		{`"s"`, false},
		{`{"a\u0062":1}`, false},          // an escaped key
		{`{"a":1,"b":2}`, true},           //
		{deep, false},                     // nested too deep
		{edge, true},                      // as deep as allowed
		{`{"a":1,"stop":2,"c":3}`, false}, // member said stop
	} {
		if got := Object([]byte(tc.in), func(key, _ []byte) bool { return string(key) != "stop" }); got != tc.want {
			t.Errorf("Object(%.40s): %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`"plain"`, "plain", true},
		{`""`, "", true},
		{`"a\nb"`, "", false},
		{`5`, "", false},
		{`"`, "", false},
	} {
		if got, ok := String([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("String(%s) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if end := SkipString([]byte(`"a\"b",1`), 0); end != 6 {
		t.Errorf("SkipString: %d, want 6", end)
	}
}

func TestKeys(t *testing.T) {
	var k Keys
	if !k.Add([]byte("a")) || !k.Add([]byte("b")) || k.Add([]byte("a")) || !k.Has([]byte("b")) || k.Has([]byte("c")) {
		t.Errorf("Keys: %q", k.first)
	}
	// Past the keys held inline.
	for i := range 20 {
		if !k.Add([]byte{'k', byte('a' + i)}) {
			t.Fatalf("key %d refused", i)
		}
	}
	for i := range 20 {
		if k.Add([]byte{'k', byte('a' + i)}) || !k.Has([]byte{'k', byte('a' + i)}) {
			t.Fatalf("key %d: a duplicate taken, or not recorded", i)
		}
	}
	if k.Has([]byte("z")) || k.Add([]byte("b")) {
		t.Error("Keys: found a key never added, or took a duplicate")
	}
}
