// Package wire is the vocabulary every edge of the server shares, and
// nothing else: the protocol versions in their order (and those of the
// go-sdk's sessions, versions.go and sessions.go), the _meta keys of MCP
// 2026-07-28 and what a request's _meta says of its version, the
// JSON-RPC ids as plugins see them and those the go-sdk would not answer
// as they came (ids.go), the in-place reader of JSON-RPC messages and
// params that leaves any shape it does not read whole to the go-sdk
// (read.go), the encoders of answers and notifications as the go-sdk
// writes them, and results as versions before 2026-07-28 marshal them
// (legacy.go), what an edge makes of a stdio line (LineClaim), and the
// bound on a client's subscriptions. It imports no
// other package of the server but rawjson, and of the go-sdk only its
// JSON-RPC framing and MCP's types, so that an edge can use it without
// reaching into another edge (TestLayout in package server holds that no
// edge imports another).
package wire
