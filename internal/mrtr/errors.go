package mrtr

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Errors about a retry's requestState. Each one means that nothing ran: the
// client should start the request again, without requestState and
// inputResponses. RPCError maps them to JSON-RPC invalid params (-32602).
var (
	// ErrStateInvalid: the state is not one this server issued, or it was
	// changed (its authentication failed), or it is not a state at all. A
	// state sealed with a key the replica does not have looks the same.
	ErrStateInvalid = errors.New("requestState is not valid: it was not issued by this server or it was changed")
	// ErrStateExpired: the state's time ran out; its call was (or is about
	// to be) cancelled.
	ErrStateExpired = errors.New("requestState has expired")
	// ErrStateReplayed: the state was already accepted once (or a later
	// round replaced it). A state is single-use.
	ErrStateReplayed = errors.New("requestState was already used")
	// ErrStatePrincipal: the state was issued to another principal.
	ErrStatePrincipal = errors.New("requestState was issued to another user")
	// ErrStateMismatch: the state was issued for another request: another
	// method, or other parameters (another tool, prompt or resource, or
	// other arguments).
	ErrStateMismatch = errors.New("requestState was issued for another request")
	// ErrCallGone: the state is sound but its call is no longer on the
	// replica that issued it (the call ended, or the replica restarted).
	ErrCallGone = errors.New("the call this requestState belongs to is gone")
	// ErrRetryInFlight: a retry with the same state is being forwarded to
	// the replica holding its call (Manager.BeginForward).
	ErrRetryInFlight = errors.New("a retry with this requestState is already on its way to the replica that holds its call")
	// ErrReplicaGone: the replica that holds the state's call cannot be
	// reached (Forwarder), or the request was already forwarded once.
	ErrReplicaGone = errors.New("the replica holding this request is gone")
	// ErrElsewhere: the state's call is held by another replica; see
	// ElsewhereError, which carries its name.
	ErrElsewhere = errors.New("the call this requestState belongs to is held by another replica")
)

// Errors about a request's parameters, mapped to invalid params (-32602).
var (
	// ErrResponsesWithoutState: the request carries inputResponses but no
	// requestState. Hangar always issues a state with its input requests,
	// so such answers belong to nothing.
	ErrResponsesWithoutState = errors.New("inputResponses without requestState")
	// ErrInvalidResponse: an answer in inputResponses does not have the
	// shape its input request asks for; see ResponseError.
	ErrInvalidResponse = errors.New("invalid input response")
	// ErrInvalidParams: the request's parameters are not a JSON object, or
	// requestState or inputResponses have the wrong type.
	ErrInvalidParams = errors.New("invalid params")
)

// Errors that end a call.
var (
	// ErrMissingCapability: the plugin asked for something the client did
	// not declare in its capabilities; see CapabilityError. RPCError maps it
	// to MissingRequiredClientCapability (-32021).
	ErrMissingCapability = errors.New("the client did not declare a capability the request needs")
	// ErrTooManyParked: a cap on parked calls was reached when the call
	// asked for input. RPCError maps it to CodeTooManyParked.
	ErrTooManyParked = errors.New("too many requests are waiting for input")
	// ErrServerCap and ErrPrincipalCap are ErrTooManyParked at the cap
	// of the server (Options.MaxParked) and at that of the call's
	// principal (Options.MaxParkedPerPrincipal).
	ErrServerCap    error = &capError{"server"}
	ErrPrincipalCap error = &capError{"principal"}
	// ErrEvicted is the cause of a parked call's cancellation when, at
	// max_parked, its place went to the call of a client that held fewer
	// (see Options.MaxParked). RPCError maps it to CodeTooManyParked.
	ErrEvicted = errors.New("this request's call was ended while it waited for your answer: the server holds at most max_parked such calls, your client held more of them than another that needed one, and this one had waited longest; start the request again, and answer sooner or hold fewer calls waiting")
	// ErrParkExpired is the cause of a parked call's cancellation when no
	// retry came within the park timeout.
	ErrParkExpired = errors.New("no retry came within the park timeout")
	// ErrRequestEnded is the cause of a call's cancellation when the
	// request that was waiting for it ended (the client went away) while
	// the call was running.
	ErrRequestEnded = errors.New("the client's request ended while the call was running")
	// ErrClosed is the cause of the cancellation of every call when the
	// Manager closes, and what Serve answers afterwards. A direct call
	// (Request.Direct) is not in the table: it runs under its request's
	// context, which the edge and the core's drain end.
	ErrClosed = errors.New("the server is shutting down")
	// ErrCallEnded is what a plugin's host import answers once the request
	// its call served has already been answered with an error: nobody
	// waits for that call's input any more.
	ErrCallEnded = errors.New("the request this call served has already been answered")
	// ErrNoElicitationComplete answers notify_url_elicitation_completed:
	// MCP 2026-07-28 removed notifications/elicitation/complete.
	ErrNoElicitationComplete = errors.New("the client does not support elicitation completion notices: MCP 2026-07-28 has none, the client learns the outcome by retrying the request")
	// ErrMethod: Serve was called for a method that cannot answer
	// input_required (only tools/call, prompts/get and resources/read can).
	ErrMethod = errors.New("method does not support input_required results")
)

