package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/wire"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// The calls of MCP 2026-07-28 that the core may hold across the client's
// requests: a tools/call, prompts/get or resources/read whose plugin asks
// the client for input parks (package mrtr) until the client's retry
// brings the answers, and a tools/call of a client that declares the
// tasks extension may become a task (package tasks). The core starts
// such a call itself, so that every edge that serves 2026-07-28 reaches
// the plugin the same way: edge, core, Manager (or task table), plugin.
// The edge keeps what is the wire's: reading the request, and encoding
// the outcome (input_required, a task, the result, errors).

// ErrNoManager is the error of ServeHeld on a core made without
// Options.Manager.
var ErrNoManager = errors.New("core: no mrtr.Manager (Options.Manager) to hold calls")

// HeldCall is a request of MCP 2026-07-28 that may need the client's
// input, as the edge read it.
type HeldCall struct {
	// Request is the request as the edge describes it: principal, id,
	// _meta, version, capabilities. Its Client, Scope and Carrier are not
	// used: the call gets the Manager's client sink, and neither a session
	// nor an HTTP request ends it (the Manager bounds it).
	Request Request
	// Method is "tools/call", "prompts/get" or "resources/read".
	Method string
	// Key is the tool's or prompt's name, or the resource's URI.
	Key string
	// Params are the request's params as the client sent them (with
	// _meta, requestState and inputResponses), which the Manager reads
	// and binds a requestState to.
	Params json.RawMessage
	// Args are the arguments of a tools/call or prompts/get (a JSON
	// object), for the core's own dispatch (ServeHeld with a nil run).
	Args json.RawMessage
	// Retry reports that the request carries a requestState: it brings
	// answers to a call already parked.
	Retry bool
	// Bare reports that the edge read Params and found neither
	// requestState, inputResponses nor _meta.progressToken in them
	// (mrtr.Request.Bare).
	Bare bool
	// Sink receives the call's notifications while this request waits
	// for it; nil drops them.
	Sink mrtr.Sink
	// ClientKey tells an anonymous request's client from others, for the
	// caps on tasks (the connection's address, or one for stdio).
	ClientKey string
	// Cancel, if set, cancels the context ServeHeld is given, which the
	// edge made for this request alone (Request.Cancel). A call that
	// cannot park (and does not go through the task table) runs under
	// that context, and the core cancels it with Cancel rather than make a
	// context of its own; a call that may park, or become a task, has a
	// context of its own, which Cancel does not end.
	Cancel context.CancelCauseFunc

	// outcome is what ServeHeld returns a pointer to for a result or an
	// input request (a task's outcome is made apart): hc is on the heap
	// already, so the outcome costs no allocation of its own. Each edge
	// serves a HeldCall once.
	outcome HeldOutcome
}

// HeldOutcome is how to answer a HeldCall: exactly one of its fields is
// set.
type HeldOutcome struct {
	// Result is the call's result: it completed.
	Result mcp.Result
	// Input is what the call asks of the client: it is parked.
	Input *mrtr.InputRequiredResult
	// Task is the task the call became (a tools/call whose request
	// declares the tasks extension).
	Task *tasks.Detailed
}

// HeldRun runs a held call's plugin call, given the call's own context
// and rq with the call's client sink; it returns the call's result.
type HeldRun func(ctx context.Context, rq Request) (mcp.Result, error)

// ServeHeld serves hc, a request of MCP 2026-07-28 that may need the
// client's input, through the Manager (Options.Manager). A first request
// starts the call: run, or, if run is nil, the core's own CallTool,
// GetPrompt or ReadResource of hc.Key with hc.Args. A retry, once the core
// has admitted it (the tool, prompt or resource is still there for the
// caller: Admit), brings its answers to the parked call and runs nothing.
// A tools/call whose request declares the tasks extension goes through
// the task table (Options.Tasks) with the policy its tool's _meta gives,
// and may come back as a task; a call of a tool that runs only as a task,
// for a request that does not declare the extension, is refused before it
// runs (MissingTasks).
//
// Errors of packages mrtr and tasks come back as they are, for the edge to
// map (mrtr.RPCError); the core's are *jsonrpc.Error values.
func (c *Core) ServeHeld(ctx context.Context, hc *HeldCall, run HeldRun) (*HeldOutcome, error) {
	if c.held.m == nil {
		return nil, ErrNoManager
	}
	if hc.Retry {
		if err := c.Admit(hc.Request, hc.Method, hc.Key); err != nil {
			return nil, err
		}
	}
	if run == nil {
		run = c.dispatchHeld(hc)
	}
	req := mrtr.Request{Method: hc.Method, Params: hc.Params, Principal: Subject(hc.Request.Principal), Capabilities: hc.Request.Capabilities, Sink: hc.Sink, Bare: hc.Bare && !hc.Retry}
	tools := c.held.tasks != nil && hc.Method == "tools/call"
	asTask := tools && declaresTasks(&hc.Request)
	if tools && !asTask && c.taskSupport(hc.Key) == "required" {
		// A tool that runs only as a task, for a client that cannot
		// have one: refused before it runs.
		return nil, MissingTasks("tool " + hc.Key)
	}
	if !asTask {
		// Not through the task table: a call that may become a task is
		// a Call of the Manager's whatever its plugin does, and runs under
		// a context of its own.
		req.Direct = !hc.Retry && c.cannotAsk(hc)
	}
	direct := req.Direct // not req: the closure would move it to the heap
	runCall := func(ctx context.Context, host plugin.Host) (any, error) {
		rq := hc.Request
		rq.Client, rq.Scope, rq.Carrier, rq.Cancel = host, nil, nil, nil
		if direct {
			rq.Cancel = hc.Cancel // ctx is the request's (mrtr.Request.Direct)
		}
		return run(ctx, rq)
	}
	var out *mrtr.Outcome
	var err error
	if asTask {
		var d *tasks.Detailed
		d, out, err = c.held.tasks.Call(ctx, req, hc.ClientKey, runCall, c.taskPolicy(hc.Key))
		if err == nil && d != nil {
			return &HeldOutcome{Task: d}, nil
		}
	} else {
		out, err = c.held.m.Serve(ctx, req, runCall)
	}
	if err != nil {
		return nil, err
	}
	if out.Input != nil {
		hc.outcome = HeldOutcome{Input: out.Input}
		return &hc.outcome, nil
	}
	res, ok := out.Result.(mcp.Result)
	if !ok || res == nil {
		return nil, fmt.Errorf("internal error: the call of %s returned no result", hc.Method)
	}
	hc.outcome = HeldOutcome{Result: res}
	return &hc.outcome, nil
}

