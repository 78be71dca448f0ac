//go:build !linux

package plugin

// reservation is not available on this platform: memories are Go slices.
type reservation struct{}

func reserve(uint64) *reservation { return nil }

func (r *reservation) grow(uint64) []byte { return nil }

func (r *reservation) free() {}
