package fuel

// edit is one change to a function body: at pos (an offset in the body),
// insert the check (end == pos) or replace body[pos:end] with a function
// index.
type edit struct {
	pos, end int
	fn       uint32
}

// rewriteCode rewrites the code section, whose count has been read.
func rewriteCode(buf []byte, r *reader, m *module, n uint32) []byte {
	buf = appendU32(buf, n)
	loopCheck := appendCheck(nil, m, LoopCost)
	callCheck := appendCheck(nil, m, CallCost)
	var edits []edit
	var body []byte
	var loops []int
	for range n {
		size := r.u32()
		f := r.sub(int(size))
		edits = edits[:0]
		var entry bool
		f.loops = loops
		edits, entry = scanBody(f, m, edits)
		loops = f.loops
		body = body[:0]
		prev := 0
		if entry {
			body = append(body, f.b[:localsEnd(f)]...)
			body = append(body, callCheck...)
			prev = localsEnd(f)
		}
		for _, e := range edits {
			body = append(body, f.b[prev:e.pos]...)
			if e.end == e.pos {
				body = append(body, loopCheck...)
			} else {
				body = appendU32(body, e.fn)
			}
			prev = e.end
		}
		body = append(body, f.b[prev:]...)
		buf = appendU32(buf, uint32(len(body)))
		buf = append(buf, body...)
	}
	checkEnd(r)
	return buf
}

// localsEnd returns the offset of the first instruction of a body; scanBody
// leaves it in the reader's base-relative mark.
func localsEnd(f *reader) int { return f.mark }

// appendCheck appends the check: if counter <= 0 { counter = fuel() };
// counter -= cost. (Testing the counter before taking from it, rather than
// after, keeps the test off the store's path: in a tight loop compiled by
// wazero the check costs about 0.05 ns an iteration this way and 0.3 to
// 0.5 ns the other, measured side by side on the same machine.)
func appendCheck(b []byte, m *module, cost int64) []byte {
	g := func(op byte) {
		b = append(b, op)
		b = appendU32(b, m.counter)
	}
	g(0x23)                                     // global.get
	b = append(b, 0x42, 0x00, 0x57, 0x04, 0x40) // i64.const 0; i64.le_s; if
	b = append(b, 0x10)                         // call
	b = appendU32(b, m.fuelFunc)
	g(0x24)             // global.set
	b = append(b, 0x0b) // end
	g(0x23)             // global.get
	b = append(b, 0x42) // i64.const
	b = appendS64(b, cost)
	b = append(b, 0x7d) // i64.sub
	g(0x24)             // global.set
	return b
}

// blockType skips a block type.
func blockType(r *reader, m *module) {
	c := r.byte()
	if c == 0x40 || isValType(c) {
		return
	}
	r.off--
	v := r.sleb(33)
	if v < 0 {
		r.unsupported("block type %#x", c)
	}
	if v >= int64(m.nTypes) {
		r.failf("type index %d out of range (%d)", v, m.nTypes)
	}
}

// memarg skips a memory access's alignment (with a memory index when bit 6
// is set: multi-memory) and offset.
func memarg(r *reader) {
	if a := r.u32(); a&0x40 != 0 {
		r.u32()
	}
	r.u64()
}

