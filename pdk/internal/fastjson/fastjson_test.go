package fastjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

var valueSeeds = []string{
	`{"text":"hello"}`,
	`{"a":[1,2.5,-3e+2,0.1E-3,true,false,null,{},[]],"b":{"c":"\u00e9\n\"q\" \ud83d\ude00"}}`,
	` { "a" : 1 } `,
	`"a long string of more than eight bytes, with \"escapes\" and é and \t"`,
	`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00x"`,
	"\"\xff\xfe invalid \xed\xa0\x80\"",
	`"control ` + "\x01" + `"`,
	`[]`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `01`, `-`, `1.`, `1e`, `-0`, `-0.0e-0`,
	`tru`, `nul`, `falsey`, `"\q"`, `"\u12"`, `"\u12g4"`,
	strings.Repeat("[", 70) + strings.Repeat("]", 70),
	``, ` `,
}

// depth is the deepest nesting of brackets in b outside strings (as far as
// a rough reading can tell).
func depth(b []byte) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			d++
			most = max(most, d)
		case !in && (c == '}' || c == ']'):
			d--
		}
	}
	return most
}

// FuzzSkip checks the scanner against encoding/json: Skip accepts a whole
// input exactly when json.Valid does (but for nesting deeper than
// MaxDepth, which it refuses), and a string's text is what encoding/json
// decodes.
func FuzzSkip(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		end, ok := Skip(in, 0)
		whole := ok && Whole(in, end)
		if valid := json.Valid(in); whole != valid && (whole || depth(in) < MaxDepth) {
			t.Fatalf("Skip(%q) = %d, %v (whole %v); json.Valid %v", in, end, ok, whole, valid)
		}
		i := Space(in, 0)
		if i >= len(in) || in[i] != '"' {
			return
		}
		end, fl, ok := String(in, i)
		if !ok || !Whole(in, end) {
			return
		}
		var want string
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("String accepted %q, encoding/json: %v", in, err)
		}
		body := in[i+1 : end-1]
		if got := Unquote(body, fl); got != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json %q", in, got, want)
		}
		if Plain(body, fl) && string(body) != want {
			t.Fatalf("%q is plain, encoding/json reads %q", in, want)
		}
		if fl&Escaped == 0 && bytes.IndexByte(body, '\\') >= 0 || fl&NonASCII == 0 && strings.ContainsFunc(string(body), func(r rune) bool { return r >= 0x80 }) {
			t.Fatalf("%q: flags %b", in, fl)
		}
	})
}

// bindAll has a field of every kind Bind takes, and the fields it skips.
type bindAll struct {
	S      string  `json:"s"`
	B      bool    `json:"b"`
	I      int     `json:"i"`
	I8     int8    `json:"i8"`
	I32    int32   `json:"i32"`
	U      uint    `json:"u"`
	U8     uint8   `json:"u8"`
	U64    uint64  `json:"u64,omitempty"`
	F32    float32 `json:"f32"`
	F      float64 `json:"f"`
	Plain  string
	Named  level  `json:"level"`
	Skip   string `json:"-"`
	Dash   string `json:"-,"`
	hidden string
}

type level string

// bindText is the echo tool's arguments.
type bindText struct {
	Text string `json:"text"`
}

// filled returns values with every field set, so that a field Bind or
// encoding/json leaves alone shows.
func filled() (bindAll, bindText) {
	return bindAll{S: "s0", B: true, I: -7, I8: 8, I32: 32, U: 9, U8: 10, U64: 11, F32: 1.5, F: 2.5, Plain: "p0", Named: "n0", Skip: "k0", Dash: "d0", hidden: "h0"},
		bindText{Text: "t0"}
}

var bindSeeds = []string{
	`{"text":"The quick brown fox jumps over the lazy dog."}`,
	`{"s":"a\nb","b":false,"i":-12,"i8":127,"i32":-2147483648,"u":0,"u8":255,"u64":18446744073709551615,"f32":3.4e38,"f":-0,"Plain":"x","level":"high","-":"dash"}`,
	`{"S":"fold","PLAIN":"fold","Text":"fold","TEXT":"x","text":"exact"}`,
	`{"i8":128}`, `{"u8":-1}`, `{"i":1.0}`, `{"i":1e2}`, `{"f32":1e39}`, `{"f":1e400}`, `{"f":-0}`, `{"f":123456789012345678}`,
	`{"i":9223372036854775807}`, `{"i":-9223372036854775808}`, `{"i":9223372036854775808}`,
	`{"s":null,"b":null,"i":null,"text":null}`, `{"s":1}`, `{"b":"true"}`, `{"i":"1"}`, `{"text":["a"]}`,
	`{"unknown":{"deep":[1,2,3]},"text":"a"}`, `{"te\u0078t":"escaped key"}`, `{"\u212aelvin":1}`, "{\"\xff\":1}",
	`{"text":"a","text":"b"}`, `{"text":"a"} `, `{"text":"a"}x`, `{"text":"a",}`, `[]`, `null`, `"text"`, `{}`,
	`{"s":"\ud800\udc00 \ud800"}`,
}

