// Package sessions is the edge of the go-sdk's MCP sessions: it serves the
// dispatch core (package core) over stdio, Streamable HTTP, the legacy
// HTTP+SSE transport and in process, on the go-sdk's server.
//
// What the core offers is registered with the go-sdk server (Server is a
// core.Listener), whose handlers describe each request for the core
// (core.Request: the session's protocol version and client capabilities, a
// client sink that reaches the session's client, the session's scope) and
// hand it over. Around them, middleware observes each request
// (core.Core.StartRequest), filters lists by the caller's grant, hides
// list changes a limited grant cannot see, and sends a session nothing its
// protocol version does not define (versions.go). The state of each
// session (the scope of its calls, the bounded queue of its
// notifications) and the JSON-RPC ids that reach plugins (the transport
// records them, RATIONALE.md "Why does the transport record the JSON-RPC
// id?") are kept here, keyed by the go-sdk's session; the core knows no
// session.
//
// Another edge may serve its own protocol versions on the same go-sdk
// server (the edge of MCP 2026-07-28): what it adds is given to New as
// Hooks (hooks.go) by the composition root, package server. This package
// knows nothing else of it but that a request of 2026-07-28 or later
// names its version in _meta (wire.VersionInMeta), which decides what the
// go-sdk's answers to older sessions lose (dropUndefined) and which
// sessions keep a grant (observeRequests).
//
// It may import the core (through Core, and for its types), the packages
// the edges share (wire, httpcalls), Hangar's plugin and auth packages,
// the go-sdk and OpenTelemetry; never package server nor another edge
// (TestLayout in package server, which holds this package's own test
// files to it too; an external test package, sessions_test, may wire
// edges as package server does).
package sessions
