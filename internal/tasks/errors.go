package tasks

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// Errors of the table's operations. RPCError maps them to JSON-RPC errors.
var (
	// ErrUnknownTask: no task with this id is visible to the caller. It
	// never existed, it expired, it belongs to another principal, or the
	// caller is anonymous on a server with authentication: the answer is
	// the same, so that it says nothing of another's tasks. The
	// extension's conformance checks want invalid params (-32602).
	ErrUnknownTask = errors.New("unknown taskId: no such task on this server (finished tasks are kept only for their ttlMs)")
	// ErrElsewhere: the id is sound but names another replica; see
	// ElsewhereError. The edge forwards such requests (Locate) before
	// they get here.
	ErrElsewhere = errors.New("the task is held by another replica")
	// ErrTooManyListeners: a cap on listeners was reached; see
	// Options.MaxListeners.
	ErrTooManyListeners = errors.New("too many listeners for task notifications")
	// ErrClosed: the table was closed; no task is made or followed.
	ErrClosed = errors.New("the server is shutting down")
)

// Causes of a task's end, read in its statusMessage (cancelled) or in its
// error (failed).
var (
	// ErrCancelled is the cause of a task ended by tasks/cancel.
	ErrCancelled = errors.New("cancelled by the client (tasks/cancel)")
	// ErrDraining is the cause of a task ended because the server shuts
	// down: the client may start the call again, on another replica.
	ErrDraining = errors.New("cancelled: the server is shutting down; start the call again")
	// ErrRunTimeout is the cause of a task that ran longer than
	// Options.MaxRun.
	ErrRunTimeout = errors.New("cancelled: the task ran longer than this server allows")
	// ErrResultTooLarge: the call's result was past Options.MaxResultBytes;
	// the task failed with it.
	ErrResultTooLarge = errors.New("the task's result is larger than this server keeps")
)

// ElsewhereError is ErrElsewhere with the replica that holds the task.
type ElsewhereError struct{ Replica string }

func (e *ElsewhereError) Error() string { return fmt.Sprintf("%s (%s)", ErrElsewhere, e.Replica) }
func (e *ElsewhereError) Unwrap() error { return ErrElsewhere }

// RPCError returns the JSON-RPC error to answer for an error of this
// package, of mrtr (an invalid answer in tasks/update), or nil for any
// other.
func RPCError(err error) *jsonrpc.Error {
	var resp *mrtr.ResponseError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &resp):
		// mrtr's text speaks of a retry and its requestState: a task has
		// neither.
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error() + "; send tasks/update again with a corrected answer"}
	case errors.Is(err, ErrUnknownTask), errors.Is(err, ErrElsewhere):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	case errors.Is(err, ErrTooManyListeners):
		return &jsonrpc.Error{Code: mrtr.CodeTooManyParked, Message: err.Error()}
	case errors.Is(err, ErrClosed):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return mrtr.RPCError(err)
}
