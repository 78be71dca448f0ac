package server

import (
	"github.com/hangar-mcp/hangar/internal/server/fastpath"
	"github.com/hangar-mcp/hangar/internal/server/stateless"
)

// FastServed returns how many calls the fast paths (of sessions and of
// 2026-07-28) have served in this process.
func FastServed() int64 { return fastpath.Served() + stateless.Served() }
