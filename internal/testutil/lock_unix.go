//go:build unix

package testutil

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path (created if need be), waiting
// for another process that holds it, and returns its release. The lock
// goes with the process, so a test binary that dies mid-build holds no
// one up.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return func() { f.Close() }, nil
}