// cannotAsk reports whether the call of hc is known never to ask the
// client for input: a tools/call of a tool whose plugin is loaded and
// imports no host function that asks (plugin.AsksClient). The Manager then
// runs it as a plain call (mrtr.Request.Direct), as a call over a session
// runs: no table entry, no id. A plugin still loading, or reloaded
// between this look and the call, may ask: the call is then refused the
// client as a call of a plugin that cannot ask would be (the new module's
// first call; the next goes through the table).
func (c *Core) cannotAsk(hc *HeldCall) bool {
	if hc.Method != "tools/call" {
		return false
	}
	m, _ := c.lookupTool(hc.Key)
	if m == nil {
		return true // unknown: answered by the core, nothing runs
	}
	p := m.loadedPlugin()
	return p != nil && !p.AsksClient()
}

// dispatchHeld is the run of a held call that the core serves itself.
func (c *Core) dispatchHeld(hc *HeldCall) HeldRun {
	return func(ctx context.Context, rq Request) (mcp.Result, error) {
		switch hc.Method {
		case "tools/call":
			return c.CallTool(ctx, rq, hc.Key, hc.Args)
		case "resources/read":
			return c.ReadResource(ctx, rq, hc.Key)
		case "prompts/get":
			var args map[string]string
			if len(hc.Args) > 0 && string(hc.Args) != "null" {
				if err := json.Unmarshal(hc.Args, &args); err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompts/get: arguments must be an object of strings: %v", err)}
				}
			}
			return c.GetPrompt(ctx, rq, hc.Key, args)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s cannot be held for the client's input", hc.Method)}
	}
}

// held is what the core holds calls with (Options.Manager, Options.Tasks,
// Options.TaskAfter).
type held struct {
	m     *mrtr.Manager
	tasks *tasks.Table  // nil: the tasks extension is not offered
	after time.Duration // the threshold of mrtr.TaskAuto
}

// taskSupport returns what the tool with the exposed name says of its
// tasks (wire.MetaTask): "never", "always", "required", or "" (auto).
func (c *Core) taskSupport(name string) string {
	s, _ := c.ToolMeta(name)[wire.MetaTask].(string)
	return s
}

// taskPolicy is the task policy of a call of the tool with the exposed
// name, as its plugin says (pdk.Tool.Task): by default (auto) a call
// becomes a task once it runs past the threshold; "never" never; "always"
// at once; "required" at once once it has the input it asks for over
// MRTR.
func (c *Core) taskPolicy(name string) mrtr.TaskPolicy {
	switch c.taskSupport(name) {
	case "never":
		return mrtr.TaskPolicy{Mode: mrtr.TaskNever}
	case "always":
		return mrtr.TaskPolicy{Mode: mrtr.TaskAlways}
	case "required":
		return mrtr.TaskPolicy{Mode: mrtr.TaskAfterInput, After: c.held.after}
	}
	return mrtr.TaskPolicy{Mode: mrtr.TaskAuto, After: c.held.after}
}

// MissingTasks is the error of a request that needs the tasks extension
// and does not declare it (MissingRequiredClientCapability, naming the
// extension in requiredCapabilities).
func MissingTasks(what string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{wire.TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mrtr.CodeMissingRequiredClientCapability, Message: fmt.Sprintf("%s needs the tasks extension: declare %q in _meta[%q].extensions", what, wire.TasksExtension, wire.MetaClientCapabilities), Data: data}
}

// Subject is the principal a requestState binds and a task belongs to:
// the token's subject, or "" without authentication. The edges name a
// task's owner with it too.
func Subject(ti *sdkauth.TokenInfo) string {
	if ti == nil {
		return ""
	}
	return ti.UserID
}

// declaresTasks reports whether the request's client declared the tasks
// extension: in its _meta's capabilities, or, for a _meta the edge did
// not decode (Request.MetaJSON), in the Capabilities it read from them,
// which keep an extension declared by an object as wire.DeclaresTasks
// asks.
func declaresTasks(rq *Request) bool {
	if rq.Meta == nil && rq.MetaJSON != nil {
		return rq.Capabilities != nil && rq.Capabilities.Extensions[wire.TasksExtension] != nil
	}
	return wire.DeclaresTasks(rq.Meta)
}
