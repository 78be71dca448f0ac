// Package fastpath is the edge in front of the go-sdk's sessions that
// answers tools/call and resources/read itself; the go-sdk does everything
// else: initialize, lists, subscriptions, completion, logging/setLevel,
// sessions. It exists because the go-sdk's JSON decoding costs several
// times what a plugin call does (docs/performance.md, RATIONALE.md "Why a
// fast path in front of the go-sdk?").
//
// It is a recognizer, not a second implementation: it takes a message only
// when it is sure of it (parseMessage), and only for a session the go-sdk
// has initialized, a tool or resource some plugin serves, and an id no
// other request in progress has; everything else goes to the go-sdk
// unchanged. A call it takes is described for the core as the sessions
// edge describes the go-sdk's (Sessions, SessionState), served by the same
// function of the core (Core), and answered with the bytes the go-sdk
// would write; what happens during the call (progress, logging, sampling,
// elicitation, roots) goes through the go-sdk's session as for any call.
// Both transports have one: stdio.go, and http.go with stream.go; the
// parser is in parse.go.
//
// It may import the core (through Core, and for core.Request), the
// packages the edges share (wire, httpcalls), rawjson, and the go-sdk's
// mcp, jsonrpc and auth packages; never package server, another edge
// (TestLayout in package server, which holds this package's own test
// files to it too, but not the external test package fastpath_test), or
// anything of the plugins. What it
// needs of the sessions it sits in front of (Sessions) and of the edge
// of MCP 2026-07-28 over stdio (StatelessLines) are interfaces of its
// own, which package server fills.
package fastpath
