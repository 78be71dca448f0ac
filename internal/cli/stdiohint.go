package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/term"
)

// stdioWaitHint is what serve says when it serves stdio and stdin is a
// terminal: a person started it by hand, and it looks as if nothing
// happens.
const stdioWaitHint = "serving MCP over stdio: waiting for an MCP client's JSON-RPC messages on stdin. " +
	"A client starts hangar itself (\"hangar client-config\" prints its entry); " +
	"to try the plugins by hand, run \"hangar call PLUGIN.wasm TOOL\", or serve HTTP with --http 127.0.0.1:8080. " +
	"Ctrl-C stops."

// terminalHint logs stdioWaitHint when stdin is a terminal.
func terminalHint(stdin io.Reader, log *slog.Logger) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		log.Info(stdioWaitHint)
	}
}

// wrongTransportCode is the JSON-RPC error code of the answer to a request
// sent on stdin to a hangar serving HTTP (a server error, in the range
// JSON-RPC leaves to implementations).
const wrongTransportCode = -32000

// answerStdin helps a client that started hangar to speak MCP over stdio,
// while hangar serves HTTP because the configuration sets http.addr: such
// a client sends its initialize request on stdin and, with no answer,
// times out with nothing to show for it. When stdin is a pipe or a socket
// (as a client makes it; not a terminal, a file or /dev/null), each
// JSON-RPC request arriving on it is answered on stdout with an error that
// says to add --stdio, and the first is logged. Nothing else reads stdin or
// writes stdout while hangar serves HTTP. It returns at the end of stdin.
func answerStdin(stdin io.Reader, stdout io.Writer, log *slog.Logger, addr, configPath string) {
	f, ok := stdin.(*os.File)
	if !ok {
		return
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return
	}
	msg := fmt.Sprintf("hangar is serving MCP over HTTP at %s (http.addr in %s), not over stdio: "+
		"add \"--stdio\" to the arguments the client starts hangar with "+
		"(\"hangar client-config CLIENT --config FILE\" prints a client's entry)", addr, configPath)
	var once sync.Once
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.Method == "" {
			continue
		}
		once.Do(func() {
			log.Error("an MCP request arrived on stdin while serving HTTP: answered with an error", "method", req.Method, "hint", msg)
		})
		if len(req.ID) == 0 || bytes.Equal(req.ID, []byte("null")) {
			continue // a notification: nothing to answer
		}
		answer, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0",
			"id":      req.ID,
			"error":   map[string]any{"code": wrongTransportCode, "message": msg},
		})
		if _, err := stdout.Write(append(answer, '\n')); err != nil {
			return
		}
	}
}