// scanBody decodes one function body and returns the edits it needs, and
// whether it needs a check at its entry: whether it makes a call outside
// every loop. (A call inside a loop comes after a check at the loop's head
// on every path, since a loop is entered only there; Go's compiler puts
// the whole body of a function with jumps in one loop.) It sets f.mark to
// the end of the locals.
func scanBody(f *reader, m *module, edits []edit) ([]edit, bool) {
	nl := f.count(2)
	var total uint64
	for range nl {
		total += uint64(f.u32())
		if total > 50000 {
			// Far more than any compiler emits; this only keeps a bogus
			// count from mattering here.
			f.unsupported("more than 50000 locals")
		}
		valType(f)
	}
	f.mark = f.off
	entry := false
	depth := 0
	// loops[i] is the number of loops among the innermost i+1 open
	// blocks; only its last entry and the depth matter.
	loopsAt := f.loops[:0]
	inLoop := func() bool { return depth > 0 && loopsAt[depth-1] > 0 }
	open := func(loop bool) {
		n := 0
		if depth > 0 {
			n = loopsAt[depth-1]
		}
		if loop {
			n++
		}
		loopsAt = append(loopsAt[:depth], n)
		depth++
	}
	defer func() { f.loops = loopsAt[:0] }()
	for {
		op := f.byte()
		switch {
		case op >= 0x45 && op <= 0xc4: // numeric, no immediates
			continue
		case op >= 0x28 && op <= 0x3e: // loads and stores
			memarg(f)
			continue
		}
		switch op {
		case 0x00, 0x01, 0x05, 0x0f, 0x1a, 0x1b, 0xd1: // unreachable nop else return drop select ref.is_null
		case 0x02, 0x04: // block if
			blockType(f, m)
			open(false)
		case 0x03: // loop
			blockType(f, m)
			open(true)
			edits = append(edits, edit{pos: f.off, end: f.off})
		case 0x0b: // end
			if depth == 0 {
				checkEnd(f)
				return edits, entry
			}
			depth--
		case 0x0c, 0x0d: // br br_if
			f.u32()
		case 0x0e: // br_table
			k := f.count(1)
			for range k + 1 {
				f.u32()
			}
		case 0x10, 0x12: // call return_call
			entry = entry || !inLoop()
			at := f.off
			fn := f.u32Max(m.nFuncs, "function")
			if fn >= m.nFuncImports {
				edits = append(edits, edit{pos: at, end: f.off, fn: fn + 1})
			}
		case 0x11, 0x13: // call_indirect return_call_indirect
			entry = entry || !inLoop()
			f.u32Max(m.nTypes, "type")
			f.u32()
		case 0x1c: // select t*
			k := f.count(1)
			for range k {
				valType(f)
			}
		case 0x20, 0x21, 0x22: // local.get local.set local.tee
			f.u32()
		case 0x23, 0x24: // global.get global.set
			f.u32Max(m.nGlobals, "global")
		case 0x25, 0x26: // table.get table.set
			f.u32()
		case 0x3f, 0x40: // memory.size memory.grow
			f.u32()
		case 0x41:
			f.sleb(32)
		case 0x42:
			f.sleb(64)
		case 0x43:
			f.bytes(4)
		case 0x44:
			f.bytes(8)
		case 0xd0: // ref.null
			refType(f)
		case 0xd2: // ref.func
			at := f.off
			fn := f.u32Max(m.nFuncs, "function")
			if fn >= m.nFuncImports {
				edits = append(edits, edit{pos: at, end: f.off, fn: fn + 1})
			}
		case 0xfc:
			miscOp(f)
		case 0xfd:
			simdOp(f)
		case 0xfe:
			atomicOp(f)
		case 0x06, 0x07, 0x08, 0x09, 0x0a, 0x18, 0x19, 0x1f:
			f.off--
			f.unsupported("exception handling instruction %#x", op)
		case 0x14, 0x15, 0xd3, 0xd4, 0xd5, 0xd6, 0xfb:
			f.off--
			f.unsupported("typed function reference or GC instruction %#x", op)
		default:
			f.off--
			f.failf("unknown instruction %#x", op)
		}
	}
}

// miscOp skips the immediates of a 0xFC instruction.
func miscOp(f *reader) {
	switch sub := f.u32(); sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // saturating truncations
	case 8: // memory.init data mem
		f.u32()
		f.u32()
	case 9: // data.drop
		f.u32()
	case 10: // memory.copy dst src
		f.u32()
		f.u32()
	case 11: // memory.fill
		f.u32()
	case 12: // table.init elem table
		f.u32()
		f.u32()
	case 13: // elem.drop
		f.u32()
	case 14: // table.copy dst src
		f.u32()
		f.u32()
	case 15, 16, 17: // table.grow table.size table.fill
		f.u32()
	default:
		f.unsupported("instruction 0xfc %d", sub)
	}
}

// simdOp skips the immediates of a 0xFD instruction.
func simdOp(f *reader) {
	sub := f.u32()
	switch {
	case sub <= 11: // v128.load*, v128.store
		memarg(f)
	case sub == 12: // v128.const
		f.bytes(16)
	case sub == 13: // i8x16.shuffle
		f.bytes(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		f.byte()
	case sub >= 84 && sub <= 91: // v128.load*_lane, v128.store*_lane
		memarg(f)
		f.byte()
	case sub == 92 || sub == 93: // v128.load32_zero, v128.load64_zero
		memarg(f)
	case sub <= 255: // the rest of SIMD has no immediates
	default:
		f.unsupported("instruction 0xfd %d (relaxed SIMD)", sub)
	}
}

// atomicOp skips the immediates of a 0xFE instruction (threads).
func atomicOp(f *reader) {
	switch sub := f.u32(); {
	case sub == 3: // atomic.fence
		if c := f.byte(); c != 0 {
			f.failf("atomic.fence flags %#x", c)
		}
	case sub <= 2 || (sub >= 0x10 && sub <= 0x4e):
		memarg(f)
	default:
		f.unsupported("instruction 0xfe %d", sub)
	}
}
