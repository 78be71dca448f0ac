package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/server"
)

// TestResumeRecentStreams, over HTTP on 127.0.0.1, with the fast path and
// without: a call's stream replays from the event store (a GET with
// Last-Event-ID); once the session has made more calls than the store
// keeps streams of, the first call's stream is forgotten, and its
// resumption is refused (HTTP 400, as for purged events), while the last
// one's still replays, and the session goes on.
func TestResumeRecentStreams(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast path", true: "go-sdk only"}[disable], func(t *testing.T) {
			s := newServer(t, &server.Options{DisableFastPath: disable}, server.Mount{Plugin: fixture(t)})
			c := &rawHTTP{t: t, url: serveHTTP(t, s, nil), hc: &http.Client{Transport: &http.Transport{}}}
			c.start("2025-11-25")
			served := server.FastServed()
			stream := func(id int) string {
				out := c.exchange(call(id, "test_simple_text", `{}`), fmt.Sprint(id))
				if !strings.Contains(strings.Join(out, "\n"), `"result"`) {
					t.Fatalf("call %d: %q", id, out)
				}
				c.mu.Lock()
				defer c.mu.Unlock()
				s, _, _ := strings.Cut(c.lastID, "_")
				return s
			}
			resume := func(stream string) (int, string) {
				resp, err := c.do("GET", "", map[string]string{"Last-Event-ID": stream + "_0"})
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			first := stream(2)
			if code, body := resume(first); code != http.StatusOK || !strings.Contains(body, `"id":2,"result"`) {
				t.Fatalf("the first call's stream: %d %q", code, body)
			}
			var last string
			for i := range server.EventStoreSessionStreams {
				last = stream(3 + i)
			}
			if code, body := resume(first); code != http.StatusBadRequest {
				t.Errorf("the first call's stream, forgotten: %d %q, want 400", code, body)
			}
			lastID := 2 + server.EventStoreSessionStreams
			if code, body := resume(last); code != http.StatusOK || !strings.Contains(body, fmt.Sprintf(`"id":%d,"result"`, lastID)) {
				t.Errorf("the last call's stream: %d %q", code, body)
			}
			stream(lastID + 1)
			if fast := server.FastServed() - served; (fast > 0) == disable {
				t.Errorf("the fast path served %d calls", fast)
			}
		})
	}
}
