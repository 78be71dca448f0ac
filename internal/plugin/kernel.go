package plugin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The Extism kernel, in Go.
//
// An Extism plugin does not pass its input, output, errors or the arguments
// of host functions through its own memory but through a second memory, the
// kernel's, by offsets: the guest allocates a block there (alloc), copies
// bytes in and out one byte or eight at a time (store_u8, load_u64, ...),
// and hands the block's offset to the host. Extism's SDKs implement that
// memory as a small Wasm module, the kernel, instantiated beside every
// plugin, and each of those imports as a host function that calls into it.
//
// Hangar keeps the kernel's memory itself, in a Go byte slice per instance,
// and serves every import directly from it: a host call is one Go function
// call with no second module. The memory is laid out as the kernel of
// Extism v1.7 (the one extism/go-sdk v1.7.1 embeds) lays it out, and every
// function computes what the kernel computes from it, with the same
// offsets, lengths, bounds and wrap-around, so that a plugin sees the very
// same numbers under Hangar as under Extism (TestKernelMatchesExtism runs
// both side by side):
//
//	address 0:  unused
//	address 1:  the root (64 bytes): initialized flag (u8), allocator
//	            position (u64 at 9), usable length (u64 at 17), error
//	            block (u64 at 25), input offset and length (33, 41), output
//	            offset and length (49, 57)
//	address 65: the blocks, one after the other: status (u8: 0 unused,
//	            1 active, 2 free), size (u32 at +4), bytes used (u32 at +8),
//	            then size bytes of data, whose address is the block's
//	            offset
//
// alloc bumps the position while the usable length allows; past it, it
// reuses the first free block large enough, splitting it when 128 bytes or
// more would be left over, and otherwise grows the usable length (and the
// memory) by whole pages and bumps. The memory starts at the kernel
// module's 16 pages and grows up to the plugin's memory limit; the bytes
// past the highest one ever written are not stored.
//
// The guest can write anywhere in that memory, block headers included.
// Where Extism's kernel would then loop forever on a corrupted block list
// (an address that wraps around 4GiB), Hangar stops the call as a trap.
// Every other access out of bounds traps as in Extism.

// errKernelBounds is the trap of an access outside the kernel's memory.
var errKernelBounds = errors.New("out of bounds Extism memory access")

// errKernelCorrupt is the trap of a block list that wraps around.
var errKernelCorrupt = errors.New("Extism memory block list corrupted")

// The kernel's memory layout (see above).
const (
	kernelPages     = 16 // the pages the kernel module declares
	pageSize        = 1 << 16
	rootInitialized = 1
	rootPosition    = 9
	rootLength      = 17
	rootError       = 25
	rootInputOffset = 33
	rootInputLength = 41
	rootOutOffset   = 49
	rootOutLength   = 57
	rootSize        = 64
	blocksStart     = 1 + rootSize // 65
	blockHeader     = 12
	blockSizeAt     = 4
	blockUsedAt     = 8
	statusUnused    = 0
	statusActive    = 1
	statusFree      = 2
	splitLeftover   = 128
	// the usable length of a fresh root: one page less the root
	initialLength = pageSize - rootSize
	// the bytes a fresh root clears at the first block (12 headers' worth,
	// as the kernel's write_bytes counts)
	initialClear = blockHeader * blockHeader
)

// kernel is the Extism memory of one instance. It is not safe for
// concurrent use, as the instance is not.
type kernel struct {
	buf      []byte       // the memory up to the highest byte written; the rest is zero
	res      *reservation // where buf grows in place (memory.go); nil: the Go heap
	pages    uint32       // the memory's size in pages
	maxPages uint32
	// input is the offset of the block the host put the call's input in:
	// input_load_u64 reads relative to it, as Extism's Go SDK does.
	input uint64
}

// newKernel returns the memory of a new instance, which may grow to
// maxPages (and has at least the 16 pages of Extism's kernel).
func newKernel(maxPages uint32) *kernel {
	k := &kernel{pages: kernelPages, maxPages: max(maxPages, kernelPages)}
	k.res = reserve(uint64(k.maxPages) << 16)
	return k
}

// release gives the memory back to the system. The kernel must not be
// used after.
func (k *kernel) release() {
	if k.res != nil {
		k.res.free()
		k.res = nil
	}
	k.buf = nil
}

func (k *kernel) size() uint64 { return uint64(k.pages) << 16 }

// trap stops the call.
func trap(err error, addr uint64) { panic(fmt.Errorf("%w at %#x", err, addr)) }

// check traps unless n bytes at a are inside the memory.
func (k *kernel) check(a, n uint64) {
	if a+n > k.size() || a+n < a {
		trap(errKernelBounds, a)
	}
}