// FuzzBind checks Bind against encoding/json: whenever it binds, json.Unmarshal
// (and, strict, a json.Decoder with DisallowUnknownFields) decodes the same
// input without error into the same values; when it does not, it has
// changed nothing.
func FuzzBind(f *testing.F) {
	for _, s := range bindSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, strict := range []bool{false, true} {
			for _, pair := range []struct{ fast, slow any }{
				func() (p struct{ fast, slow any }) {
					a, _ := filled()
					b, _ := filled()
					return struct{ fast, slow any }{&a, &b}
				}(),
				func() (p struct{ fast, slow any }) {
					_, a := filled()
					_, b := filled()
					return struct{ fast, slow any }{&a, &b}
				}(),
			} {
				before := reflect.ValueOf(pair.fast).Elem().Interface()
				if !Bind(in, pair.fast, strict) {
					if after := reflect.ValueOf(pair.fast).Elem().Interface(); !reflect.DeepEqual(before, after) {
						t.Fatalf("Bind(%q) refused but changed %+v to %+v", in, before, after)
					}
					continue
				}
				var err error
				if strict {
					dec := json.NewDecoder(bytes.NewReader(in))
					dec.DisallowUnknownFields()
					err = dec.Decode(pair.slow)
				} else {
					err = json.Unmarshal(in, pair.slow)
				}
				if err != nil {
					t.Fatalf("Bind(%q, strict %v) bound, encoding/json: %v", in, strict, err)
				}
				if !reflect.DeepEqual(pair.fast, pair.slow) {
					t.Fatalf("Bind(%q, strict %v):\n%+v\nencoding/json:\n%+v", in, strict, pair.fast, pair.slow)
				}
				// -0 and 0 are equal to DeepEqual.
				if a, ok := pair.fast.(*bindAll); ok && a.F == 0 && (1/a.F > 0) != (1/pair.slow.(*bindAll).F > 0) {
					t.Fatalf("Bind(%q): sign of zero differs", in)
				}
			}
		}
	})
}

// TestBindRefuses: the types Bind leaves to encoding/json.
func TestBindRefuses(t *testing.T) {
	type inner struct{ A string }
	in := []byte(`{"A":"x","B":"y"}`)
	for _, v := range []any{
		&struct{ inner }{},
		&struct {
			A string `json:",string"`
		}{},
		&struct{ A json.Number }{},
		&struct{ A time.Time }{},
		&struct {
			A string
			B string `json:"a"`
		}{},
		&struct{ A []string }{},
		&struct{ A *string }{},
		&struct{ A any }{},
		&struct {
			A string `json:"a b"`
		}{},
		&map[string]string{},
		struct{ A string }{},
		(*struct{ A string })(nil),
		&time.Time{},
	} {
		if Bind(in, v, false) {
			t.Errorf("Bind took %T", v)
		}
	}
	var ok struct {
		A string
		b string
	}
	if !Bind(in, &ok, false) || ok.A != "x" {
		t.Errorf("Bind refused a plain struct: %+v", ok)
	}
	if Bind(in, &ok, true) {
		t.Error("Bind, strict, took an unknown field")
	}
}

// FuzzAppendString checks the string encoding against json.Marshal.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "hello", "a \"quoted\" \\ text that is longer than eight bytes", "<b>&amp;</b>", "\x00\x01\b\f\n\r\t\x1f\x7f", "é 世界 \u2028\u2029", "\xff\xfe bad", "\xed\xa0\x80", "12345678\n12345678<"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
	})
}

// FuzzVerbatim checks Verbatim against json.Marshal of a json.RawMessage.
func FuzzVerbatim(f *testing.F) {
	for _, s := range append(valueSeeds, `{"a":"<"}`, `{"a":"b c"}`, "\"\u2028\"", `{"sum":3,"list":["x",null]}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !Verbatim(raw) {
			return
		}
		got, err := json.Marshal(json.RawMessage(raw))
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("Verbatim(%q), json.Marshal: %s, %v", raw, got, err)
		}
	})
}

// FuzzObject checks Object against encoding/json: whenever it decodes an
// input, json.Unmarshal into a map[string]any decodes the same, and it
// declines no valid object of plain values nested less than MaxDepth.
func FuzzObject(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{}`, ` { } `, `{"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"progressToken":3,"trace":"x","a":[1,-2.5e3,"\u00e9\n",true,false,null,{}],"b":{"c":[]}}`,
		`{"a":1,"a":2}`, `{"big":1e400}`, `{"s":"\ud800"}`, `{"k\"ey":"v"}`, `{"a":}`, `[1]`, `null`, `{"a":1} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := Object(in)
		var want map[string]any
		err := json.Unmarshal(in, &want)
		if ok {
			if err != nil || want == nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Object(%q) = %#v; json.Unmarshal %#v, %v", in, got, want, err)
			}
			return
		}
		if err == nil && want != nil && depth(in) < MaxDepth {
			t.Fatalf("Object(%q) declined what json.Unmarshal decodes: %#v", in, want)
		}
	})
}
