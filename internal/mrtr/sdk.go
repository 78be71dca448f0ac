package mrtr

import (
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
