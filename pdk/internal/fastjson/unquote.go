package fastjson

import (
	"strings"
	"unicode/utf8"
)

// Unquote returns the text of a JSON string checked by String, given its
// body (the bytes between the quotes) and flags, as encoding/json decodes
// it into a Go string: escapes resolved, a lone or broken surrogate and
// each byte of invalid UTF-8 replaced by U+FFFD.
func Unquote(body []byte, f Flags) string {
	if Plain(body, f) {
		return string(body)
	}
	var out strings.Builder
	out.Grow(len(body))
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '\\':
			switch e := body[i+1]; e {
			case 'b':
				out.WriteByte('\b')
			case 'f':
				out.WriteByte('\f')
			case 'n':
				out.WriteByte('\n')
			case 'r':
				out.WriteByte('\r')
			case 't':
				out.WriteByte('\t')
			case 'u':
				r := hex4(body[i+2 : i+6])
				i += 6
				if r >= 0xD800 && r < 0xDC00 && i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
					// A high surrogate, followed by an escape that may be
					// the low one.
					if lo := hex4(body[i+2 : i+6]); lo >= 0xDC00 && lo < 0xE000 {
						out.WriteRune(0x10000 + (r-0xD800)<<10 + (lo - 0xDC00))
						i += 6
						continue
					}
				}
				if r >= 0xD800 && r < 0xE000 {
					r = utf8.RuneError
				}
				out.WriteRune(r)
				continue
			default: // '"', '\\', '/'
				out.WriteByte(e)
			}
			i += 2
		case c < utf8.RuneSelf:
			out.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRune(body[i:])
			out.WriteRune(r) // U+FFFD for a byte of invalid UTF-8
			i += n
		}
	}
	return out.String()
}

// hex4 decodes four hexadecimal digits, checked by String.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
