// Package fuel instruments a WebAssembly module with a fuel counter, so that
// the host can stop it at a deadline without wazero's termination check.
//
// Rewrite adds one imported function, Module.Name of type [] -> [i64], and
// one mutable i64 global, the counter, which starts at Budget. At the head
// of every loop the rewritten code takes LoopCost from the counter, and
// CallCost at the entry of every function that makes a call outside a loop
// (a call inside a loop always comes after a check at the loop's head);
// when the counter is down to zero or below, it first calls the import and
// stores what it returns as the new counter. Code between two checks runs in bounded time
// (no loop, and no call into a function that could call further without a
// check of its own), so a guest that runs calls the import again and again.
// The import is where the host looks at the deadline: it stops the call (by
// panicking) once the deadline has passed, and otherwise returns the next
// budget. Calling into Go is also what lets Go's garbage collector stop the
// goroutine that runs the guest: without such a call a looping guest would
// hold every other goroutine at the next collection.
//
// Adding an import shifts the index of every function the module defines by
// one; Rewrite renumbers calls, ref.func, exports, element segments, the
// start function and the "name" section's function names, and drops DWARF
// sections, whose code offsets no longer hold.
//
// Rewrite decodes every instruction of the module. It handles the
// WebAssembly 2.0 features wazero implements (multi-value, reference types,
// bulk memory, saturating conversions, sign extension, SIMD) and threads;
// a module using anything else (exception handling, typed function
// references, GC types, tags, relaxed SIMD) gets ErrUnsupported, and the
// caller keeps its other guard. Malformed input gets ErrInvalid.
//
// Rewrite checks the indices that the rewrite could turn from invalid to
// valid (global, type and function indices at the new ones' places), so that
// a malformed module cannot reach the counter or the import; everything else
// is left to the compiler's validation of the result.
package fuel

import (
	"errors"
	"fmt"
	"strings"
)

// The import the rewritten module calls when its fuel runs out.
const (
	Module = "hangar:guard"
	Name   = "fuel"
)

// Budget is the fuel a rewritten module starts with, and what the import
// should return to refill it. Measured on a 2-core Xeon VM: a tight loop
// spends it in about 0.2 ms, recursive functions in about 0.3 ms.
const Budget = 1 << 17

// The fuel one check takes: a loop iteration, or the entry of a function that
// makes calls (a call costs about twice the tightest loop iteration).
const (
	LoopCost = 1
	CallCost = 2
)

// Version changes whenever Rewrite's output for the same input changes, so
// that caches of rewritten modules can key on it.
const Version = 2

var (
	// ErrUnsupported reports a module that uses a feature Rewrite does not
	// handle. The module may well be valid.
	ErrUnsupported = errors.New("fuel: unsupported WebAssembly feature")
	// ErrInvalid reports a malformed module.
	ErrInvalid = errors.New("fuel: malformed WebAssembly module")
)

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// rank orders the known sections as the binary format requires them.
var rank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secTag: 6, secGlobal: 7, secExport: 8, secStart: 9, secElement: 10,
	secDataCount: 11, secCode: 12, secData: 13,
}

type section struct {
	id   byte
	body *reader
}

// module is what the rewrite needs to know about the input.
type module struct {
	nTypes       uint32 // types in the input
	nFuncImports uint32
	nFuncs       uint32 // imported and defined, in the input
	nGlobals     uint32 // imported and defined, in the input
	fuelType     uint32 // the new type's index (nTypes)
	fuelFunc     uint32 // the new import's index (nFuncImports)
	counter      uint32 // the new global's index (nGlobals)
}

// funcIndex maps an input function index to the output's.
func (m *module) funcIndex(i uint32) uint32 {
	if i >= m.nFuncImports {
		return i + 1
	}
	return i
}

