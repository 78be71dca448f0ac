package plugin

import (
	"os"
	"syscall"
)

// reservation is a span of address space that a memory grows into without
// moving; its bytes past committed are inaccessible. It is not safe for
// concurrent use: an instance's memories change only during its calls.
type reservation struct {
	buf       []byte // the whole span
	committed uint64 // accessible bytes, a multiple of the page size
}

var osPageSize = uint64(os.Getpagesize())

// reserve maps max bytes of address space, inaccessible and counted
// against nothing, or returns nil if it cannot.
func reserve(max uint64) *reservation {
	if max == 0 || max > 1<<40 {
		return nil
	}
	size := (max + osPageSize - 1) &^ (osPageSize - 1)
	buf, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return &reservation{buf: buf}
}

// grow makes the first size bytes accessible and returns them, or nil if
// size is past the reservation or the system refuses.
func (r *reservation) grow(size uint64) []byte {
	if r.buf == nil || size > uint64(len(r.buf)) {
		return nil
	}
	if size > r.committed {
		end := min((size+osPageSize-1)&^(osPageSize-1), uint64(len(r.buf)))
		if err := syscall.Mprotect(r.buf[r.committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		r.committed = end
	}
	return r.buf[:size:size]
}

// free unmaps the reservation: its pages go back to the system at once.
// The memory must not be used after.
func (r *reservation) free() {
	if r.buf != nil {
		syscall.Munmap(r.buf)
		r.buf, r.committed = nil, 0
	}
}
