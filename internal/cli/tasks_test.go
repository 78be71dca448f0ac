package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestServeOffersTasks: serve offers the tasks extension
// (io.modelcontextprotocol/tasks) by default, whether its plugins come
// from a configuration file that says nothing of tasks or from the
// command line alone (which once served without the tasks section's
// defaults, so without the extension).
func TestServeOffersTasks(t *testing.T) {
	isolate(t)
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	cfg := filepath.Join(t.TempDir(), "hangar.yaml")
	if err := os.WriteFile(cfg, []byte("plugins:\n  - name: legacy\n    path: "+wasm+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{"files": {wasm}, "config": {"--config", cfg}} {
		t.Run(name, func(t *testing.T) {
			url := serveHTTP(t, args...)
			body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
			req, err := http.NewRequest("POST", url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "server/discover")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			answer, _, err := testutil.ReadMCPAnswer(resp, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Result struct {
					Capabilities struct {
						Extensions map[string]json.RawMessage `json:"extensions"`
					} `json:"capabilities"`
				} `json:"result"`
			}
			b, _ := json.Marshal(answer)
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Result.Capabilities.Extensions["io.modelcontextprotocol/tasks"]; !ok {
				t.Errorf("server/discover offers no tasks extension: %s", b)
			}
		})
	}
}

// serveHTTP runs serve --http on a port the system picks, with args, until
// the test ends, and returns its MCP endpoint once it is ready.
func serveHTTP(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"serve", "--http", "127.0.0.1:0", "--cache-dir", t.TempDir()}, args...),
			&Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// A cold compilation under the race detector on a busy machine takes
	// minutes.
	deadline := time.Now().Add(10 * time.Minute)
	for !strings.Contains(stderr.String(), "msg=ready") {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve ended (%d) before it was ready:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready:\n%s", stderr.String())
		}
	}
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/mcp`).FindString(stderr.String())
	if url == "" {
		t.Fatalf("no URL in the log:\n%s", stderr.String())
	}
	return url
}
