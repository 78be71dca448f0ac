package mrtr

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDKInputRequests returns the input requests as the go-sdk's map, for an
// edge that answers with the go-sdk's result types: a CallToolResult,
// GetPromptResult or ReadResourceResult with InputRequests and
// RequestState set, and nothing else.
func (r *InputRequiredResult) SDKInputRequests() (mcp.InputRequestMap, error) {
	b, err := json.Marshal(r.InputRequests)
	if err != nil {
		return nil, err
	}
	var m mcp.InputRequestMap
	if err := m.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("converting input requests for the go-sdk: %w", err)
	}
	return m, nil
}

// SessionSink is the Sink of a request the go-sdk serves: it sends the
// notifications through the request's session, with the request's
// context, so that the go-sdk puts them on that request's stream and
// applies that request's log level.
func SessionSink(ss *mcp.ServerSession) Sink { return sessionSink{ss} }

type sessionSink struct{ ss *mcp.ServerSession }

func (s sessionSink) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	return s.ss.Log(ctx, p)
}

func (s sessionSink) NotifyProgress(ctx context.Context, p *mcp.ProgressNotificationParams) error {
	return s.ss.NotifyProgress(ctx, p)
}
