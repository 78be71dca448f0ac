//go:build unix || windows

package plugin

import "syscall"

// oNonblock opens a FIFO without waiting for the other end.
const oNonblock = syscall.O_NONBLOCK
