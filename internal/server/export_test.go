package server

// FastServed returns how many calls the fast path has served in this
// process.
func FastServed() int64 { return fastServed.Load() }
