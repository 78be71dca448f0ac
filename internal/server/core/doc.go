// Package core is Hangar's dispatch core: it serves a set of plugins to the
// edges that bring MCP requests in, whatever their wire.
//
// The core keeps the plugin set and what each plugin offers (mounts,
// catalogs, prefixes, conflicts, reloads, plugins still loading), resolves
// each request to the plugin that serves it and runs it there: tools/call,
// resources/read, prompts/get, completion/complete, subscriptions and the
// filtering of lists by the caller's grant. It keeps account of the calls
// in progress (cancellation by Scope, the drain), observes them (metrics,
// spans, grants), adapts the content it returns to the protocol version a
// request names, and tells its listeners what it offers as that changes
// (Listener).
//
// The calls of MCP 2026-07-28 that may need the client's input
// (tools/call, prompts/get, resources/read) the core starts itself
// (ServeHeld, held.go): it admits a retry, refuses a tool that runs only as
// a task to a client without the tasks extension, and runs the call in the
// Manager of package mrtr, or in the table of package tasks for a
// tools/call that declares the extension; the Manager gives the call its
// client sink and holds it, parked, between the client's requests. The
// call is the core's own CallTool, ReadResource or GetPrompt, or the
// go-sdk's handler that the edge hands it (which comes back to the core).
// So a 2026-07-28 tools/call goes: HTTP handler, route, 2026 edge, core,
// mrtr, plugin. The edge encodes what comes back (input_required, a task,
// the result).
//
// A Request describes a request whichever way it came: the principal, the
// JSON-RPC id as plugins see it, _meta, the protocol version, the client's
// capabilities, the client sink (a plugin.Host) and the scopes that end it.
// The core knows no wire format, no JSON-RPC framing, no session and no
// transport: the edges (packages sessions, fastpath and stateless, beside
// it) do. It
// speaks the go-sdk's mcp param and result types as its model (RATIONALE.md,
// "Why the go-sdk's MCP types as the internal model?"), and answers errors
// as *jsonrpc.Error values, whose codes an edge sends.
//
// It may import Hangar's plugin, auth, metrics, catalog, mrtr and tasks
// packages, wire and rawjson, the go-sdk's mcp, jsonrpc (for its error
// type) and auth (for its token type) packages, and OpenTelemetry; never
// another package of internal/server, an mcp.ServerSession, a transport or
// net/http (TestLayout in package server).
package core