// JSON-RPC error codes of this package's errors besides the standard ones.
const (
	// CodeMissingRequiredClientCapability is MCP's -32021.
	CodeMissingRequiredClientCapability = -32021
	// CodeTooManyParked is Hangar's code (in the range JSON-RPC leaves to
	// implementations) for a request refused because too many requests
	// wait for input.
	CodeTooManyParked = -32010
)

// startAgain ends the message of every error about a requestState.
const startAgain = "start the request again without requestState and inputResponses"

// ElsewhereError reports that a state's call is held by another replica.
// The HTTP edge forwards the request there (see Forwarder); an edge that
// cannot forward (stdio) answers RPCError's error.
type ElsewhereError struct{ Replica string }

func (e *ElsewhereError) Error() string {
	return fmt.Sprintf("the call this requestState belongs to is held by replica %q", e.Replica)
}

// Is makes errors.Is(err, ErrElsewhere) true.
func (e *ElsewhereError) Is(target error) bool { return target == ErrElsewhere }

// ResponseError reports an answer in inputResponses that does not fit its
// input request. Nothing was delivered to the plugin and the call stays
// parked: a corrected retry with the same requestState is accepted.
type ResponseError struct {
	Key      string // the inputResponses key
	Expected string // what the request asks for, e.g. "an ElicitResult"
	Problem  string // what is wrong with the answer
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("inputResponses[%q]: expected %s: %s", e.Key, e.Expected, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidResponse) true.
func (e *ResponseError) Is(target error) bool { return target == ErrInvalidResponse }

// CapabilityError reports that the plugin asked for a kind of input the
// client did not declare. Required is the capabilities object MCP puts in
// the error's data ({"elicitation": {}}, {"elicitation": {"url": {}}},
// {"sampling": {}} or {"roots": {}}).
type CapabilityError struct {
	Capability string // "elicitation", "url elicitation", "sampling" or "roots"
	Required   map[string]any
}

func (e *CapabilityError) Error() string {
	return fmt.Sprintf("the request needs the client's %s capability, which it did not declare in _meta", e.Capability)
}

// Is makes errors.Is(err, ErrMissingCapability) true.
func (e *CapabilityError) Is(target error) bool { return target == ErrMissingCapability }

// pluginError is what a plugin's host import answers when the client did
// not declare the capability: the same words as for older sessions.
func (e *CapabilityError) pluginError() error {
	return fmt.Errorf("the client does not support %s", e.Capability)
}

// RPCError returns the JSON-RPC error to answer for err, or nil when err is
// not one of this package's (a plugin's error, which the edge maps as for
// any call, or a context error).
func RPCError(err error) *jsonrpc.Error {
	if err == nil {
		return nil
	}
	invalid := func(msg string) *jsonrpc.Error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	}
	var cap *CapabilityError
	var resp *ResponseError
	var elsewhere *ElsewhereError
	switch {
	case errors.As(err, &cap):
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": cap.Required})
		return &jsonrpc.Error{Code: CodeMissingRequiredClientCapability, Message: cap.Error(), Data: data}
	case errors.As(err, &resp):
		return invalid(resp.Error() + "; send the retry again with a corrected answer and the same requestState")
	case errors.As(err, &elsewhere):
		return invalid(elsewhere.Error() + ", which this server cannot reach: " + startAgain)
	case errors.Is(err, ErrStateInvalid), errors.Is(err, ErrStateExpired), errors.Is(err, ErrStateReplayed),
		errors.Is(err, ErrStatePrincipal), errors.Is(err, ErrStateMismatch), errors.Is(err, ErrCallGone),
		errors.Is(err, ErrReplicaGone):
		return invalid(err.Error() + ": " + startAgain)
	case errors.Is(err, ErrRetryInFlight):
		return invalid(err.Error() + ": wait for that retry's answer; a requestState is good for one retry")
	case errors.Is(err, ErrResponsesWithoutState):
		return invalid(err.Error() + ": send inputResponses only with the requestState of the input_required result they answer")
	case errors.Is(err, ErrInvalidParams):
		return invalid(err.Error())
	case errors.Is(err, ErrTooManyParked), errors.Is(err, ErrEvicted):
		return &jsonrpc.Error{Code: CodeTooManyParked, Message: err.Error()}
	case errors.Is(err, ErrParkExpired), errors.Is(err, ErrClosed), errors.Is(err, ErrMethod):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return nil
}

// capError is ErrTooManyParked at one of the caps: it says what
// ErrTooManyParked says, and is it.
type capError struct{ which string }

func (*capError) Error() string { return ErrTooManyParked.Error() }
func (*capError) Unwrap() error { return ErrTooManyParked }
