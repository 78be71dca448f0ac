package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The fast path must answer exactly as the go-sdk does. The tests here run
// one script of JSON-RPC messages against two servers over the same
// plugins (loaded twice), one with the fast path and one without
// (Options.DisableFastPath), over stdio and over Streamable HTTP, at two
// protocol versions, and compare what comes back: over stdio every line,
// byte for byte; over HTTP the status, the headers of the answer and every
// event, byte for byte but for what is random (stream ids, and the ids of
// server requests, which the fast path numbers apart from the go-sdk's).
// Each run also checks that the fast path served exactly the steps it
// should, and none on the other server.

// diffTarget is one of the two servers and its plugins.
type diffTarget struct {
	name string
	s    *server.Server
	v1   *plugin.Plugin // v1full, whose spin the cancellation steps cancel
}

func diffTargets(t *testing.T) [2]diffTarget {
	t.Helper()
	var out [2]diffTarget
	for i, disable := range []bool{false, true} {
		v1 := v1full(t, config.Limits{})
		short := loadPlugin(t, "v1short", testutil.BuildPlugin(t, "./internal/testplugins/v1full"), config.Limits{CallTimeout: 500 * time.Millisecond, MaxOutput: 4096})
		s := newServer(t, &server.Options{DisableFastPath: disable},
			server.Mount{Plugin: fixture(t)},
			server.Mount{Plugin: loadPlugin(t, "confp", testutil.BuildPlugin(t, "./examples/conformance"), config.Limits{}), Prefix: "c"},
			server.Mount{Plugin: v1},
			server.Mount{Plugin: short, Prefix: "t"},
			server.Mount{Plugin: loadPlugin(t, "trap", testutil.BuildWAT(t, "trap"), config.Limits{})},
			server.Mount{Plugin: loadPlugin(t, "views", testutil.BuildPlugin(t, "./internal/testplugins/views"), config.Limits{}), Prefix: "v"},
		)
		out[i] = diffTarget{name: map[bool]string{false: "fast path", true: "go-sdk only"}[disable], s: s, v1: v1}
	}
	return out
}

// step is a message of the script, and what to do around it.
type step struct {
	msg  string // the message; its id is the step's
	fast bool   // the fast path serves it
	// cancel: once the plugin is busy with the call, cancel it
	// (notifications/cancelled); dup: first send this message, which
	// reuses the id of the call in progress (the go-sdk answers it with
	// HTTP 400, and over stdio drops it).
	cancel bool
	dup    string
	// batch: a batch, only in sessions before 2025-06-18; its answers,
	// which come in no set order over HTTP, are compared sorted.
	batch bool
}

// runs reports whether st runs in a session of the given version.
func (st step) runs(version string) bool { return !st.batch || version < "2025-06-18" }

func call(id any, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, mustJSON(id), tool, args)
}

func read(id any, uri string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{"uri":%q}}`, mustJSON(id), uri)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var script = []step{
	{msg: call(2, "test_simple_text", `{}`), fast: true},
	// The id and _meta reach the plugin; a string id; extra white space.
	{msg: `{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"echo_context","arguments":{ },"_meta":{"progressToken":"p-1","trace":"abc"}}}`, fast: true},
	{msg: call(3, "structured", `{"a":2,"b":3}`), fast: true},
	{msg: call(4, "structured", `{"a":"x","b":3}`), fast: true},                                        // invalid arguments
	{msg: call(5, "structured", `[1,2]`)},                                                              // not an object: the go-sdk's on both
	{msg: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"structured"}}`, fast: true}, // no arguments
	{msg: call(7, "no_such_tool", `{}`)},                                                               // unknown tool
	{msg: call(8, "test_error_handling", `{}`), fast: true},                                            // the plugin's error
	{msg: call(9, "panic", `{}`), fast: true},                                                          // the plugin panics
	{msg: call(10, "trap", `{}`), fast: true},                                                          // the module traps
	{msg: call(11, "t_sleep_ms", `{"ms":3000}`), fast: true},                                           // the call timeout
	{msg: `{"jsonrpc":"2.0","id":111,"method":"tools/call","params":{"name":"t_echo_context","arguments":{},"_meta":{"big":"` + strings.Repeat("x", 5000) + `"}}}`, fast: true}, // the output limit
	{msg: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":7}}}`, fast: true},
	{msg: `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"test_tool_with_logging","arguments":{}}}`, fast: true}, // no level set: no logs
	{msg: `{"jsonrpc":"2.0","id":14,"method":"logging/setLevel","params":{"level":"warning"}}`},
	{msg: call(15, "log_levels", `{}`), fast: true},
	{msg: call(16, "test_sampling", `{"prompt":"who?"}`), fast: true},
	{msg: call(17, "test_elicitation", `{"message":"name?"}`), fast: true},
	{msg: call(18, "list_roots", `{}`), fast: true},
	{msg: call(19, "test_audio_content", `{}`), fast: true},
	{msg: call(20, "test_multiple_content_types", `{}`), fast: true},
	{msg: call(21, "c_test_embedded_resource", `{}`), fast: true}, // a prefixed tool, its resource URI prefixed
	{msg: read(22, "test://static-text"), fast: true},
	{msg: read(23, "test://static-binary"), fast: true},
	{msg: read(24, "test://template/42/data"), fast: true},
	{msg: read(25, "c+test://static-text"), fast: true},
	{msg: read(26, "c+test://template/7/data"), fast: true},
	{msg: read(27, "test://nothing-here")}, // not found
	{msg: `{"jsonrpc":"2.0","id":28,"method":"prompts/get","params":{"name":"test_simple_prompt"}}`},
	{msg: call(29, "spin", `{}`), fast: true, cancel: true},
	{msg: call(30, "spin", `{}`), fast: true, cancel: true, dup: call(30, "test_simple_text", `{}`)},
	{msg: `[` + call(31, "test_simple_text", `{}`) + `,` + read(32, "test://static-text") + `]`, batch: true},
	// Views (MCP Apps) of a prefixed plugin: a blob with the tool prefix
	// put in, one past the size bound, and, to this client that is no UI
	// host, a tool only views may call.
	{msg: read(40, "ui://v+blob"), fast: true},
	{msg: read(41, "ui://v+big"), fast: true},
	{msg: call(42, "v_secret", `{}`), fast: true},
	{msg: call(43, "v_show", `{}`), fast: true},
}

