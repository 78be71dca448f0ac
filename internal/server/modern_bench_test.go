package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// BenchmarkModernCall measures a 2026-07-28 tools/call of a cheap tool,
// raw (no client library), over stdio and HTTP, on the fast path and the
// go-sdk's (go test -run '^$' -bench ModernCall -benchmem
// ./internal/server). The allocations the two differ by are the MCP
// layer's; over HTTP the client's (net/http) are in both.
func BenchmarkModernCall(b *testing.B) {
	const body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, transport := range []string{"stdio", "http"} {
		for _, fast := range []bool{true, false} {
			b.Run(transport+map[bool]string{true: "/fast", false: "/go-sdk"}[fast], func(b *testing.B) {
				p := loadPlugin(b, "conformance", testutil.BuildPlugin(b, "./examples/conformance"), config.Limits{})
				s, err := server.New(context.Background(), []server.Mount{{Plugin: p}}, &server.Options{Logger: quietLogger(), DisableFastPath: !fast})
				if err != nil {
					b.Fatal(err)
				}
				var roundTrip func() string
				if transport == "stdio" {
					sc, cc := net.Pipe()
					ss, err := s.ConnectIO(context.Background(), sc, sc)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { cc.Close(); ss.Close() })
					r := bufio.NewReader(cc)
					roundTrip = func() string {
						if _, err := io.WriteString(cc, body+"\n"); err != nil {
							b.Fatal(err)
						}
						answer, err := r.ReadSlice('\n')
						if err != nil {
							b.Fatal(err)
						}
						return string(answer)
					}
				} else {
					ts := httptest.NewServer(s.HTTPHandler(nil))
					b.Cleanup(ts.Close)
					hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
					roundTrip = func() string {
						req, _ := http.NewRequest("POST", ts.URL+server.Path, strings.NewReader(body))
						req.Header = http.Header{
							"Content-Type":         {"application/json"},
							"Accept":               {"application/json, text/event-stream"},
							"Mcp-Protocol-Version": {"2026-07-28"},
							"Mcp-Method":           {"tools/call"},
							"Mcp-Name":             {"test_simple_text"},
						}
						resp, err := hc.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						answer, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						return string(answer)
					}
				}
				if answer := roundTrip(); !strings.Contains(answer, `"resultType":"complete"`) {
					b.Fatalf("answer: %s", answer)
				}
				served := server.FastServed()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					roundTrip()
				}
				b.StopTimer()
				if (server.FastServed() > served) != fast {
					b.Fatalf("fast=%v, but the fast path served %d calls", fast, server.FastServed()-served)
				}
			})
		}
	}
}
