package server

import "github.com/hangar-mcp/hangar/internal/server/wire"

// FastServed returns how many calls the edges (the sessions' fast path
// and that of 2026-07-28) have served in front of the go-sdk in this
// process.
func FastServed() int64 { return wire.FastServed() }

// EventStoreSessionStreams is the bound on the streams of POSTs the event
// store keeps per session.
const EventStoreSessionStreams = eventStoreSessionStreams
