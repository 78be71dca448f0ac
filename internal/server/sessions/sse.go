package sessions

import (
	"context"
	crand "crypto/rand"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseHandler serves the legacy HTTP+SSE transport as mcp.SSEHandler does,
// on the go-sdk's own mcp.SSEServerTransport, but connects each session
// through idConn, so that its requests' ids reach plugins. A GET opens a
// session and is its event stream; the client POSTs its messages to the
// endpoint the stream's first event names.
type sseHandler struct {
	srv *Server

	mu       sync.Mutex
	sessions map[string]*mcp.SSEServerTransport // by session id
}

// SSEHandler returns the handler of the legacy HTTP+SSE transport.
func (s *Server) SSEHandler() http.Handler {
	return &sseHandler{srv: s, sessions: map[string]*mcp.SSEServerTransport{}}
}

func (h *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
			return
		}
		id := r.URL.Query().Get("sessionid")
		if id == "" {
			http.Error(w, "sessionid must be provided", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		t := h.sessions[id]
		h.mu.Unlock()
		if t == nil {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		t.ServeHTTP(w, r)
	case http.MethodGet:
		h.open(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// open serves a session on the GET that opens it, until the client leaves
// or the session ends.
func (h *sseHandler) open(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	id := crand.Text()
	endpoint, err := r.URL.Parse("?sessionid=" + id)
	if err != nil {
		http.Error(w, "internal error: failed to create endpoint", http.StatusInternalServerError)
		return
	}
	t := &mcp.SSEServerTransport{Endpoint: endpoint.RequestURI(), Response: w}
	h.mu.Lock()
	h.sessions[id] = t
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
	}()
	ss, err := h.srv.Connect(r.Context(), t)
	if err != nil {
		http.Error(w, "connection failed", http.StatusInternalServerError)
		return
	}
	defer ss.Close()
	ended := make(chan struct{})
	go func() {
		ss.Wait()
		close(ended)
	}()
	select {
	case <-r.Context().Done():
	case <-ended:
	}
}

// idTransport connects a transport through idConn.
type idTransport struct{ mcp.Transport }

func (t idTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return idConn{c}, nil
}
