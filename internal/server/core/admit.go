package core

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Admit checks a request that continues a call already running instead of
// starting one (the retry of a multi round-trip request of MCP
// 2026-07-28, which brings the client's answers to a parked call): that
// some plugin the caller may use still serves method's tool or prompt name
// or resource URI, key. It returns the error the request would get if it
// started the call now, or nil. The call's arguments were checked when it
// started, and the retry's state binds them (the edge refuses a retry
// with other parameters).
func (c *Core) Admit(rq Request, method, key string) error {
	var (
		m        *mount
		notFound error
	)
	switch method {
	case "tools/call":
		m, _ = c.lookupTool(key)
		notFound = unknownTool(key)
	case "prompts/get":
		c.mu.Lock()
		m = c.prompts[key]
		c.mu.Unlock()
		notFound = unknownPrompt(key)
	case "resources/read":
		m, _ = c.lookupResource(key)
		notFound = mcp.ResourceNotFoundError(key)
	default:
		return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s cannot continue a call", method)}
	}
	if m == nil || !allows(rq.Principal, m) {
		return notFound
	}
	return nil
}
