package sessions

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeInvalidRequest is JSON-RPC's code for a message that is not a valid
// request.
const codeInvalidRequest = -32600

// codedErrors is receiving middleware: an error that carries no JSON-RPC
// code, which the go-sdk sends with code 0 (a code JSON-RPC does not
// define), gets one. A second initialize is an invalid request (-32600);
// any other such error an internal error (-32603), with its message.
// Errors of a cancelled context are left to the go-sdk.
func codedErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var je *jsonrpc.Error
		switch {
		case err == nil, errors.As(err, &je) && je.Code != 0:
			return res, err
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return res, err
		case method == "initialize" && strings.Contains(err.Error(), "duplicate"):
			return nil, &jsonrpc.Error{Code: codeInvalidRequest, Message: "Invalid Request: the session is already initialized; initialize is sent once, as the session's first request"}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
}
