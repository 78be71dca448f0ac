//go:build unix

package source

import (
	"os"
	"syscall"
)

// holdTemp marks a temporary file as being written, for as long as f is
// open: an exclusive advisory lock, which the kernel drops when the
// writing process dies.
func holdTemp(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// abandonedTemp reports whether no live process is writing the temporary
// file at path (see holdTemp).
func abandonedTemp(path string, _ os.FileInfo) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