// room makes the buffer hold the n bytes at a, which are in the memory.
// The buffer never shrinks, so the bytes it gains are zero.
func (k *kernel) room(a, n uint64) {
	if end := a + n; end > uint64(len(k.buf)) {
		want := max(end, min(2*uint64(len(k.buf)), k.size()), 4096)
		if k.res != nil {
			if b := k.res.grow(want); b != nil {
				k.buf = b
				return
			}
			// The system refused: go on in the Go heap.
			k.buf = append([]byte(nil), k.buf...)
			k.res.free()
			k.res = nil
		}
		k.buf = slices.Grow(k.buf, int(want)-len(k.buf))[:want]
	}
}

func (k *kernel) u8(a uint64) uint8 {
	k.check(a, 1)
	if a >= uint64(len(k.buf)) {
		return 0
	}
	return k.buf[a]
}

func (k *kernel) setU8(a uint64, v uint8) {
	k.check(a, 1)
	k.room(a, 1)
	k.buf[a] = v
}

func (k *kernel) u32(a uint64) uint32 { return uint32(k.word(a, 4)) }

func (k *kernel) setU32(a uint64, v uint32) { k.setWord(a, 4, uint64(v)) }

func (k *kernel) u64(a uint64) uint64 { return k.word(a, 8) }

func (k *kernel) setU64(a uint64, v uint64) { k.setWord(a, 8, v) }

// word reads the little-endian number of n bytes (at most 8) at a.
func (k *kernel) word(a, n uint64) uint64 {
	k.check(a, n)
	var b [8]byte
	k.read(b[:n], a)
	return binary.LittleEndian.Uint64(b[:])
}

// setWord writes v as a little-endian number of n bytes (at most 8) at a.
func (k *kernel) setWord(a, n, v uint64) {
	k.check(a, n)
	k.room(a, n)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	copy(k.buf[a:a+n], b[:n])
}

// read copies the memory at a, which holds len(dst) bytes, into dst.
func (k *kernel) read(dst []byte, a uint64) {
	n := 0
	if a < uint64(len(k.buf)) {
		n = copy(dst, k.buf[a:])
	}
	clear(dst[n:])
}

// clear sets the n bytes at a to zero.
func (k *kernel) clear(a, n uint64) {
	k.check(a, n)
	if a < uint64(len(k.buf)) {
		clear(k.buf[a:min(a+n, uint64(len(k.buf)))])
	}
}

// grow is the kernel's memory.grow: it adds pages, or reports false when
// the memory may not grow that much.
func (k *kernel) grow(pages uint32) bool {
	if uint64(k.pages)+uint64(pages) > uint64(k.maxPages) {
		return false
	}
	k.pages += pages
	return true
}

// root makes the root if its initialized flag is clear, as every kernel
// function but the loads, the stores and length_unsafe does first.
func (k *kernel) root() {
	if k.u8(rootInitialized) != 0 {
		return
	}
	k.setU8(rootInitialized, 1)
	for _, f := range []uint64{rootInputOffset, rootInputLength, rootOutOffset, rootOutLength, rootError, rootPosition} {
		k.setU64(f, 0)
	}
	k.setU64(rootLength, initialLength)
	k.clear(blocksStart, initialClear)
}

// inBounds reports whether p is inside the memory as the loads and stores
// check it: not in the root, and not past the end (the end itself passes,
// and the access then traps).
func (k *kernel) inBounds(p uint64) bool { return p >= rootSize && p <= k.size() }

// inBlocks reports whether p is in the allocator's part of the memory, as
// input_set, output_set and error_set check it.
func (k *kernel) inBlocks(p uint64) bool {
	return p >= blocksStart && p < k.u64(rootLength)+blocksStart
}

// addr is the Wasm address an offset names: the kernel is 32-bit.
func addr(p uint64) uint64 { return uint64(uint32(p)) }

// Allocation.

// alloc is the kernel's alloc: the offset of a new block of n bytes, or 0
// when n is 0 or the memory is full.
func (k *kernel) alloc(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	k.root()
	b, ok := k.allocBlock(n)
	if !ok {
		return 0
	}
	return uint64(b + blockHeader)
}

// allocBlock returns the header of a block for n bytes.
func (k *kernel) allocBlock(n uint64) (uint32, bool) {
	need := n + blockHeader
	pos := k.u64(rootPosition)
	left := k.u64(rootLength) - pos - rootSize
	if need >= left {
		// Only once the memory is used up are free blocks reused.
		if b, ok := k.reuse(n, need, pos); ok {
			return b, true
		}
		d := need - left
		pages := uint32(d >> 16)
		if d&(pageSize-1) != 0 {
			pages++
		}
		if !k.grow(pages) {
			return 0, false
		}
		k.setU64(rootLength, k.u64(rootLength)+uint64(pages)<<16)
	}
	k.setU64(rootPosition, k.u64(rootPosition)+need)
	b := uint32(pos) + blocksStart
	k.setU32(uint64(b)+blockUsedAt, uint32(n))
	k.setU32(uint64(b)+blockSizeAt, uint32(n))
	k.setU8(uint64(b), statusActive)
	return b, true
}

