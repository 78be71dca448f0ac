package rawjson

// maxValidDepth is encoding/json's bound on nesting, which Valid keeps.
const maxValidDepth = 10000

// Valid reports whether b is one valid JSON value, which white space may
// surround: what json.Valid reports, in one pass without its scanner's
// call per byte (FuzzValid holds the two equal). Like json.Valid, it
// accepts bytes that are not UTF-8 inside strings, and refuses nesting
// deeper than 10000.
func Valid(b []byte) bool {
	// inObject[d] tells whether the container at depth d is an object.
	var stack [64]bool
	inObject := stack[:0]
	i := SkipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(inObject) == maxValidDepth {
				return false
			}
			inObject = append(inObject, c == '{')
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == closing(c) {
				inObject = inObject[:len(inObject)-1]
				i++
				break
			}
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			i = validString(b, i)
		case c == 't':
			i = literal(b, i, "true")
		case c == 'f':
			i = literal(b, i, "false")
		case c == 'n':
			i = literal(b, i, "null")
		default:
			i = number(b, i)
		}
		if i < 0 {
			return false
		}
		// A value ended at b[i]: close the containers it ends, and go on
		// to the next value.
		for {
			i = SkipSpace(b, i)
			if len(inObject) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			obj := inObject[len(inObject)-1]
			if c := b[i]; c == '}' && obj || c == ']' && !obj {
				inObject = inObject[:len(inObject)-1]
				i++
				continue
			} else if c != ',' {
				return false
			}
			i = SkipSpace(b, i+1)
			if obj {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

func closing(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

// member reads an object member's key and colon at b[i], and returns the
// index of its value, or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipSpace(b, i+1)
}

// validString returns the end of the string at b[i] (a quote), or -1 if it
// is not a valid JSON string.
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		if plain[b[i]] {
			continue
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// literal returns the end of lit at b[i], or -1.
func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// number returns the end of the JSON number at b[i], or -1.
func number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
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
			return -1
		}
		i = j
	}
	return i
}

// digits returns the index of the first byte at or after b[i] that is not
// a decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
