//go:build unix

package cli

import "golang.org/x/sys/unix"

// writable reports whether files can be created in dir: it is writable by
// this process and not on a read-only file system. It changes nothing.
func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }
