// Package rawjson reads valid JSON text in place: the members of an object,
// the end of a value or a string, without decoding them. The fast path's
// parser (package fastpath) and the core's check of simple argument schemas
// (package core) read requests with it, which costs a scan of the bytes
// instead of a decoding.
//
// It imports nothing of Hangar's, and nothing but the standard library.
package rawjson

import (
	"bytes"
	"strings"
)

// MaxDepth bounds the nesting of the values [Object] reads; the go-sdk
// refuses messages nested more than 1000 deep.
const MaxDepth = 512

// Object calls member for each member of the object b, in order, with the
// bytes of its key (unquoted) and of its value, both within b, and reports
// whether every call returned true. b must be valid JSON (Valid,
// json.Valid): one object, which white space may follow. Object reports false, whatever member returned, if b is not
// an object, if a key has an escape (Object then stops), or if a value is
// nested more than MaxDepth deep.
func Object(b []byte, member func(key, v []byte) bool) bool {
	p := parser{b: b}
	return p.object(member) && !p.deep
}

// parser walks valid JSON.
type parser struct {
	b    []byte
	deep bool // nested more than MaxDepth
}

func (p *parser) object(member func(key, v []byte) bool) bool {
	b := p.b
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	i := SkipSpace(b, 1)
	if b[i] == '}' {
		return SkipSpace(b, i+1) == len(b)
	}
	for {
		if b[i] != '"' {
			return false
		}
		end := i + 1 + bytes.IndexByte(b[i+1:], '"')
		key := b[i+1 : end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = SkipSpace(b, end+1) // at ':'
		i = SkipSpace(b, i+1)
		vend := p.skipValue(i)
		if !member(key, b[i:vend]) {
			return false
		}
		i = SkipSpace(b, vend)
		if b[i] == '}' {
			return SkipSpace(b, i+1) == len(b)
		}
		i = SkipSpace(b, i+1) // after ','
	}
}

// skipValue returns the end of the valid JSON value at b[i].
func (p *parser) skipValue(i int) int {
	b := p.b
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = SkipString(b, i) - 1
			case '{', '[':
				depth++
				if depth > MaxDepth {
					p.deep = true
				}
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false or null
		for i < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[i])) {
			i++
		}
		return i
	}
}

// SkipString returns the end of the valid JSON string at b[i].
func SkipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// SkipSpace returns the index of the first byte at or after b[i] that is not
// JSON white space, or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// String returns the contents of the JSON string v if it has no escapes.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v[1:len(v)-1], '\\') >= 0 {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// Keys records the keys of an object, to refuse duplicates. Its zero
// value is empty, and holds its first keys without allocating.
type Keys struct {
	n     int
	first [8][]byte
	rest  [][]byte
}

// Has reports whether key is recorded.
func (k *Keys) Has(key []byte) bool {
	for _, s := range k.first[:min(k.n, len(k.first))] {
		if string(s) == string(key) {
			return true
		}
	}
	for _, s := range k.rest {
		if string(s) == string(key) {
			return true
		}
	}
	return false
}

// Add records key, and reports false if it was recorded already. Key is
// kept, not copied.
func (k *Keys) Add(key []byte) bool {
	if k.Has(key) {
		return false
	}
	if k.n < len(k.first) {
		k.first[k.n] = key
	} else {
		k.rest = append(k.rest, key)
	}
	k.n++
	return true
}
