// Package mrtr serves MCP 2026-07-28's multi round-trip requests (MRTR)
// for plugins that ask their client for input in the middle of a call.
//
// A plugin asks for sampling, elicitation or roots by calling a host
// import (create_message, create_elicitation, list_roots) and waits in it
// for the answer. At 2026-07-28 a server sends the client no requests: it
// answers the client's tools/call, prompts/get or resources/read with
// resultType "input_required", the requests it needs answered
// (inputRequests) and an opaque requestState, and the client sends the
// request again with the answers (inputResponses) and the same state.
// This package keeps the plugin's execution instead of throwing it away:
// the call stays parked in the host import, and the retry delivers the
// answers into it, so that the plugin continues where it stopped.
//
// # Calls
//
// Manager.Serve runs a request's plugin call (a Run, given the call's
// plugin.Host) on a goroutine of its own, with a context of its own, and
// waits for the call's next event: the call completed or failed (Serve
// returns its result or error), or it asked for input (Serve returns an
// InputRequiredResult). A Call has the statuses of the tasks extension's
// tasks: Working, InputRequired, Completed, Failed, Cancelled. Manager.Begin
// keeps a call that its request stops waiting for, and its Next, Answer,
// Stop and Release are what package tasks needs for tasks/get,
// tasks/update and tasks/cancel, so that a task in input_required can be
// a parked call.
//
// The Host turns CreateMessage, Elicit and ListRoots into one input
// request of the call each, in the shape of 2026-07-28
// ({"method": "elicitation/create", "params": {"mode": "form", ...}}),
// under a key unique within the call ("elicitation-1", "sampling-2",
// "roots-3"), and blocks until the answer is delivered, the plugin's own
// wait ends (its timeout, or the host timeout), or the call's context
// ends. Its Ask (plugin.Asker, the ask_client import) makes several
// requests one round, under the plugin's keys, and blocks until all are
// answered: one input_required result, one retry. Before parking anything
// it checks the client capabilities of the
// request that waits for the call: a request whose client did not declare
// what the plugin asks for fails with a CapabilityError (MCP's -32021
// MissingRequiredClientCapability), and the plugin gets an error answer,
// "the client does not support elicitation", as in older sessions; it runs
// to its end and its result is dropped. NotifyElicitationComplete fails:
// 2026-07-28 has no such notification.
//
// Log and progress notifications go to the Sink of the request that
// currently waits for the call: after a resume, to the retry's. Progress
// sent with the token of the request that started the call is sent with
// the waiting request's token. While no request waits, notifications are
// dropped and counted (Stats.DroppedNotifications), not buffered: a plugin
// waiting in a host import sends nothing, so the only such notifications
// come from a plugin that stopped waiting on its own timeout and ran on
// before the client came back, and they would reach that retry late and
// out of place.
//
// # Answers
//
// A retry's inputResponses are checked against the pending requests. A
// key that names no pending request is ignored, as the revision says of
// information a server does not need. A pending key without an answer
// gets the same input requests and the same requestState back (the
// revision's SHOULD, rather than an error). An answer of the wrong shape
// for its request (a CreateMessageResult where an ElicitResult was asked,
// an action other than accept, decline and cancel, form content that does
// not match the requested schema, a root that is not a file:// URI) is a
// ResponseError, a JSON-RPC invalid params error naming the key and what
// was expected; the plugin sees nothing and the call stays parked.
//
// # requestState
//
// A state is sealed with AES-256-GCM under a key every replica shares
// (Options.Key; PreviousKeys open states during a rotation). It carries
// the principal (the token's subject, or none), the method, the digest of
// the request's parameters (ParamsDigest: everything but _meta,
// requestState and inputResponses, in a canonical form that a client
// re-serializing the same JSON still matches), an expiry, a single-use id,
// the replica holding the call and the call's id. A state that fails
// authentication, has expired, was already used, or is presented by
// another principal or for another request is refused with its own error
// (ErrStateInvalid, ErrStateExpired, ErrStateReplayed, ErrStatePrincipal,
// ErrStateMismatch), all invalid params telling the client to start the
// request again without requestState; nothing runs. The single-use id is
// consumed when the retry is accepted, that is once its answers passed
// the checks: a retry refused for a wrong answer leaves the state good for
// a corrected one, and of several retries racing with one state exactly
// one is accepted.
//
// # Bounds
//
// A state that no retry claims within the park timeout (Options.
// ParkTimeout, default 10 minutes) expires, and its call is cancelled:
// the host import returns, the plugin's call ends and its instance goes
// back to its pool. The plugin's own wait is bounded too, by its host
// timeout and its elicitation timeout; when that ends first, the plugin
// goes on without the answer, and the retry gets what it does next. Calls
// that asked for input count against a global cap and a per-principal cap
// (Options.MaxParked, MaxParkedPerPrincipal) from the moment they ask
// until they end or their plugin stops waiting for the answer (its own
// timeout), whether or not their state is still out; a call that never
// asks never counts. A call that asks beyond a cap fails its request with
// ErrTooManyParked (CodeTooManyParked) and nothing is parked, but for one
// thing: at the global cap, a call of a client (its principal, or the
// address of an anonymous request, WithClient) holding fewer calls than
// another ends the oldest of that client's calls parked EvictGrace
// (ErrEvicted), so that no client locks the others out. Drain ends the
// parked calls at once when the server stops. Stats returns the gauges and
// counters for metrics.
//
// # Replicas
//
// The state names the replica that holds the call. Behind a round-robin
// load balancer a retry may reach another replica: the HTTP edge calls
// Manager.Locate and, for another replica, forwards the request there
// (package forward of the server, which is HTTP's: this package knows no
// transport), after Manager.BeginForward, which lets one retry of a state
// at a time go. Only authenticated states name replicas, so a client
// cannot make a replica send requests anywhere else.
//
// # Edges
//
// The fast path passes the request's raw params, the go-sdk path its typed
// params encoded again with encoding/json (they bind to the same state).
// Both pass the client capabilities of the request's _meta
// (DecodeCapabilities, or the go-sdk's ServerRequest.ClientCapabilities),
// the principal and a Sink (the edge's, on either path), and turn
// the Outcome into the request's answer: Result as the call's result,
// Input as an InputRequiredResult, which the edge encodes itself.
// RPCError maps this package's errors to JSON-RPC errors. The package
// knows no transport: forwarding a retry to another replica over HTTP is
// the HTTP edge's (package forward of the server).
package mrtr