// Rewrite returns wasm instrumented with the fuel counter. The input is not
// modified.
func Rewrite(wasm []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			out, err = nil, pe.err
		}
	}()
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errNotWasm)
	}
	if string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return nil, fmt.Errorf("%w: version %x", ErrUnsupported, wasm[4:8])
	}
	r := &reader{b: wasm, off: 8}
	var secs []section
	last := 0
	var have [14]bool
	for !r.done() {
		id := r.byte()
		size := r.u32()
		if id == secTag {
			r.unsupported("tag section (exception handling)")
		}
		if int(id) >= len(rank) {
			r.failf("unknown section id %d", id)
		}
		body := r.sub(int(size))
		if id != secCustom {
			if rank[id] <= last {
				r.failf("section %d out of order", id)
			}
			last = rank[id]
			have[id] = true
		}
		secs = append(secs, section{id: id, body: body})
	}

	// First pass: the counts the rewrite needs.
	m := &module{}
	var nDefined uint32
	for _, s := range secs {
		b := *s.body
		switch s.id {
		case secType:
			m.nTypes = parseTypes(&b)
		case secImport:
			parseImports(&b, m)
		case secFunction:
			n := b.count(1)
			for range n {
				b.u32Max(m.nTypes, "type")
			}
			nDefined = uint32(n)
			checkEnd(&b)
		case secGlobal:
			n := b.count(1)
			m.nGlobals += uint32(n)
		}
	}
	m.nFuncs = m.nFuncImports + nDefined
	if m.nFuncs == ^uint32(0) || m.nGlobals == ^uint32(0) || m.nTypes == ^uint32(0) {
		return nil, fmt.Errorf("%w: too many functions, globals or types", ErrUnsupported)
	}
	m.fuelType, m.fuelFunc, m.counter = m.nTypes, m.nFuncImports, m.nGlobals

	out = make([]byte, 0, len(wasm)+len(wasm)/8+64)
	out = append(out, wasm[:8]...)
	var buf []byte
	sawCode := false
	// emitMissing adds the sections the rewrite needs that the input lacks,
	// in their places before a section of rank next.
	emitMissing := func(next int) {
		if !have[secType] && next > rank[secType] {
			have[secType] = true
			out = appendSection(out, secType, appendFuelType(appendU32(nil, 1)))
		}
		if !have[secImport] && next > rank[secImport] {
			have[secImport] = true
			out = appendSection(out, secImport, appendFuelImport(appendU32(nil, 1), m))
		}
		if !have[secGlobal] && next > rank[secGlobal] {
			have[secGlobal] = true
			out = appendSection(out, secGlobal, appendCounter(appendU32(nil, 1)))
		}
	}
	for _, s := range secs {
		b := s.body
		if s.id != secCustom {
			emitMissing(rank[s.id])
		}
		buf = buf[:0]
		switch s.id {
		case secCustom:
			buf = rewriteCustom(buf, b, m)
			if buf == nil {
				continue
			}
		case secType:
			n := b.u32()
			buf = appendU32(buf, n+1)
			buf = append(buf, b.b[b.off:]...)
			buf = appendFuelType(buf)
		case secImport:
			n := b.u32()
			buf = appendU32(buf, n+1)
			buf = append(buf, b.b[b.off:]...)
			buf = appendFuelImport(buf, m)
		case secGlobal:
			buf = rewriteGlobals(buf, b, m)
		case secExport:
			buf = rewriteExports(buf, b, m)
		case secStart:
			buf = appendU32(buf, m.funcIndex(b.u32Max(m.nFuncs, "function")))
			checkEnd(b)
		case secElement:
			buf = rewriteElements(buf, b, m)
		case secCode:
			sawCode = true
			if n := b.count(1); uint32(n) != nDefined {
				b.failf("%d function bodies for %d functions", n, nDefined)
			}
			buf = rewriteCode(buf, b, m, nDefined)
		case secData:
			checkData(b, m)
			buf = append(buf, b.b...)
		case secTable:
			checkTables(b)
			buf = append(buf, b.b...)
		default: // memory, data count: nothing to rewrite
			buf = append(buf, b.b...)
		}
		out = appendSection(out, s.id, buf)
	}
	emitMissing(len(rank) + 1)
	if !sawCode && nDefined > 0 {
		return nil, fmt.Errorf("%w: %d functions without a code section", ErrInvalid, nDefined)
	}
	return out, nil
}

func checkEnd(r *reader) {
	if !r.done() {
		r.failf("%d bytes left at the end of a section", len(r.b)-r.off)
	}
}

func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

// appendFuelType appends the import's type, [] -> [i64].
func appendFuelType(b []byte) []byte { return append(b, 0x60, 0x00, 0x01, 0x7e) }

