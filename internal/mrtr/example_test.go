package mrtr_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

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

// How the HTTP edge routes a retry: a request whose requestState names
// another replica is forwarded there; any other goes to Serve.
func ExampleForwarder() {
	m, _ := mrtr.New(mrtr.Options{Replica: "10.0.0.7", Key: []byte("0123456789abcdef0123456789abcdef")})
	f, _ := mrtr.NewForwarder(mrtr.ForwarderOptions{Self: m.Replica(), PeerURL: "http://{replica}:8080/mcp"})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		json.Unmarshal(body, &msg)
		if state, _ := mrtr.RequestState(msg.Params); state != "" {
			replica, err := m.Locate(state)
			if err != nil {
				// Answer mrtr.RPCError(err) (HTTP 400).
				return
			}
			if replica != m.Replica() {
				f.Forward(w, r, body, replica, msg.ID) // answers the client itself
				return
			}
		}
		// m.Serve(r.Context(), mrtr.Request{...}, run) and answer its Outcome.
	})
}
