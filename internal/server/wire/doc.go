// Package wire is the vocabulary every edge of the server shares, and
// nothing else: the protocol versions in their order, the _meta keys of
// MCP 2026-07-28, the JSON-RPC ids as plugins see them, and the encoders
// of answers and notifications as the go-sdk writes them. It imports no
// other package of the server but rawjson, so that an edge can use it
// without reaching into another edge (TestLayout in package server holds
// that no edge imports another).
package wire
