package fuel

import (
	"errors"
	"fmt"
)

// parseError carries a decoding failure out of the recursive descent; Rewrite
// recovers it and only it.
type parseError struct{ err error }

// reader decodes one byte range of the module. base is the offset of b[0] in
// the whole module, for error messages.
type reader struct {
	b     []byte
	off   int
	base  int
	mark  int   // scanBody: the end of the locals
	loops []int // scanBody: scratch
}

func (r *reader) pos() int { return r.base + r.off }

func (r *reader) failf(format string, args ...any) {
	panic(parseError{fmt.Errorf("%w: at byte %#x: %s", ErrInvalid, r.pos(), fmt.Sprintf(format, args...))})
}

func (r *reader) unsupported(format string, args ...any) {
	panic(parseError{fmt.Errorf("%w: at byte %#x: %s", ErrUnsupported, r.pos(), fmt.Sprintf(format, args...))})
}

func (r *reader) done() bool { return r.off >= len(r.b) }

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.failf("unexpected end")
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.failf("unexpected end (%d bytes wanted, %d left)", n, len(r.b)-r.off)
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

// sub returns a reader for the next n bytes and skips them.
func (r *reader) sub(n int) *reader {
	base := r.pos()
	return &reader{b: r.bytes(n), base: base}
}

// u32 reads an unsigned LEB128 of at most 32 bits.
func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; ; shift += 7 {
		c := r.byte()
		if shift == 28 {
			if c&0xf0 != 0 {
				r.failf("integer too large")
			}
			return v | uint32(c)<<28
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
}

// u64 reads an unsigned LEB128 of at most 64 bits.
func (r *reader) u64() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := r.byte()
		if shift == 63 {
			if c&0xfe != 0 {
				r.failf("integer too large")
			}
			return v | uint64(c)<<63
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
}

// sleb skips a signed LEB128 of at most bits bits and returns its value
// (sign-extended; meaningful up to 64 bits).
func (r *reader) sleb(bits int) int64 {
	var v int64
	maxBytes := (bits + 6) / 7
	for i := 0; ; i++ {
		c := r.byte()
		shift := 7 * i
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				r.failf("integer too long")
			}
			// The unused bits of the last byte must extend the sign.
			used := uint(bits - shift) // meaningful bits in this byte, 1..7
			payload := c & 0x7f
			upper, want := payload>>used, byte(0)
			if payload>>(used-1)&1 == 1 {
				want = 0x7f >> used
			}
			if upper != want {
				r.failf("integer too large")
			}
		}
		if c&0x80 == 0 {
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
}

func (r *reader) u32Max(limit uint32, what string) uint32 {
	v := r.u32()
	if v >= limit {
		r.failf("%s index %d out of range (%d)", what, v, limit)
	}
	return v
}

// count reads a vector length and checks that at least minSize bytes per
// element remain, so a bogus length cannot make a caller allocate.
func (r *reader) count(minSize int) int {
	n := r.u32()
	if uint64(n)*uint64(minSize) > uint64(len(r.b)-r.off) {
		r.failf("vector length %d exceeds its section", n)
	}
	return int(n)
}

func (r *reader) name() {
	n := r.u32()
	r.bytes(int(n))
}

// appendU32 appends v as an unsigned LEB128.
func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendS64 appends v as a signed LEB128.
func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

var errNotWasm = errors.New("not a WebAssembly 1.0 binary module")