// reuse looks for a block below the position to hold n bytes: an unused
// one, or a free one at least as large, split when enough is left over.
func (k *kernel) reuse(n, need, pos uint64) (uint32, bool) {
	end := pos + blocksStart
	if need > pos || end <= blocksStart {
		return 0, false
	}
	n32 := uint32(n)
	b := uint32(blocksStart)
	for {
		var size uint32
		switch k.u8(uint64(b)) {
		case statusUnused:
			return k.take(b, n32), true
		case statusFree:
			size = k.u32(uint64(b) + blockSizeAt)
			if size >= n32 {
				if rest := size - n32; rest >= splitLeftover {
					k.setU32(uint64(b)+blockUsedAt, 0)
					k.setU32(uint64(b)+blockSizeAt, rest-blockHeader)
					b += rest
					k.setU32(uint64(b)+blockUsedAt, 0)
					k.setU32(uint64(b)+blockSizeAt, n32)
					k.setU8(uint64(b), statusFree)
				}
				return k.take(b, n32), true
			}
		default:
			size = k.u32(uint64(b) + blockSizeAt)
		}
		b = k.next(b, size)
		if end <= uint64(b) {
			return 0, false
		}
	}
}

// take marks the block at b active with n bytes in use.
func (k *kernel) take(b, n uint32) uint32 {
	k.setU8(uint64(b), statusActive)
	k.setU32(uint64(b)+blockUsedAt, n)
	return b
}

// next returns the header after the block at b of size bytes.
func (k *kernel) next(b, size uint32) uint32 {
	nb := b + blockHeader + size
	if nb <= b {
		trap(errKernelCorrupt, uint64(b))
	}
	return nb
}

// find returns the header of the active block whose data is at p, walking
// the blocks from the first as the kernel does.
func (k *kernel) find(p uint64) (uint32, bool) {
	if p < rootSize || k.size() < p {
		return 0, false
	}
	bound := p + blocksStart
	b := uint32(blocksStart)
	for {
		data := b + blockHeader
		if k.u8(uint64(b)) == statusActive && uint64(data) == p {
			return b, true
		}
		b = k.next(b, k.u32(uint64(b)+blockSizeAt))
		if bound <= uint64(b) {
			return 0, false
		}
	}
}

// free is the kernel's free.
func (k *kernel) free(p uint64) {
	if p == 0 {
		return
	}
	k.root()
	b, ok := k.find(p)
	if !ok {
		return
	}
	k.setU8(uint64(b), statusFree)
	if k.u64(rootInputOffset) == p {
		k.setU64(rootInputLength, 0)
	}
}

// length is the kernel's length: the bytes in use in the active block at
// p, or 0.
func (k *kernel) length(p uint64) uint64 {
	if p == 0 {
		return 0
	}
	k.root()
	b, ok := k.find(p)
	if !ok {
		return 0
	}
	return uint64(k.u32(uint64(b) + blockUsedAt))
}

// lengthUnsafe is the kernel's length_unsafe: length without the walk,
// trusting the header before p.
func (k *kernel) lengthUnsafe(p uint64) uint64 {
	if p == 0 || !k.inBounds(p) {
		return 0
	}
	h := uint64(uint32(p) - blockHeader)
	if k.u8(h) != statusActive {
		return 0
	}
	return uint64(k.u32(h + blockUsedAt))
}

// Loads and stores.
//
// These are the hot path: a guest moves all its input and output through
// them. Each first tries the bytes stored, which are in the memory, and
// only then goes the general way.

func (k *kernel) loadU8(p uint64) uint32 {
	if p >= rootSize && p < uint64(len(k.buf)) {
		return uint32(k.buf[p])
	}
	if !k.inBounds(p) {
		return 0
	}
	return uint32(k.u8(addr(p)))
}

func (k *kernel) storeU8(p uint64, v uint32) {
	if p >= rootSize && p < uint64(len(k.buf)) {
		k.buf[p] = uint8(v)
		return
	}
	if k.inBounds(p) {
		k.setU8(addr(p), uint8(v))
	}
}

// loadU64 and storeU64 are Extism's Go SDK's: any address of the memory,
// the root included, and a trap outside it.
func (k *kernel) loadU64(p uint64) uint64 {
	if a := addr(p); a+8 <= uint64(len(k.buf)) {
		return binary.LittleEndian.Uint64(k.buf[a:])
	}
	return k.u64(addr(p))
}

