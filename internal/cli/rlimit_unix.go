//go:build unix

package cli

import "syscall"

// connectionLimit is the default cap on open HTTP connections: the
// open-file limit less a reserve for plugins' files, modules, the cache and
// the process itself (a quarter of the limit, at least 64), and at least 16.
func connectionLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return fallbackConnections
	}
	return connectionsFor(uint64(rl.Cur))
}
