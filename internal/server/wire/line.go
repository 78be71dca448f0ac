package wire

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// LineClaim is what an edge makes of a line of a stream (stdio) that
// another edge reads: the fast path shows each line to the edge of MCP
// 2026-07-28 first, and serves or answers the lines it claims.
type LineClaim struct {
	// ID is the JSON-RPC id of the request on the line.
	ID jsonrpc.ID
	// Answer, if set, is the line's answer (an error): the request is not
	// served.
	Answer []byte
	// Serve, if set, serves the request: the reader runs it as one of its
	// calls (on a worker, cancelled by notifications/cancelled for ID)
	// and writes what it returns, if anything; write writes the call's
	// notifications. cancel cancels ctx, which the reader made for this
	// request alone (and releases once Serve returns).
	Serve func(ctx context.Context, cancel context.CancelCauseFunc, write func([]byte)) []byte
	// Open marks a request that runs until it is cancelled (a
	// subscriptions/listen): the stream's close cancels it rather than
	// wait for it.
	Open bool
}
