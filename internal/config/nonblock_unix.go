//go:build unix || windows

package config

import "syscall"

// oNonblock opens a FIFO without waiting for a writer.
const oNonblock = syscall.O_NONBLOCK
