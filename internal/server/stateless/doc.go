// Package stateless is the edge of MCP 2026-07-28, whose requests have no
// session: each carries its protocol version and the client's capabilities
// in _meta, and a server that needs the client's input answers
// input_required and is sent the request again with the answers (multi
// round-trip requests).
//
// Both eras share Hangar's endpoint and stdio. Over Streamable HTTP the
// edge tells a request of 2026-07-28 from an older one (Takes: its
// MCP-Protocol-Version header, or its _meta) and answers it (ServeHTTP);
// over stdio the fast path shows it every line first (Line). It checks
// what the revision requires of a request before anything runs: the
// per-request _meta fields (invalid params, or UnsupportedProtocolVersion
// with the versions Hangar speaks), and over HTTP the headers that mirror
// the body (Mcp-Method, Mcp-Name, and the Mcp-Param headers of a tool's
// x-mcp-header parameters: HeaderMismatch). GET and DELETE are refused with
// 405, Mcp-Session-Id and Last-Event-ID are ignored.
//
// The requests that may need the client's input, tools/call, prompts/get
// and resources/read, the edge reads and hands to the core
// (core.Core.ServeHeld), which starts their calls in its Manager of package
// mrtr: the plugin's call gets the Manager's plugin.Host, whose sampling,
// elicitation and roots park the call, and the edge answers the request
// input_required; a retry brings the answers back to the call, once the
// core has admitted it as a request (the tool, prompt or resource must
// still be there for the caller). So a tools/call goes: the HTTP handler
// (or the stdio reader), the route (Takes, or Line), this edge, the core,
// mrtr, the plugin. The edge asks the Manager only where a retry's call is
// held: over HTTP, one whose requestState names another replica is
// forwarded to it (package forward).
//
// Two paths serve a request, as for older versions. The go-sdk reads it
// (its stateless Streamable HTTP handler, or the stdio session), answers
// server/discover, the lists and completion, and puts resultType and
// serverInfo on every result; the middleware of this package (the go-sdk
// server's innermost, in Hooks) hands the core the go-sdk's
// handlers of the three methods above as the calls to hold (they reach
// the core as any go-sdk handler does), and answers errors as 2026-07-28
// defines them. The fast path (serveQuick, over
// either transport) serves a tools/call or resources/read of a tool or
// resource some plugin serves itself, through the core (whose own
// CallTool or ReadResource is then the call), and answers with
// the bytes the go-sdk would write (the differential tests of package
// server compare them). What a call's plugin sends meanwhile waits in the
// Manager's queue for the request's goroutine, which alone writes to the
// request's stream: a client that stops reading holds nothing else.
//
// With a tasks.Table (Options.Tasks, the core's), the edge offers the tasks
// extension (tasks.go): server/discover lists it; a tools/call whose own
// _meta declares it goes through the table (the core sends it there, with
// the policy its tool's _meta gives under wire.MetaTask: by default a task
// once it runs past core.Options.TaskAfter), and is answered with a
// CreateTaskResult once it becomes a task; tasks/get, tasks/update and tasks/cancel are the edge's
// own over either transport (Mcp-Name is their taskId, and over HTTP a
// task another replica holds is forwarded there); a listen may follow
// tasks (notifications.taskIds). Each of these needs the extension
// declared in its request, else -32021.
//
// subscriptions/listen is the edge's own on both paths (listen.go): the
// edge is a core.Listener, told of list changes and resource updates, and
// a stream ends with the listen's result when the server stops (Stop). As
// a core.Listener it also refuses a tool whose x-mcp-header annotations
// break the revision's rules when a plugin offers it (the core logs why).
// It sets the cache hints of 2026-07-28 results (ttlMs, cacheScope) from
// what Hangar knows; older versions are sent none (package sessions).
//
// It may import the core, the packages the edges share (wire, httpcalls),
// rawjson, the forwarder (package forward), packages mrtr, tasks, plugin and auth, and the go-sdk; never package
// server nor another edge (TestLayout in package server, which holds
// this package's own test files to it too, but not the external test
// package stateless_test). The go-sdk
// server its requests are left to is made by the sessions edge with the
// Hooks this edge gives (NewHooks), and the fast path shows it each stdio
// line (Line); package server wires both.
package stateless
