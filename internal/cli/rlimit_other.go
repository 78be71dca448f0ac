//go:build !unix

package cli

// connectionLimit is the default cap on open HTTP connections where the
// open-file limit is not known.
func connectionLimit() int { return fallbackConnections }
