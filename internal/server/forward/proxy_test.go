package forward_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hangar-mcp/hangar/internal/server/forward"
)

// A forwarded retry carries the credentials and MCP's headers, not the
// client's others nor those its Connection header names; the peer's
// answer comes back without its hop-by-hop headers, those its Connection
// header names included; and the peer sees the loop guard.
func TestForwardHeaders(t *testing.T) {
	var got http.Header
	var gotBody []byte
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Connection", "X-Peer-Private")
		w.Header().Set("X-Peer-Private", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: message\ndata: {}\n\n")
	}))
	defer peer.Close()
	f, err := forward.New(forward.Options{Self: "r1", Peers: map[string]string{"r2": peer.URL + "/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f.Forward(w, r, body, "r2", []byte("1")); err != nil {
			t.Errorf("Forward: %v", err)
		}
	}))
	defer front.Close()
	req, _ := http.NewRequest(http.MethodPost, front.URL+"/mcp", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Param-Region", "eu")
	req.Header.Set("Cookie", "session=1")
	req.Header.Set("X-Client-Own", "1")
	req.Header.Set("Connection", "Mcp-Name")
	req.Header.Set("Mcp-Name", "x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(answer) != "event: message\ndata: {}\n\n" {
		t.Errorf("answer: %d %q", resp.StatusCode, answer)
	}
	for _, k := range []string{"X-Peer-Private", "Keep-Alive"} {
		if v := resp.Header.Get(k); v != "" {
			t.Errorf("the answer carries the peer's hop-by-hop %s: %q", k, v)
		}
	}
	if !bytes.Equal(gotBody, body) {
		t.Errorf("the peer read %q, want the body", gotBody)
	}
	for k, want := range map[string]string{"Authorization": "Bearer t", "Mcp-Method": "tools/call", "Mcp-Param-Region": "eu", forward.Header: "r1", "Cookie": "", "X-Client-Own": "", "Mcp-Name": ""} {
		if v := got.Get(k); v != want {
			t.Errorf("the peer got %s %q, want %q", k, v, want)
		}
	}
}
