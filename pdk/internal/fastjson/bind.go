package fastjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Bind decodes the JSON object data into the struct v points to, as
// json.Unmarshal does (or, when strict, as a json.Decoder with
// DisallowUnknownFields does), when both are simple enough, and reports
// whether it did. When it reports false it has left *v as it was, and the
// caller decodes with encoding/json, which gives the result and the error
// the input deserves.
//
// Simple enough means: a struct whose exported fields are all strings,
// booleans, integers or floating-point numbers (of any named type that
// does not decode itself), with plain json tags (no ",string"), no
// embedded fields and no two names equal but for case; and an object whose
// members are all of the right JSON type for their field (or null), whose
// keys need no unescaping, with no more than maxSets of them naming a
// field, and, when strict, none that names no field.
func Bind(data []byte, v any, strict bool) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	ev := rv.Elem()
	if ev.Kind() != reflect.Struct {
		return false
	}
	p := planFor(ev.Type())
	if p == nil {
		return false
	}
	// The values are read first and set only once the whole object has
	// been read and checked.
	var sets [maxSets]set
	n := 0
	end, ok := Members(data, 0, func(key []byte, f Flags, i int) (int, bool) {
		fi := p.lookup(key, f)
		switch {
		case fi == refuse:
			return 0, false
		case fi == unknown:
			if strict {
				return 0, false
			}
			return Skip(data, i)
		case bytes.HasPrefix(data[i:], []byte("null")):
			return i + 4, true // null leaves a field of these kinds as it is
		case n == maxSets:
			return 0, false
		}
		s := &sets[n]
		s.field = fi
		n++
		return p.fields[fi].read(data, i, s)
	})
	if !ok || !Whole(data, end) {
		return false
	}
	for _, s := range sets[:n] {
		f := &p.fields[s.field]
		fv := ev.Field(f.index)
		switch f.kind {
		case reflect.String:
			fv.SetString(s.s)
		case reflect.Bool:
			fv.SetBool(s.b)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fv.SetInt(s.i)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			fv.SetUint(s.u)
		case reflect.Float32, reflect.Float64:
			fv.SetFloat(s.f)
		}
	}
	return true
}

// maxSets bounds the members of one object that Bind reads into fields.
const maxSets = 16

// set is a value read for a field, to be set.
type set struct {
	field int
	s     string
	i     int64
	u     uint64
	f     float64
	b     bool
}

// plan is how Bind decodes into a struct type.
type plan struct {
	fields []field
}

type field struct {
	name  string // the JSON name
	index int    // of the struct field
	kind  reflect.Kind
	bits  int // of numbers
}

// Results of plan.lookup other than a field's index.
const (
	unknown = -1 // no field has that name
	refuse  = -2 // the key needs encoding/json
)

// lookup returns the index in p.fields of the field a key names, as
// encoding/json matches keys to fields: the field of that name, or else
// one whose name is the same but for case.
func (p *plan) lookup(key []byte, f Flags) int {
	if f != 0 && !Plain(key, f) {
		return refuse
	}
	for i := range p.fields {
		if string(key) == p.fields[i].name {
			return i
		}
	}
	for i := range p.fields {
		if bytes.EqualFold(key, []byte(p.fields[i].name)) {
			return i
		}
	}
	return unknown
}

// read reads the value at data[i] for the field into s and returns the
// index after it, or false if the value is not of the field's JSON type.
func (f *field) read(data []byte, i int, s *set) (int, bool) {
	switch f.kind {
	case reflect.String:
		if data[i] != '"' {
			return 0, false
		}
		end, fl, ok := String(data, i)
		if !ok {
			return 0, false
		}
		s.s = Unquote(data[i+1:end-1], fl)
		return end, true
	case reflect.Bool:
		switch {
		case bytes.HasPrefix(data[i:], []byte("true")):
			s.b = true
			return i + 4, true
		case bytes.HasPrefix(data[i:], []byte("false")):
			return i + 5, true
		}
		return 0, false
	}
	if c := data[i]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	end, ok := Number(data, i)
	if !ok {
		return 0, false
	}
	num := data[i:end]
	switch f.kind {
	case reflect.Float32, reflect.Float64:
		if n, ok := smallInt(num, 15); ok && (f.bits == 64 || n > -1<<24 && n < 1<<24) {
			s.f = float64(n) // exactly what ParseFloat returns
			return end, true
		}
		x, err := strconv.ParseFloat(string(num), f.bits)
		s.f = x
		return end, err == nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if num[0] == '-' {
			return 0, false
		}
		n, err := uint64(0), error(nil)
		if small, ok := smallInt(num, 18); ok {
			n = uint64(small)
		} else if n, err = strconv.ParseUint(string(num), 10, 64); err != nil {
			return 0, false
		}
		s.u = n
		return end, f.bits == 64 || n < 1<<f.bits
	}
	n, ok := smallInt(num, 18)
	if !ok {
		var err error
		if n, err = strconv.ParseInt(string(num), 10, 64); err != nil {
			return 0, false
		}
	}
	s.i = n
	return end, f.bits == 64 || n >= -1<<(f.bits-1) && n < 1<<(f.bits-1)
}

// smallInt returns the JSON number num as an integer if it is one of at
// most max digits (no fraction, no exponent), and not -0 (which is a
// negative zero as a float).
func smallInt(num []byte, max int) (int64, bool) {
	neg := num[0] == '-'
	if neg {
		num = num[1:]
		if len(num) == 1 && num[0] == '0' {
			return 0, false
		}
	}
	if len(num) > max {
		return 0, false
	}
	var n int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// plans caches the plan of each struct type, nil for the types Bind
// leaves to encoding/json.
var plans sync.Map // reflect.Type -> *plan

func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := makePlan(t)
	plans.Store(t, p)
	return p
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// decodesItself reports whether encoding/json would hand a value of type t
// to a method of its own.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType)
}

// makePlan returns the plan of struct type t, or nil if Bind leaves it to
// encoding/json.
func makePlan(t reflect.Type) *plan {
	if decodesItself(t) {
		return nil
	}
	p := &plan{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil // embedded fields: encoding/json's rules of depth and dominance
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for _, o := range strings.Split(opts, ",") {
			if o == "string" {
				return nil
			}
		}
		if name == "" {
			name = sf.Name
		}
		if !simpleName(name) {
			return nil
		}
		ft := sf.Type
		if ft == numberType || decodesItself(ft) {
			return nil
		}
		f := field{name: name, index: i, kind: ft.Kind()}
		switch f.kind {
		case reflect.String, reflect.Bool:
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64:
			f.bits = ft.Bits()
		default:
			return nil
		}
		for _, g := range p.fields {
			if strings.EqualFold(g.name, name) {
				return nil // encoding/json's rules of dominance
			}
		}
		p.fields = append(p.fields, f)
	}
	return p
}

// simpleName reports whether a field's JSON name is one that encoding/json
// takes as it is: ASCII letters, digits and a few marks. (It ignores a tag
// with other characters, and the field is then named as in Go.)
func simpleName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
