package rawjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are JSON texts, valid and not, of every kind Valid reads.
var validCases = []string{
	``, ` `, `{}`, ` {} `, `[]`, `[ ]`, `{ }`, `{"a":1}`, `{"a" : [1, 2.5, -0.1e+3, "x", true, false, null, {}]}`,
	`"s"`, `"\u00e9\n\t\"\\\/\b\f\r"`, `"\u00g0"`, `"\x"`, `"a` + "\x01" + `"`, "\"\xff\xfe\"", `"`, `"\`, `"\u12`,
	`0`, `-0`, `01`, `-`, `1.`, `1.e3`, `.5`, `1e`, `1e+`, `1E-7`, `-12.50E10`, `+1`, `1x`,
	`tru`, `true`, `truex`, `nul`, `null`, `false`, `fals`,
	`{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`, `{"a":1 "b":2}`, `[1 2]`, `{1:2}`, `{"a":1]`, `[1}`,
	`{} {}`, `[] x`, `{"a":{"b":{"c":[[[]]]}}}`, "\t\r\n[\n1\n]\n",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100),
	strings.Repeat("[", 100) + strings.Repeat("]", 99),
}

func TestValid(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.40q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// FuzzValid holds Valid equal to json.Valid.
func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, benchmark, a payload of some length"},"_meta":{"progressToken":3}}}`)
	b.Run("rawjson", func(b *testing.B) {
		for b.Loop() {
			Valid(msg)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(msg)
		}
	})
}
