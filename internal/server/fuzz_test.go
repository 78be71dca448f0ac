package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The probe sent after each fuzz input. Its id is one the fuzzer is
// unlikely to produce.
const (
	probeID = "hangar-fuzz-probe-7f3a"
	probe   = `{"jsonrpc":"2.0","id":"` + probeID + `","method":"ping"}`
)

// FuzzJSONRPC feeds arbitrary bytes, as newline-delimited JSON-RPC, to a
// session (through the fast path) of a server hosting real plugins (a WAT legacy plugin, a Go
// servlet and a Go v1 plugin), followed by a ping. The server must not
// panic; a session whose input is a sequence of well-formed JSON-RPC
// messages must answer the ping; every session must end once its client
// goes; and after each input a fresh session must initialize, list tools
// and call one.
//
//	go test -run='^$' -fuzz='^FuzzJSONRPC$' -fuzztime=30s ./internal/server
func FuzzJSONRPC(f *testing.F) {
	const (
		initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"fuzz","version":"1"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	)
	for _, msgs := range [][]string{
		{},
		{initialize},
		{initialize, initialized},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"bm9wZQ=="}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":5}}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":"x"}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"nope"}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_context","arguments":{},"_meta":{"progressToken":7}}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"spin","arguments":{}}}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, `{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"servlet://item/42"}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"servlet://item/../../etc/passwd"}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"servlet://greeting"}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`, `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"servlet://item/{id}"},"argument":{"name":"id","value":"4"}}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":null,"argument":{"name":"","value":""}}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`},
		{initialize, initialized, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
		{initialize, initialized, `{"jsonrpc":"2.0","id":99,"result":{}}`, `{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"x"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{`[` + initialize + `,` + initialized + `]`},
		{`[]`},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"9999-01-01"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{`not json`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":"` + strings.Repeat("x", 1000) + `"}}}`},
		{`"unterminated`},
		{"\xff\xfe"},
	} {
		f.Add([]byte(strings.Join(msgs, "\n")))
	}

	ctx := context.Background()
	e := sharedEngine(f)
	limits := config.Limits{CallTimeout: 2 * time.Second, HostTimeout: 2 * time.Second}
	var mounts []server.Mount
	for _, m := range []struct{ name, path string }{
		{"echo", testutil.BuildWAT(f, "echo")},
		{"servlet", testutil.BuildPlugin(f, "./internal/testplugins/servlet")},
		{"v1full", testutil.BuildPlugin(f, "./internal/testplugins/v1full")},
	} {
		wasm, err := os.ReadFile(m.path)
		if err != nil {
			f.Fatal(err)
		}
		p, err := e.Load(ctx, wasm, plugin.Options{Name: m.name, Limits: limits, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { p.Close(ctx) })
		mounts = append(mounts, server.Mount{Plugin: p})
	}
	s, err := server.New(ctx, mounts, &server.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzSession(t, s, in)
		checkFreshSession(t, s)
	})
}

// fuzzSession sends in and the probe to a new stdio-like session of s.
func fuzzSession(t *testing.T, s *server.Server, in []byte) {
	ctx := context.Background()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	defer clientIn.Close()
	ss, err := s.ConnectIO(ctx, serverIn, serverOut)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}

	lines := make(chan []byte)
	go func() {
		defer close(lines)
		r := bufio.NewReader(clientIn)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	// Writes block while the session does not read (it may have stopped,
	// or be waiting on an unterminated value); closing the pipe ends them.
	go func() {
		clientOut.Write(in)
		clientOut.Write([]byte("\n" + probe + "\n"))
	}()

	wellFormed := wellFormed(in)
	wait := 20 * time.Millisecond // time to get through the input
	if wellFormed {
		wait = 10 * time.Second
	}
	answered := false
	timeout := time.After(wait)
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break read // the session ended
			}
			if isProbeAnswer(line) {
				answered = true
				break read
			}
		case <-timeout:
			break read
		}
	}

	// What the session still writes is read from here on: a write it
	// cannot finish would keep it from ending (and ss.Close waits for it).
	go func() {
		for range lines { // drain
		}
	}()
	// The client goes: the session must end.
	clientOut.Close()
	ended := make(chan struct{})
	go func() {
		ss.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		ss.Close()
		t.Fatalf("the session did not end 10s after its client closed its input")
	}
	if wellFormed && !answered {
		t.Errorf("the session did not answer a ping after well-formed input %q", in)
	}
}

func isProbeAnswer(line []byte) bool {
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(line))
	if err != nil {
		return false
	}
	resp, ok := msg.(*jsonrpc.Response)
	return ok && resp.ID.Raw() == probeID
}

// wellFormed reports whether in is a sequence of JSON-RPC messages, one
// JSON object on each line, that the transport must read one by one: no
// batches, nothing after a value on its line, and not the probe's id.
func wellFormed(in []byte) bool {
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		line = bytes.TrimLeft(line, " \t\r")
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' || line[len(line)-1] != '}' || !json.Valid(line) {
			return false
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return false
		}
		var id jsonrpc.ID
		switch m := msg.(type) {
		case *jsonrpc.Request:
			id = m.ID
		case *jsonrpc.Response:
			id = m.ID
		}
		if id.Raw() == probeID {
			return false
		}
	}
	return true
}

// checkFreshSession connects a new client to s and uses it.
func checkFreshSession(t *testing.T, s *server.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc, cc := net.Pipe()
	ss, err := s.ConnectIO(ctx, sc, sc)
	if err != nil {
		t.Fatalf("fresh session: Connect: %v", err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "check", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cc, Writer: cc}, sessionOpts)
	if err != nil {
		t.Fatalf("fresh session: initialize: %v", err)
	}
	defer cs.Close()
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("fresh session: ping: %v", err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("fresh session: tools/list: %v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("fresh session: echo: %+v, %v", res, err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "still here" {
		t.Fatalf("fresh session: echo = %+v", res.Content[0])
	}
}
