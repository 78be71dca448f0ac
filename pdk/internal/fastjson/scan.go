// Package fastjson holds the PDK's JSON fast paths: a validating scanner,
// the binding of tool arguments to simple structs, and the encoding of
// strings. They run inside the plugin, where every function call and every
// loop iteration of Go's WebAssembly code is several times dearer than
// natively, and every allocation dearer still.
//
// They are fast paths, not second implementations of JSON: each takes only
// inputs whose meaning it is sure of and says no to anything else, and the
// caller then does what it did before, with encoding/json. Fuzz targets
// check that whenever a fast path answers, encoding/json answers the same.
package fastjson

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// Flags tell what a JSON string held between its quotes.
type Flags uint8

const (
	// Escaped marks a string with at least one escape sequence.
	Escaped Flags = 1 << iota
	// NonASCII marks a string with at least one byte at or above 0x80.
	NonASCII
)

// Constants of the scans eight bytes at a time: a byte of each, and the
// high bit of each.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// zeroByte has the high bit set in (at least) the lowest byte of x that is
// zero, and nowhere below it.
func zeroByte(x uint64) uint64 { return (x - ones) &^ x & highs }

// belowSpace has the high bit set in (at least) the lowest byte of x that
// is a control character (below 0x20), and nowhere below it.
func belowSpace(x uint64) uint64 { return (x - 0x20*ones) &^ x & highs }

// Space returns the index of the first byte at or after i that is not
// JSON white space.
func Space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// String checks the JSON string at b[i], which is '"', and returns the
// index after its closing quote and what it held. It reads eight bytes at
// a time while none of them is a quote, a backslash or a control
// character.
func String(b []byte, i int) (end int, f Flags, ok bool) {
	var high uint64
	for i++; ; {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			stop := belowSpace(x) | zeroByte(x^'"'*ones) | zeroByte(x^'\\'*ones)
			if stop != 0 {
				high |= x & (stop&-stop - 1) // the bytes before the first stop
				i += bits.TrailingZeros64(stop) >> 3
				break
			}
			high |= x
			i += 8
		}
		if i >= len(b) {
			return 0, 0, false
		}
		switch c := b[i]; {
		case c == '"':
			if high&highs != 0 {
				f |= NonASCII
			}
			return i + 1, f, true
		case c == '\\':
			f |= Escaped
			if i+1 >= len(b) {
				return 0, 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, 0, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, 0, false
					}
				}
				i += 6
			default:
				return 0, 0, false
			}
		case c < 0x20:
			return 0, 0, false
		default:
			// A byte the scan of eight could not take: fewer than eight
			// were left.
			high |= uint64(c)
			i++
		}
	}
}

// Plain returns the body of a JSON string whose flags are f (its bytes
// between the quotes, b[start+1:end-1]) when it means exactly those bytes:
// no escapes, and valid UTF-8.
func Plain(body []byte, f Flags) bool {
	return f&Escaped == 0 && (f&NonASCII == 0 || utf8.Valid(body))
}

// Number checks the JSON number at b[i] and returns the index after it.
func Number(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// MaxDepth bounds the nesting Skip accepts; deeper values take the slow
// path.
const MaxDepth = 64

// Skip checks the JSON value starting at b[i] (after white space) and
// returns the index just past it. It accepts exactly the JSON grammar
// (RFC 8259), as encoding/json does, except that it refuses what it does
// not need to accept: nesting deeper than MaxDepth.
func Skip(b []byte, i int) (int, bool) {
	// The nesting is kept in a small stack of '{' and '[' instead of by
	// recursion: one loop, and no function calls but for strings and
	// numbers.
	var stack [MaxDepth]byte
	depth := 0
	for {
		// A value.
		i = Space(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == MaxDepth {
				return 0, false
			}
			i = Space(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				break
			}
			stack[depth] = c
			depth++
			if c == '{' {
				var ok bool
				if i, ok = key(b, i); !ok {
					return 0, false
				}
			}
			continue
		case c == '"':
			end, _, ok := String(b, i)
			if !ok {
				return 0, false
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end, ok := Number(b, i)
			if !ok {
				return 0, false
			}
			i = end
		case bytes.HasPrefix(b[i:], []byte("true")), bytes.HasPrefix(b[i:], []byte("null")):
			i += 4
		case bytes.HasPrefix(b[i:], []byte("false")):
			i += 5
		default:
			return 0, false
		}
		// After a value: ',' and the next, or the closing brackets.
		for {
			if depth == 0 {
				return i, true
			}
			i = Space(b, i)
			if i >= len(b) {
				return 0, false
			}
			top := stack[depth-1]
			if c := b[i]; c == ',' {
				i++
				if top == '{' {
					var ok bool
					if i, ok = key(b, i); !ok {
						return 0, false
					}
				}
				break
			} else if c != top+2 {
				return 0, false
			}
			depth--
			i++
		}
	}
}

// key checks `"key" :` at b[i] (after white space) and returns the index
// after the colon.
func key(b []byte, i int) (int, bool) {
	i = Space(b, i)
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	end, _, ok := String(b, i)
	if !ok {
		return 0, false
	}
	i = Space(b, end)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return i + 1, true
}

// Members reads the JSON object at b[i] (after white space), checking it
// as it goes. For each member it calls fn with the key (the bytes between
// its quotes, and their flags) and the index of the value, after white
// space (and before the end of b); fn must check the value, by Skip or
// otherwise, and return the index after it. Members returns the index after the object, and false
// if b holds no valid object there or fn returned false.
func Members(b []byte, i int, fn func(key []byte, f Flags, i int) (int, bool)) (int, bool) {
	i = Space(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		end, f, ok := String(b, i)
		if !ok {
			return 0, false
		}
		k := b[i+1 : end-1]
		i = Space(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		if i = Space(b, i+1); i >= len(b) {
			return 0, false
		}
		if i, ok = fn(k, f, i); !ok {
			return 0, false
		}
		i = Space(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// Whole reports whether the JSON value of b, checked up to end, is all of
// b: only white space follows it.
func Whole(b []byte, end int) bool { return Space(b, end) == len(b) }