func appendFuelImport(b []byte, m *module) []byte {
	b = appendU32(b, uint32(len(Module)))
	b = append(b, Module...)
	b = appendU32(b, uint32(len(Name)))
	b = append(b, Name...)
	b = append(b, 0x00)
	return appendU32(b, m.fuelType)
}

// appendCounter appends the counter's definition: a mutable i64 starting at
// Budget.
func appendCounter(b []byte) []byte {
	b = append(b, 0x7e, 0x01, 0x42)
	b = appendS64(b, Budget)
	return append(b, 0x0b)
}

// isValType reports whether c is a value type Rewrite handles.
func isValType(c byte) bool {
	switch c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

func valType(r *reader) {
	c := r.byte()
	if !isValType(c) {
		r.off--
		r.unsupported("value type %#x", c)
	}
}

func refType(r *reader) {
	c := r.byte()
	if c != 0x70 && c != 0x6f {
		r.off--
		r.unsupported("reference type %#x", c)
	}
}

func limits(r *reader) {
	flags := r.byte()
	if flags > 0x07 {
		r.off--
		r.unsupported("limits flags %#x", flags)
	}
	r.u64()
	if flags&1 != 0 {
		r.u64()
	}
}

func parseTypes(r *reader) uint32 {
	n := r.count(3)
	for range n {
		c := r.byte()
		if c != 0x60 {
			r.off--
			r.unsupported("type form %#x (GC types)", c)
		}
		for range 2 {
			k := r.count(1)
			for range k {
				valType(r)
			}
		}
	}
	checkEnd(r)
	return uint32(n)
}

func parseImports(r *reader, m *module) {
	n := r.count(4)
	for range n {
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case 0x00:
			r.u32Max(m.nTypes, "type")
			m.nFuncImports++
		case 0x01:
			refType(r)
			limits(r)
		case 0x02:
			limits(r)
		case 0x03:
			valType(r)
			if mut := r.byte(); mut > 1 {
				r.failf("global mutability %#x", mut)
			}
			m.nGlobals++
		case 0x04:
			r.unsupported("tag import (exception handling)")
		default:
			r.failf("import kind %#x", kind)
		}
	}
	checkEnd(r)
}

func checkTables(r *reader) {
	n := r.count(2)
	for range n {
		if r.off < len(r.b) && r.b[r.off] == 0x40 {
			r.unsupported("table with an initializer")
		}
		refType(r)
		limits(r)
	}
	checkEnd(r)
}

func rewriteGlobals(buf []byte, r *reader, m *module) []byte {
	n := r.count(3)
	buf = appendU32(buf, uint32(n)+1)
	for range n {
		start := r.off
		valType(r)
		if mut := r.byte(); mut > 1 {
			r.failf("global mutability %#x", mut)
		}
		buf = append(buf, r.b[start:r.off]...)
		buf = constExpr(buf, r, m)
	}
	checkEnd(r)
	return appendCounter(buf)
}

func rewriteExports(buf []byte, r *reader, m *module) []byte {
	n := r.count(3)
	buf = appendU32(buf, uint32(n))
	for range n {
		start := r.off
		r.name()
		kind := r.byte()
		buf = append(buf, r.b[start:r.off]...)
		switch kind {
		case 0x00:
			buf = appendU32(buf, m.funcIndex(r.u32Max(m.nFuncs, "function")))
		case 0x01, 0x02:
			buf = appendU32(buf, r.u32())
		case 0x03:
			buf = appendU32(buf, r.u32Max(m.nGlobals, "global"))
		case 0x04:
			r.unsupported("tag export (exception handling)")
		default:
			r.failf("export kind %#x", kind)
		}
	}
	checkEnd(r)
	return buf
}

func rewriteElements(buf []byte, r *reader, m *module) []byte {
	n := r.count(2)
	buf = appendU32(buf, uint32(n))
	for range n {
		flags := r.u32()
		if flags > 7 {
			r.failf("element segment flags %d", flags)
		}
		buf = appendU32(buf, flags)
		if flags&1 == 0 { // active
			if flags&2 != 0 {
				buf = appendU32(buf, r.u32())
			}
			buf = constExpr(buf, r, m)
		}
		if flags&3 != 0 { // elemkind or reftype
			if flags&4 == 0 {
				if k := r.byte(); k != 0x00 {
					r.off--
					r.failf("element kind %#x", k)
				}
				buf = append(buf, 0x00)
			} else {
				start := r.off
				refType(r)
				buf = append(buf, r.b[start:r.off]...)
			}
		}
		k := r.count(1)
		buf = appendU32(buf, uint32(k))
		for range k {
			if flags&4 == 0 {
				buf = appendU32(buf, m.funcIndex(r.u32Max(m.nFuncs, "function")))
			} else {
				buf = constExpr(buf, r, m)
			}
		}
	}
	checkEnd(r)
	return buf
}

