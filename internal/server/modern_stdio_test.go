package server_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
)

// TestModernStdioCallsKeepTheirLines: 2026-07-28 calls sent over stdio
// one after another, without waiting for answers, each get the answer to
// their own arguments. The fast path serves them on workers, while the
// stream's next reads reuse the bytes the lines were read into; a plugin
// of one instance makes the later calls read their arguments late.
func TestModernStdioCallsKeepTheirLines(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	io := newRawIO(t, s)
	const n = 40
	for i := range n {
		io.write(mustJSON(map[string]any{"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": modernParams("structured", map[string]any{"a": 1000 * i, "b": i}, modernMeta(nil))}))
	}
	timeout := time.After(time.Minute)
	for got := 0; got < n; {
		select {
		case line, ok := <-io.lines:
			if !ok {
				t.Fatalf("the stream ended after %d answers", got)
			}
			var m struct {
				ID     int
				Result struct {
					StructuredContent struct{ Sum int }
				}
				Error any
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.ID == 0 {
				continue // a notification
			}
			got++
			i := m.ID - 100
			if want := 1001 * i; m.Error != nil || m.Result.StructuredContent.Sum != want {
				t.Errorf("call %d: %s; want the sum %d", m.ID, line, want)
			}
		case <-timeout:
			t.Fatalf("%s answers of %d", fmt.Sprint(got), n)
		}
	}
}
