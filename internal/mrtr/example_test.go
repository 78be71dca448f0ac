package mrtr_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// An edge serving a 2026-07-28 tools/call whose plugin asks the user for
// a name: the first request is answered input_required, the client's
// retry resumes the same execution, and a replay of the retry's state is
// refused.
func Example() {
	m, err := mrtr.New(mrtr.Options{Replica: "r1", Key: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	// From the request's _meta["io.modelcontextprotocol/clientCapabilities"].
	caps, _ := mrtr.DecodeCapabilities(json.RawMessage(`{"elicitation":{}}`))

	// The edge runs the plugin call with the Host it is given:
	//	p.CallTool(ctx, &plugin.Call{Host: host, ID: id, Meta: meta}, name, args)
	// Here a function stands in for the plugin.
	run := func(ctx context.Context, host plugin.Host) (any, error) {
		res, err := host.Elicit(ctx, &mcp.ElicitParams{
			Message:         "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		if err != nil {
			return nil, err
		}
		return "hello " + res.Content["name"].(string), nil
	}

	first := mrtr.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"greet","arguments":{}}`), Principal: "alice", Capabilities: caps}
	out, err := m.Serve(ctx, first, run)
	if err != nil {
		panic(err)
	}
	var q struct{ Method string }
	json.Unmarshal(out.Input.InputRequests["elicitation-1"], &q)
	fmt.Println(out.Input.ResultType, q.Method)

	// The client's retry: the same params, the state, the answers.
	params, _ := json.Marshal(map[string]any{
		"name": "greet", "arguments": map[string]any{},
		"requestState":   out.Input.RequestState,
		"inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
	})
	retry := first
	retry.Params = params
	out, err = m.Serve(ctx, retry, nil) // a retry runs nothing new: run is not used
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Result)

	_, err = m.Serve(ctx, retry, nil)
	e := mrtr.RPCError(err)
	fmt.Println(e.Code, e.Message)
	// Output:
	// input_required elicitation/create
	// hello Ada
	// -32602 requestState was already used: start the request again without requestState and inputResponses
}
