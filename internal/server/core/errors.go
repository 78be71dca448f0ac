package core

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// The errors the core answers with are MCP's: the go-sdk's *jsonrpc.Error
// values, which carry the code an edge sends, and, for a tool that fails,
// a result with isError set.

// recovered turns a panic in serving a request into an error, so that a bug
// hit by one request does not take the server down.
func (c *Core) recovered(method string, err *error) {
	if r := recover(); r != nil {
		c.log.Error("panic in handler", "method", method, "panic", r, "stack", string(debug.Stack()))
		*err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error in %s", method)}
	}
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}},
	}
}

// toolError is the text a failed tool call shows the model: the plugin's
// own message when it reported one, else what went wrong with the plugin.
func toolError(err error) string {
	var pe *plugin.PluginError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// logCallError logs a failed tool call: at debug level when the plugin
// reported the error itself, as a warning when the plugin failed.
func (c *Core) logCallError(name string, err error) {
	var pe *plugin.PluginError
	if errors.As(err, &pe) {
		c.log.Debug("tool call failed", "plugin", name, "error", err)
		return
	}
	c.log.Warn("tool call failed", "plugin", name, "error", err)
}

// CodeRequestCancelled is the JSON-RPC error code (LSP's RequestCancelled)
// of the answer to a cancelled request. MCP asks for no answer at all, but
// the go-sdk always sends one; this says plainly what happened.
const CodeRequestCancelled = -32800

var errCancelled = &jsonrpc.Error{Code: CodeRequestCancelled, Message: "request cancelled"}

// requestError is the MCP error for a failed read, prompt or completion.
func requestError(err error) error {
	if errors.Is(err, context.Canceled) {
		return errCancelled
	}
	var pe *plugin.PluginError
	if errors.As(err, &pe) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: pe.Message}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// The errors a caller gets for a name no plugin it may use offers: the
// go-sdk's own, word for word.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}