func checkData(r *reader, m *module) {
	n := r.count(1)
	for range n {
		switch mode := r.u32(); mode {
		case 0:
			constExpr(nil, r, m)
		case 1:
		case 2:
			r.u32()
			constExpr(nil, r, m)
		default:
			r.failf("data segment mode %d", mode)
		}
		r.bytes(int(r.u32()))
	}
	checkEnd(r)
}

// constExpr copies a constant expression (up to and including its end) to
// buf, renumbering ref.func. A nil buf only checks.
func constExpr(buf []byte, r *reader, m *module) []byte {
	keep := buf != nil
	start := r.off
	for {
		op := r.byte()
		switch op {
		case 0x0b:
			if keep {
				buf = append(buf, r.b[start:r.off]...)
			}
			return buf
		case 0x41:
			r.sleb(32)
		case 0x42:
			r.sleb(64)
		case 0x43:
			r.bytes(4)
		case 0x44:
			r.bytes(8)
		case 0x23:
			r.u32Max(m.nGlobals, "global")
		case 0xd0:
			refType(r)
		case 0xd2:
			at := r.off - 1
			f := r.u32Max(m.nFuncs, "function")
			if keep {
				buf = append(buf, r.b[start:at]...)
				buf = append(buf, 0xd2)
				buf = appendU32(buf, m.funcIndex(f))
			}
			start = r.off
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constants
		case 0xfd:
			if sub := r.u32(); sub != 12 {
				r.unsupported("SIMD instruction %d in a constant expression", sub)
			}
			r.bytes(16)
		default:
			r.off--
			r.failf("instruction %#x in a constant expression", op)
		}
	}
}

// rewriteCustom rewrites the name section and drops DWARF sections. It
// returns nil to drop the section.
func rewriteCustom(buf []byte, r *reader, m *module) []byte {
	n := r.u32()
	name := string(r.bytes(int(n)))
	switch {
	case strings.HasPrefix(name, ".debug_"):
		return nil
	case name == "name":
		return rewriteNames(buf, r, m)
	}
	return append(buf, r.b...)
}

// rewriteNames renumbers the function and local names of a "name" section.
// Names are optional: a malformed name section is dropped, not an error.
func rewriteNames(buf []byte, r *reader, m *module) (out []byte) {
	defer func() {
		if x := recover(); x != nil {
			if _, ok := x.(parseError); !ok {
				panic(x)
			}
			out = nil
		}
	}()
	buf = appendU32(buf, 4)
	buf = append(buf, "name"...)
	var sub []byte
	for !r.done() {
		id := r.byte()
		s := r.sub(int(r.u32()))
		sub = sub[:0]
		switch id {
		case 1: // function names
			sub = renameMap(sub, s, m)
		case 2, 3: // local names, label names (extended name section)
			k := s.count(2)
			sub = appendU32(sub, uint32(k))
			for range k {
				sub = appendU32(sub, m.funcIndex(s.u32()))
				start := s.off
				nn := s.count(2)
				for range nn {
					s.u32()
					s.name()
				}
				sub = append(sub, s.b[start:s.off]...)
			}
			checkEnd(s)
		default:
			sub = append(sub, s.b...)
		}
		buf = append(buf, id)
		buf = appendU32(buf, uint32(len(sub)))
		buf = append(buf, sub...)
	}
	return buf
}

func renameMap(sub []byte, s *reader, m *module) []byte {
	k := s.count(2)
	sub = appendU32(sub, uint32(k))
	for range k {
		sub = appendU32(sub, m.funcIndex(s.u32()))
		start := s.off
		s.name()
		sub = append(sub, s.b[start:s.off]...)
	}
	checkEnd(s)
	return sub
}
