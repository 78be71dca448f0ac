package server

import "github.com/hangar-mcp/hangar/internal/server/fastpath"

// FastServed returns how many calls the fast path has served in this
// process.
func FastServed() int64 { return fastpath.Served() }
