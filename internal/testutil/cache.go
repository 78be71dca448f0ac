package testutil

import "encoding/binary"

// CacheCorruption is a way of damaging an entry of wazero's on-disk
// compilation cache in place. Corrupt changes the entry's bytes and reports
// whether it could (whether the entry is in the format it knows).
type CacheCorruption struct {
	Name    string
	Corrupt func(entry []byte) bool
}

// CacheCorruptions are the corruptions seen to break Hangar for good before
// it checked its cache: a flipped byte in the machine code (every start
// refused) and a function-offset table shifted by one byte (every start
// crashed).
var CacheCorruptions = []CacheCorruption{
	{"flipped code byte", func(b []byte) bool {
		_, _, code, ok := wazeroLayout(b)
		if ok {
			b[code+(len(b)-code)/3] ^= 0xff
		}
		return ok
	}},
	{"shifted offset table", func(b []byte) bool {
		table, n, _, ok := wazeroLayout(b)
		if ok {
			t := b[table : table+8*n]
			copy(t[1:], append([]byte(nil), t[:len(t)-1]...)) // every offset moves one byte up
			t[0] = 0x40
		}
		return ok
	}},
}

// wazeroLayout returns where the function-offset table and the code of a
// cache entry start, and the number of functions, per wazero's format
// (magic, version, function count, 8-byte offsets, code length, code).
func wazeroLayout(b []byte) (table, n, code int, ok bool) {
	if len(b) < 7 {
		return 0, 0, 0, false
	}
	table = 7 + int(b[6]) + 4
	if len(b) < table {
		return 0, 0, 0, false
	}
	n = int(binary.LittleEndian.Uint32(b[table-4:]))
	code = table + 8*n + 8
	if n == 0 || len(b) <= code {
		return 0, 0, 0, false
	}
	return table, n, code, true
}
