package main

// Issue 24, finding 8: over stdio, a line holding a truncated object made
// hangar's reader wait for more lines (up to 16 MiB), so every later
// request of that client went unanswered. MCP's stdio transport is
// newline-delimited with no embedded newlines: a line is a message.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

func init() {
	register(&attack{
		id: "24.8", name: "stdio-truncated-line",
		attempt: "Over stdio, lines holding a truncated object (a 2025-06-18 request, a 2026-07-28 request, a batch cut short, an open string), each followed by a whole request on the next line",
		run:     stdioTruncatedLine,
	})
}

func stdioTruncatedLine(a *A) {
	s := a.serveStdio(floodConfig(a, "{}", ""))
	s.initialize("2025-06-18")
	modern, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}, "_meta": defaultMeta()}})
	cases := []struct{ name, line string }{
		{"tools/list cut short", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`},
		{"tools/call cut in its arguments", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`},
		{"2026-07-28 tools/call cut short", string(modern[:len(modern)-2])},
		{"batch cut short", `[{"jsonrpc":"2.0","id":3,"method":"ping"}`},
	}
	var refusals, nexts []string
	for i, tc := range cases {
		start := time.Now()
		s.send(tc.line)
		// Before the fix, nothing came back: the reader waited for the
		// rest of the object. The answer is read before the next line is
		// sent.
		got := s.answer("null", 5*time.Second)
		_, code := answerOf(got)
		refusals = append(refusals, fmt.Sprintf("%s: %d in %v", tc.name, code, since(start)))
		a.Check(code == -32700, "%s: answered %q within 5 s, want -32700 under a null id at once", tc.name, got)
		id := fmt.Sprintf(`"n%d"`, i)
		start = time.Now()
		text := s.exchange(callLine(id, "echo", fmt.Sprintf(`{"text":"after %d"}`, i)), id)
		nexts = append(nexts, fmt.Sprintf("%v", since(start)))
		if !a.Check(strings.Contains(text, fmt.Sprintf("after %d", i)), "the call on the line after %s: %q", tc.name, text) {
			a.Fatalf("the session is stuck; hangar exited: %v\n%s", s.p.exited(), tail(s.p.log.String(), 10))
		}
	}
	a.Figure("truncated lines", "%s (no answer, and every later request unanswered, before the fix)", strings.Join(refusals, "; "))
	a.Figure("the call on the next line", "answered in %s", strings.Join(nexts, ", "))
	a.Result("each truncated line was answered with -32700 at once; the call on the next line was served")
}
