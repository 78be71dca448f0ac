// Package tasks holds the tasks of MCP's tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663) for plugin calls, below the
// edge: it knows no wire format and no HTTP. The 2026-07-28 edge decodes
// tools/call, tasks/get, tasks/update and tasks/cancel, checks that the
// request declared the extension, calls the Table, and encodes what it
// returns.
//
// # Tasks are parked calls with a handle
//
// A task is an mrtr.Call that its request stopped waiting for. Table.Call
// runs a tools/call's call with mrtr.Manager.Begin, as the request's
// mrtr.TaskPolicy says: with TaskAuto, a call that ends, or asks for
// input, within the threshold answers directly (a result, an error, or
// input_required over MRTR, which the extension says to resolve before a
// task exists); one still running then becomes a task and the request is
// answered with its view (a CreateTaskResult). A retry (a request with
// requestState) is served the same way, so that a call that gathered its
// input over MRTR and then runs long becomes a task on its retry
// (TaskAfterInput makes it one at once: the extension's MRTR to tasks
// composition). TaskAlways makes the call a task at once, for a tool that
// says it runs long; TaskNever, the zero value, never. The call keeps
// running on its own goroutine with its own context; a follower
// goroutine per running task (mrtr.Call.Next) records each change, and
// Update, Cancel and Drain record theirs at once, so that tasks/get reads
// a view, never waits, and reads the effect of an operation that
// returned.
//
// The statuses are the call's: working; input_required while the plugin
// waits in a host import, with the call's input requests (the same
// {"method", "params"} objects as MRTR's, under keys unique over the
// call's life); completed with the tool's result; failed with a JSON-RPC
// error object; cancelled, with the cause in statusMessage. tasks/update
// (Table.Update) delivers answers with mrtr.Call.Answer: each answer to an
// outstanding key goes to its host import at once and the key leaves
// inputRequests, keys not outstanding are ignored, a wrong answer is
// invalid params. tasks/cancel (Table.Cancel) cancels the call: the
// plugin's host import and execution end, and its instance goes back to
// its pool; a finished task is left as it is. A call that fails while
// its plugin runs on (its input request refused) has its execution
// ended too.
//
// # Ids and owners
//
// A task id carries 128 random bits, the name of the replica that holds
// the task, and an HMAC of both under a key derived from the state keys
// every replica shares (mrtr.Manager.DeriveKeys, so that it rotates with
// them). Locate returns the replica of an
// authenticated id, for the HTTP edge to forward tasks/* requests there as
// it forwards MRTR retries; a made-up replica name fails the MAC, so a
// client cannot aim a replica elsewhere.
//
// A task belongs to the principal of the request that made it
// (mrtr.Request.Principal: the one its call's caps count under). With
// authentication (Options.Auth), a request of another principal, or an
// anonymous one, gets ErrUnknownTask for it, the very error of an id
// that never existed or expired, after the same lookup; an anonymous
// request makes no task (its call is answered directly). Without
// authentication every request is anonymous: the id is the capability,
// and tasks count per client key (Owner.Client, the session or remote
// address the edge gives), so that anonymous clients are many, not one.
//
// # Bounds
//
// Tasks count against a cap per owner and one per server
// (Options.MaxTasksPerOwner, MaxTasks) from their creation until they are
// forgotten. A call past its threshold at a cap does not become a task:
// its request waits for it, as a client without the extension would (and
// as a call of an owner who may have no task does). A task runs at most
// Options.MaxRun, then is cancelled; one in input_required waits at most
// the Manager's park timeout for its answers, then is cancelled. A result
// is encoded when the call completes and kept as bytes: one past
// MaxResultBytes fails its task with an error that names the limit.
// Kept results are bounded together (MaxKeptBytes) and per owner
// (MaxKeptBytesPerOwner), and a task reserves the room of the largest
// result, MaxResultBytes, under both when it is admitted: a call whose
// reservation does not fit beside the kept results and the running
// tasks' reservations is answered directly, as at a cap, and counted
// (Stats.KeptFull, KeptFullOwner). When the task ends its reservation is
// released and its result takes its place, so that a result always fits:
// no task does its work and then fails for want of room. So a running
// task holds MaxResultBytes, and at most MaxKeptBytes/MaxResultBytes
// tasks run at once (MaxKeptBytesPerOwner/MaxResultBytes of one owner:
// 64 and 8 by default). A task waiting for input counts, while
// it waits, against the Manager's max_parked caps; answered, it no
// longer does, and the task caps bound it. A
// finished task is kept for Options.Keep (its ttlMs runs to then), then
// forgotten: its place under the caps and its result are freed. Stats
// gives the gauges and counters for /metrics.
//
// # Listeners
//
// Listen returns a Listener for notifications/tasks: the current view of
// each task it may see, then each change. The table never waits for a
// listener: an event its buffer has no room for is dropped and counted.
// Listeners are capped per owner and per server, and let go of a task
// the table forgets; Table.Close closes them.
//
// # Drain
//
// Drain stops making tasks, lets the running ones finish until its
// context ends, and cancels the rest (ErrDraining) without waiting
// further, so that every task has a final status that tasks/get reads
// while the server still answers.
package tasks
