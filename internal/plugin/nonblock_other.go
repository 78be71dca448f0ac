//go:build !unix && !windows

package plugin

// oNonblock is 0 where the platform has no O_NONBLOCK (or no FIFOs).
const oNonblock = 0
