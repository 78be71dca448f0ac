// Package server serves a set of plugins as one MCP server, on the
// modelcontextprotocol go-sdk.
//
// Each plugin's tools, resources, resource templates and prompts are
// registered under the plugin's own names (or, with a prefix, "prefix_name"
// for tools and prompts and "prefix+uri" for URIs, including the URIs of
// resource contents, resource links and embedded resources in what a plugin
// returns; the prefix is stripped again before a plugin sees a name or URI a
// client sends). A name or URI offered by two plugins is an error at
// start-up; one a plugin adds later is refused if another plugin owns it
// (core/claims.go). Calls are routed to the plugin that owns the name;
// host imports made during a call reach the client of the session that
// made it.
//
// Transports are separate from the handlers: serve the server over stdio
// (or any stream) with [Server.RunStdio] or [Server.ConnectIO], or over
// Streamable HTTP (and optionally the legacy HTTP+SSE transport) with
// [Server.HTTPHandler]. In front of the go-sdk, a fast path of Hangar's own
// answers tools/call and resources/read.
//
// Each session is sent only what the protocol version it negotiated
// defines: capabilities, content types, elicitation and cache hints. A
// request of MCP 2026-07-28, which names its version in _meta, is served
// without a session, on the same endpoint and stream (package stateless).
//
// A plugin may be mounted while it is still loading ([Loading]): the server
// offers the lists it is expected to offer, calls wait for it, and
// [Server.Readiness] names the plugins not loaded yet.
//
// # Layout
//
// One pipeline serves every request: an edge reads it from its wire,
// describes it for the dispatch core (core.Request) and writes the answer
// the core returns. Each part is a package; the compiler keeps the edges
// apart from the core, and TestLayout keeps them apart from each other:
//
//   - core: the dispatch core. The plugin set and what it offers, lookups,
//     serving, call tracking, observation, the adaptation of content to a
//     protocol version. It knows no wire, session or transport.
//   - sessions: the edge of the go-sdk's sessions (stdio, Streamable HTTP,
//     legacy HTTP+SSE, in process). It registers what the core offers with
//     the go-sdk server, whose handlers call the core.
//   - fastpath: the edge in front of the go-sdk's sessions that answers
//     tools/call and resources/read itself, over stdio and Streamable HTTP.
//   - stateless: the edge of MCP 2026-07-28, whose requests have no
//     session: it checks each one, runs those that may ask the client for
//     input as parked calls (package mrtr), serves tools/call and
//     resources/read on a fast path of its own, and leaves the rest to the
//     go-sdk (its stateless Streamable HTTP, and the stdio session).
//   - wire: the vocabulary the edges share: the protocol versions in their
//     order, _meta, ids, the in-place reader of JSON-RPC messages, the
//     encoders of answers as the go-sdk writes them.
//   - httpcalls: the HTTP requests in progress that carry calls: one
//     Tracker, made here, which every edge over HTTP requires (their
//     scopes, their calls' ids).
//   - rawjson: the in-place JSON scanner and validator the others share.
//
// This package is the composition root: it builds the core and its edges,
// wires what one edge needs of another (server.go: the fast path's
// Sessions and StatelessLines, the sessions' Hooks from the 2026-07-28
// edge), routes each HTTP request to its edge (serveMCP, http.go), and
// serves them over HTTP with Hangar's guards (Host and Origin checks,
// authentication, the bounds of httplimits.go) and the operations
// endpoints. It may import all of them. The edges are peers: each
// imports the core and the shared packages (wire, httpcalls, rawjson),
// never another edge or this package, nor do its own test files (only an
// external test package, package fastpath_test say, may wire edges as
// this package does); the core imports none of them but rawjson and
// wire.
package server