// versions are the protocol versions the script runs at.
var versions = []string{"2025-11-25", "2025-03-26", "2024-11-05"}

// initialize is the client's initialize request.
func initialize(version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}},"clientInfo":{"name":"diff","version":"1"}}}`, version)
}

// answer is the client's answer to a server request.
func answer(id json.RawMessage, method string) string {
	result := map[string]string{
		"sampling/createMessage": `{"model":"m","role":"assistant","content":{"type":"text","text":"sampled"}}`,
		"elicitation/create":     `{"action":"accept","content":{"username":"ada","email":"ada@example.com"}}`,
		"roots/list":             `{"roots":[{"uri":"file:///work","name":"work"}]}`,
	}[method]
	if result == "" {
		result = `{}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

// stepID is the id of a step's message, as JSON ("" for a batch).
func stepID(msg string) string {
	var m struct{ ID json.RawMessage }
	json.Unmarshal([]byte(msg), &m)
	return string(m.ID)
}

func cancelNote(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"changed my mind"}}`, id)
}

// transcriber speaks to one server over one transport.
type transcriber interface {
	// exchange sends msg and returns everything that came back until its
	// answer (id, as JSON; "" for an answer without an id, "batch" for a
	// batch), answering server requests on the way.
	exchange(msg, id string) []string
	// begin is exchange in two halves: it sends msg, and wait returns the
	// transcript.
	begin(msg, id string) (wait func() []string)
	// send sends a message that gets no answer of its own; it returns what
	// the transport answered, if anything.
	send(msg string) []string
	// start opens the session at the given protocol version (initialize,
	// notifications/initialized) and returns the answer to initialize.
	start(version string) []string
}

// runScript runs the script on a session and returns its transcript, step
// by step, and how many calls the fast path served meanwhile.
func runScript(t *testing.T, tg diffTarget, c transcriber, version string) ([][]string, int64) {
	t.Helper()
	before := server.FastServed()
	var out [][]string
	for _, st := range script {
		if !st.runs(version) {
			continue
		}
		id := stepID(st.msg)
		if id == "" {
			id = "batch"
		}
		if !st.cancel {
			got := c.exchange(st.msg, id)
			if st.batch {
				for i := range got {
					got[i] = streamIndex.ReplaceAllString(got[i], "")
				}
				slices.Sort(got)
			}
			out = append(out, got)
			continue
		}
		wait := c.begin(st.msg, id)
		waitBusy(t, tg.v1)
		var side []string
		if st.dup != "" {
			// The go-sdk refuses it with HTTP 400, and over stdio drops it.
			side = append(side, c.send(st.dup)...)
		}
		side = append(side, c.send(cancelNote(id))...)
		out = append(out, append(side, wait()...))
		waitIdle(t, tg.v1, 30*time.Second)
	}
	return out, server.FastServed() - before
}

func fastSteps(version string) int64 {
	var n int64
	for _, st := range script {
		if st.fast && st.runs(version) {
			n++
		}
	}
	return n
}

// compare reports the steps whose transcripts differ.
func compare(t *testing.T, fast, sdk [][]string) {
	t.Helper()
	if len(fast) != len(sdk) {
		t.Fatalf("%d steps with the fast path, %d without", len(fast), len(sdk))
	}
	for i := range fast {
		if !slices.Equal(fast[i], sdk[i]) {
			t.Errorf("step %d differs:\nfast path:\n\t%s\ngo-sdk only:\n\t%s", i, strings.Join(fast[i], "\n\t"), strings.Join(sdk[i], "\n\t"))
		}
	}
}

// differential runs the script on a session of each server, opened by
// open, at each version, then what finish adds, and compares.
func differential(t *testing.T, open func(*testing.T, diffTarget) transcriber, finish func(transcriber, string) [][]string) {
	tgs := diffTargets(t)
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			var runs [2][][]string
			for i, tg := range tgs {
				c := open(t, tg)
				init := c.start(version)
				var served int64
				runs[i], served = runScript(t, tg, c, version)
				if want := map[int]int64{0: fastSteps(version), 1: 0}[i]; served != want {
					t.Errorf("%s: the fast path served %d calls, want %d", tg.name, served, want)
				}
				runs[i] = append(append(runs[i], init), finish(c, version)...)
			}
			compare(t, runs[0], runs[1])
		})
	}
}

func TestFastPathMatchesSDKOverStdio(t *testing.T) {
	differential(t, func(t *testing.T, tg diffTarget) transcriber { return newRawIO(t, tg.s) },
		func(c transcriber, version string) [][]string {
			if version < "2025-06-18" {
				return nil
			}
			// A batch at this version is refused (the go-sdk ended the
			// session), and the session goes on.
			return [][]string{c.exchange(`[`+call(99, "test_simple_text", `{}`)+`]`, "null"), c.exchange(call(100, "test_simple_text", `{}`), "100")}
		})
}

func TestFastPathMatchesSDKOverHTTP(t *testing.T) {
	differential(t, func(t *testing.T, tg diffTarget) transcriber {
		return &rawHTTP{t: t, url: serveHTTP(t, tg.s, nil), hc: &http.Client{Transport: &http.Transport{}}}
	}, func(tr transcriber, version string) [][]string {
		c := tr.(*rawHTTP)
		var out [][]string
		// Resumption: the events of a finished stream replay from the event
		// store, whichever path wrote them.
		if version >= "2025-11-25" {
			out = append(out, c.replay(call(40, "test_tool_with_progress", `{}`)))
		}
		out = append(out, c.del())
		return append(out, c.exchange(call(41, "test_simple_text", `{}`), "41")) // after DELETE: 404
	})
}

// rawIO speaks JSON-RPC over a stream served with ConnectIO.
type rawIO struct {
	t     *testing.T
	conn  net.Conn
	lines chan string
}

func newRawIO(t *testing.T, s *server.Server) *rawIO {
	sc, cc := net.Pipe()
	ss, err := s.ConnectIO(context.Background(), sc, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		ss.Close()
	})
	c := &rawIO{t: t, conn: cc, lines: make(chan string, 64)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(cc)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

func (c *rawIO) write(msg string) {
	c.conn.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := c.conn.Write([]byte(msg + "\n")); err != nil {
		c.t.Errorf("writing %s: %v", msg, err)
	}
}

func (c *rawIO) send(msg string) []string {
	c.write(msg)
	return nil
}

func (c *rawIO) exchange(msg, id string) []string { return c.begin(msg, id)() }

func (c *rawIO) start(version string) []string {
	init := c.exchange(initialize(version), "1")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return init
}

func (c *rawIO) begin(msg, id string) func() []string {
	c.write(msg)
	return func() []string { return c.until(msg, id) }
}

// until reads lines until the answer with the given id.
func (c *rawIO) until(msg, id string) []string {
	var out []string
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return append(out, "EOF")
			}
			out = append(out, line)
			if strings.HasPrefix(line, "[") {
				if id == "batch" {
					return out
				}
				continue
			}
			var m struct {
				ID     json.RawMessage
				Method string
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				c.t.Errorf("line %q: %v", line, err)
				return out
			}
			switch {
			case m.Method != "" && m.ID != nil:
				c.write(answer(m.ID, m.Method))
			case m.Method == "" && string(m.ID) == id:
				return out
			}
		case <-timeout:
			c.t.Errorf("no answer to %s; got:\n%s", msg, strings.Join(out, "\n"))
			return append(out, "timeout")
		}
	}
}

// rawHTTP speaks JSON-RPC over Streamable HTTP, one POST per message.
type rawHTTP struct {
	t       *testing.T
	url     string
	hc      *http.Client
	sid     string
	version string

	mu       sync.Mutex
	requests map[string]string // server request ids -> their names in transcripts
	lastID   string            // the last event id (a stream's), for replay
}

func (c *rawHTTP) do(method, body string, hdr map[string]string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	c.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	c.mu.Unlock()
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, body, err)
		return nil, err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.mu.Lock()
		c.sid = sid
		c.mu.Unlock()
	}
	return resp, nil
}

// head is the transcript line of an answer's status and headers.
func head(resp *http.Response) string {
	return fmt.Sprintf("%d %s; Content-Type %q; Cache-Control %q; Connection %q", resp.StatusCode, resp.Status, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), resp.Header.Get("Connection"))
}

func (c *rawHTTP) send(msg string) []string {
	resp, err := c.do("POST", msg, nil)
	if err != nil {
		return []string{"send: " + err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return []string{"send: " + head(resp) + " " + string(body)}
}

func (c *rawHTTP) start(version string) []string {
	init := c.exchange(initialize(version), "1")
	c.version = version
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return init
}

func (c *rawHTTP) begin(msg, id string) func() []string {
	var (
		out []string
		wg  sync.WaitGroup
	)
	wg.Go(func() { out = c.exchange(msg, id) })
	return func() []string {
		wg.Wait()
		return out
	}
}

func (c *rawHTTP) exchange(msg, id string) []string {
	resp, err := c.do("POST", msg, nil)
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	out := []string{head(resp)}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		return append(out, string(body))
	}
	return append(out, c.events(resp.Body, true)...)
}

var (
	eventID      = regexp.MustCompile(`(?m)^id: [A-Z0-9]+_`)
	streamIndex  = regexp.MustCompile(`(?m)^id: STREAM_[0-9]+\n`)
	serverReqID  = regexp.MustCompile(`^\{"jsonrpc":"2.0","id":([0-9]+),"method"`)
	cancelledReq = regexp.MustCompile(`"requestId":([0-9]+)`)
)

// events reads an event stream to its end, answering server requests if
// answer is set, and returns its events with the random parts named.
func (c *rawHTTP) events(r io.Reader, answer bool) []string {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	var ev []string
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				c.mu.Lock()
				c.lastID = id
				c.mu.Unlock()
			}
			ev = append(ev, line)
			continue
		}
		text := eventID.ReplaceAllString(strings.Join(ev, "\n"), "id: STREAM_")
		ev = nil
		_, data, _ := strings.Cut(text, "data: ")
		if m := serverReqID.FindStringSubmatch(data); m != nil {
			text = strings.Replace(text, `"id":`+m[1]+`,`, `"id":"`+c.name(m[1])+`",`, 1)
			if answer {
				var req struct{ Method string }
				json.Unmarshal([]byte(data), &req)
				out = append(out, text, "answer: "+c.send(answerFor(m[1], req.Method))[0])
				continue
			}
		}
		if m := cancelledReq.FindStringSubmatch(text); m != nil && strings.Contains(text, "notifications/cancelled") {
			text = strings.Replace(text, m[0], `"requestId":"`+c.name(m[1])+`"`, 1)
		}
		out = append(out, text)
	}
	if err := sc.Err(); err != nil {
		out = append(out, "broken: "+err.Error())
	}
	return append(out, "end of stream")
}

func answerFor(id, method string) string { return answer(json.RawMessage(id), method) }

// name names a server request id by its order in the session.
func (c *rawHTTP) name(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requests == nil {
		c.requests = map[string]string{}
	}
	if n, ok := c.requests[id]; ok {
		return n
	}
	n := fmt.Sprintf("R%d", len(c.requests)+1)
	c.requests[id] = n
	return n
}

// replay makes a call, then asks for its stream again from its first
// event (as a client that lost the connection does).
func (c *rawHTTP) replay(msg string) []string {
	out := c.exchange(msg, stepID(msg))
	c.mu.Lock()
	streamID, _, _ := strings.Cut(c.lastID, "_")
	c.mu.Unlock()
	resp, err := c.do("GET", "", map[string]string{"Last-Event-ID": streamID + "_0"})
	if err != nil {
		return append(out, err.Error())
	}
	defer resp.Body.Close()
	out = append(out, "replay: "+head(resp))
	return append(out, c.events(resp.Body, false)...)
}

func (c *rawHTTP) del() []string {
	resp, err := c.do("DELETE", "", nil)
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return []string{"delete: " + head(resp) + " " + string(body)}
}
