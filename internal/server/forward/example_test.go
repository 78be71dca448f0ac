package forward_test

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/forward"
)

// How the HTTP edge routes a retry: a request whose requestState names
// another replica is forwarded there; any other goes to Serve.
func ExampleForwarder() {
	m, _ := mrtr.New(mrtr.Options{Replica: "10.0.0.7", Key: []byte("0123456789abcdef0123456789abcdef")})
	f, _ := forward.New(forward.Options{Self: m.Replica(), PeerURL: "http://{replica}:8080/mcp"})
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