func (k *kernel) storeU64(p, v uint64) {
	if a := addr(p); a+8 <= uint64(len(k.buf)) {
		binary.LittleEndian.PutUint64(k.buf[a:], v)
		return
	}
	k.setU64(addr(p), v)
}

func (k *kernel) inputLoadU8(off uint64) uint32 {
	if len(k.buf) > rootSize && k.buf[rootInitialized] != 0 {
		if binary.LittleEndian.Uint64(k.buf[rootInputLength:]) <= off {
			return 0
		}
		if a := addr(binary.LittleEndian.Uint64(k.buf[rootInputOffset:]) + off); a < uint64(len(k.buf)) {
			return uint32(k.buf[a])
		}
	}
	k.root()
	if k.u64(rootInputLength) <= off {
		return 0
	}
	return uint32(k.u8(addr(k.u64(rootInputOffset) + off)))
}

// inputLoadU64 is Extism's Go SDK's: relative to the input the host set,
// with no check against its length.
func (k *kernel) inputLoadU64(off uint64) uint64 { return k.loadU64(off + k.input) }

// Input, output and error.

func (k *kernel) inputSet(p, n uint64) {
	k.root()
	if k.inBlocks(p) && k.inBlocks(p+n-1) {
		k.setU64(rootInputOffset, p)
		k.setU64(rootInputLength, n)
	}
}

func (k *kernel) outputSet(p, n uint64) {
	k.root()
	if k.inBlocks(p) && k.inBlocks(p+n-1) {
		k.setU64(rootOutOffset, p)
		k.setU64(rootOutLength, n)
	}
}

func (k *kernel) errorSet(p uint64) {
	k.root()
	if p == 0 || (p > rootSize && p < k.u64(rootLength)+blocksStart) {
		k.setU64(rootError, p)
	}
}

// field reads a root field, as input_length, output_offset and the others
// do.
func (k *kernel) field(f uint64) uint64 {
	k.root()
	return k.u64(f)
}

// reset is the kernel's reset: every block is dropped and cleared, and
// input, output and error unset.
func (k *kernel) reset() {
	k.root()
	pos := uint64(k.u32(rootPosition))
	k.setU64(rootPosition, 0)
	k.clear(blocksStart, pos)
	for _, f := range []uint64{rootError, rootOutLength, rootOutOffset, rootInputLength, rootInputOffset} {
		k.setU64(f, 0)
	}
}

// The host's side, as Extism's Go SDK does it.

// setInput starts a call: it resets the memory and puts in in a block of
// its own, the call's input.
func (k *kernel) setInput(in []byte) error {
	k.reset()
	p := k.alloc(uint64(len(in)))
	if p == 0 && len(in) > 0 {
		return fmt.Errorf("the input (%d bytes) does not fit in the plugin's memory limit", len(in))
	}
	k.write(p, in)
	k.inputSet(p, uint64(len(in)))
	k.input = p
	return nil
}

// write copies b to the memory at p, which alloc returned for it.
func (k *kernel) write(p uint64, b []byte) {
	if len(b) == 0 {
		return
	}
	a := addr(p)
	k.check(a, uint64(len(b)))
	k.room(a, uint64(len(b)))
	copy(k.buf[a:], b)
}

// bytes returns a copy of the n bytes at p, or false when they are not in
// the memory.
func (k *kernel) bytes(p, n uint64) ([]byte, bool) {
	a, n := addr(p), uint64(uint32(n))
	if a+n > k.size() {
		return nil, false
	}
	b := make([]byte, n)
	k.read(b, a)
	return b, true
}

// readBlock returns a copy of the block at p (nothing when p is not a
// block), as host functions read their arguments.
func (k *kernel) readBlock(p uint64) ([]byte, error) {
	b, ok := k.bytes(p, k.length(p))
	if !ok {
		return nil, fmt.Errorf("%w: block %#x", errKernelBounds, p)
	}
	return b, nil
}

// writeBlock returns the offset of a new block holding b: 0 when b is empty
// (as in Extism), or when the memory is full (where Extism would write b
// over the root).
func (k *kernel) writeBlock(b []byte) uint64 {
	p := k.alloc(uint64(len(b)))
	if p != 0 {
		k.write(p, b)
	}
	return p
}

// output returns a copy of the call's output (empty when the output is not
// in the memory).
func (k *kernel) output() []byte {
	out, ok := k.bytes(k.field(rootOutOffset), k.field(rootOutLength))
	if !ok {
		return []byte{}
	}
	return out
}

// errorMessage returns the error the call set, or "" (also when the error
// block is no block, or reading it would trap).
func (k *kernel) errorMessage() (msg string) {
	defer func() {
		if recover() != nil {
			msg = ""
		}
	}()
	p := k.field(rootError)
	if p == 0 {
		return ""
	}
	b, ok := k.bytes(p, k.length(p))
	if !ok {
		return ""
	}
	return string(b)
}
