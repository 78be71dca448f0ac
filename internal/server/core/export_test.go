package core

// FullChecks reports how many tool calls' arguments went to the full
// validator rather than the one-pass scan of a simple schema.
func FullChecks() uint64 { return fullChecks.Load() }
