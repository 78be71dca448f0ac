package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/server"
)

// The differential tests at 2026-07-28: one script of requests of that
// version against the two servers of diffTargets, the fast path's and the
// go-sdk's, over stdio and Streamable HTTP, with multi round-trip rounds
// answered as a client would; the transcripts must be the same byte for
// byte, but for the requestStates, which are random.

// step26 is a request of the 2026 script.
type step26 struct {
	id     int
	method string
	params string         // params without _meta, as JSON; "" for {}
	meta   map[string]any // _meta members besides the protocol's (nil: none); a nil value removes one
	fast   int            // how many requests the fast path serves (rounds included)
	rounds bool           // answer input_required with the inputs asked for, and retry
	hdr    map[string]string
}

// caps26 are the capabilities the script's client declares.
var caps26 = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{"form": map[string]any{}}, "roots": map[string]any{}}

var script26 = []step26{
	{id: 2, method: "tools/call", params: `{"name":"test_simple_text","arguments":{}}`, fast: 1},
	{id: 3, method: "tools/call", params: `{"name":"echo_context","arguments":{ }}`, meta: map[string]any{"progressToken": "p-1", "trace": "abc"}, fast: 1},
	{id: 4, method: "tools/call", params: `{"name":"structured","arguments":{"a":2,"b":3}}`, fast: 1},
	{id: 5, method: "tools/call", params: `{"name":"structured","arguments":{"a":"x","b":3}}`, fast: 1},
	{id: 6, method: "tools/call", params: `{"name":"structured","arguments":[1,2]}`},
	{id: 7, method: "tools/call", params: `{"name":"structured"}`, fast: 1},
	{id: 8, method: "tools/call", params: `{"name":"no_such_tool","arguments":{}}`},
	{id: 9, method: "tools/call", params: `{"name":"test_error_handling","arguments":{}}`, fast: 1},
	{id: 10, method: "tools/call", params: `{"name":"panic","arguments":{}}`, fast: 1},
	{id: 11, method: "tools/call", params: `{"name":"trap","arguments":{}}`, fast: 1},
	{id: 12, method: "tools/call", params: `{"name":"t_sleep_ms","arguments":{"ms":3000}}`, fast: 1},
	{id: 13, method: "tools/call", params: `{"name":"t_echo_context","arguments":{}}`, meta: map[string]any{"big": strings.Repeat("x", 5000)}, fast: 1},
	{id: 14, method: "tools/call", params: `{"name":"test_tool_with_progress","arguments":{}}`, meta: map[string]any{"progressToken": 7}, fast: 1},
	{id: 15, method: "tools/call", params: `{"name":"test_tool_with_logging","arguments":{}}`, fast: 1},
	{id: 16, method: "tools/call", params: `{"name":"log_levels","arguments":{}}`, meta: map[string]any{"io.modelcontextprotocol/logLevel": "warning"}, fast: 1},
	{id: 17, method: "tools/call", params: `{"name":"test_sampling","arguments":{"prompt":"who?"}}`, fast: 2, rounds: true},
	{id: 18, method: "tools/call", params: `{"name":"test_elicitation","arguments":{"message":"name?"}}`, fast: 2, rounds: true},
	{id: 19, method: "tools/call", params: `{"name":"list_roots","arguments":{}}`, fast: 2, rounds: true},
	{id: 20, method: "tools/call", params: `{"name":"test_audio_content","arguments":{}}`, fast: 1},
	{id: 21, method: "tools/call", params: `{"name":"test_multiple_content_types","arguments":{}}`, fast: 1},
	{id: 22, method: "tools/call", params: `{"name":"c_test_embedded_resource","arguments":{}}`, fast: 1},
	{id: 23, method: "resources/read", params: `{"uri":"test://static-text"}`, fast: 1},
	{id: 24, method: "resources/read", params: `{"uri":"test://static-binary"}`, fast: 1},
	{id: 25, method: "resources/read", params: `{"uri":"test://template/42/data"}`, fast: 1},
	{id: 26, method: "resources/read", params: `{"uri":"c+test://static-text"}`, fast: 1},
	{id: 27, method: "resources/read", params: `{"uri":"c+test://template/7/data"}`, fast: 1},
	{id: 28, method: "resources/read", params: `{"uri":"test://nothing-here"}`},
	{id: 29, method: "prompts/get", params: `{"name":"test_simple_prompt"}`},
	{id: 30, method: "tools/list"},
	{id: 31, method: "server/discover"},
	{id: 32, method: "tools/call", params: `{"name":"test_simple_text","arguments":{}}`, meta: map[string]any{"io.modelcontextprotocol/clientCapabilities": nil}},
	{id: 33, method: "tools/call", params: `{"name":"test_simple_text","arguments":{}}`, meta: map[string]any{"io.modelcontextprotocol/protocolVersion": "2099-01-01"}, hdr: map[string]string{"Mcp-Protocol-Version": "2099-01-01"}},
	{id: 34, method: "tools/call", params: `{"name":"test_elicitation","arguments":{"message":"name?"}}`, meta: map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{}}, fast: 1},
	{id: 35, method: "ping"},
	// Views (MCP Apps), as in the older versions' script; a UI host may
	// call the tool only views may call, and sees it listed.
	{id: 36, method: "resources/read", params: `{"uri":"ui://v+blob"}`, fast: 1},
	{id: 37, method: "resources/read", params: `{"uri":"ui://v+big"}`, fast: 1},
	{id: 38, method: "tools/call", params: `{"name":"v_secret","arguments":{}}`, fast: 1},
	{id: 39, method: "tools/call", params: `{"name":"v_secret","arguments":{}}`, meta: map[string]any{"io.modelcontextprotocol/clientCapabilities": uiCaps26}, fast: 1},
	{id: 40, method: "tools/list", meta: map[string]any{"io.modelcontextprotocol/clientCapabilities": uiCaps26}},
}

// uiCaps26 are capabilities of a UI host (MCP Apps).
var uiCaps26 = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/ui": map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}}}}

// body26 is the message of a step: its params with the script client's
// _meta, and, when state is set, the retry's requestState and answers.
func body26(st step26, id int, state string, answers map[string]any) string {
	params := map[string]any{}
	if st.params != "" {
		if err := json.Unmarshal([]byte(st.params), &params); err != nil {
			panic(err)
		}
	}
	meta := modernMeta(caps26)
	for k, v := range st.meta {
		if v == nil {
			delete(meta, k)
		} else {
			meta[k] = v
		}
	}
	params["_meta"] = meta
	if state != "" {
		params["requestState"] = state
		params["inputResponses"] = answers
	}
	return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": st.method, "params": params})
}

// answers26 answers the input requests of an input_required result as the
// script's client does.
func answers26(reqs map[string]any) map[string]any {
	out := map[string]any{}
	for k, r := range reqs {
		var a map[string]any
		json.Unmarshal([]byte(answer(json.RawMessage("0"), r.(map[string]any)["method"].(string))), &a)
		out[k] = a["result"]
	}
	return out
}

var requestStateRE = regexp.MustCompile(`"requestState":"[^"]*"`)

// inputRequired returns the state and input requests of an answer, if it
// is input_required.
func inputRequired(line string) (string, map[string]any) {
	var m struct {
		Result struct {
			ResultType    string         `json:"resultType"`
			RequestState  string         `json:"requestState"`
			InputRequests map[string]any `json:"inputRequests"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(line), &m) != nil || m.Result.ResultType != "input_required" {
		return "", nil
	}
	return m.Result.RequestState, m.Result.InputRequests
}

// exchanger26 sends a 2026-07-28 request and returns the transcript of its
// answer, and the answer's JSON-RPC message.
type exchanger26 func(body string, hdr map[string]string, id int) (transcript []string, answer string)

// run26 runs the script and returns its transcript, step by step, and how
// many requests the fast path served.
func run26(t *testing.T, ex exchanger26) ([][]string, int64) {
	before := server.FastServed()
	var out [][]string
	for _, st := range script26 {
		id := st.id
		tr, ans := ex(body26(st, id, "", nil), st.hdr, id)
		for round := 0; st.rounds && round < 4; round++ {
			state, reqs := inputRequired(ans)
			if state == "" {
				break
			}
			id += 1000
			more, a := ex(body26(st, id, state, answers26(reqs)), st.hdr, id)
			tr, ans = append(tr, more...), a
		}
		for i := range tr {
			tr[i] = requestStateRE.ReplaceAllString(tr[i], `"requestState":"STATE"`)
		}
		out = append(out, tr)
	}
	return out, server.FastServed() - before
}

func fastSteps26() int64 {
	var n int64
	for _, st := range script26 {
		n += int64(st.fast)
	}
	return n
}

func differential26(t *testing.T, open func(*testing.T, diffTarget) exchanger26) {
	tgs := diffTargets(t)
	var runs [2][][]string
	for i, tg := range tgs {
		var served int64
		runs[i], served = run26(t, open(t, tg))
		if want := map[int]int64{0: fastSteps26(), 1: 0}[i]; served != want {
			t.Errorf("%s: the fast path served %d requests, want %d", tg.name, served, want)
		}
	}
	compare(t, runs[0], runs[1])
	for i, tg := range tgs {
		checkPluginMeta26(t, tg.name, runs[i])
	}
	if testing.Verbose() {
		for i, st := range runs[0] {
			t.Logf("step %d:\n\t%s", script26[i].id, strings.Join(st, "\n\t"))
		}
	}
}

func TestFastPathMatchesSDKOverStdio2026(t *testing.T) {
	differential26(t, func(t *testing.T, tg diffTarget) exchanger26 {
		c := newRawIO(t, tg.s)
		return func(body string, _ map[string]string, id int) ([]string, string) {
			out := c.exchange(body, fmt.Sprint(id))
			return out, out[len(out)-1]
		}
	})
}

func TestFastPathMatchesSDKOverHTTP2026(t *testing.T) {
	differential26(t, func(t *testing.T, tg diffTarget) exchanger26 {
		url := serveHTTP(t, tg.s, nil)
		hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
		return func(body string, hdr map[string]string, id int) ([]string, string) {
			var m struct {
				Method string
				Params struct{ Name, URI string }
			}
			json.Unmarshal([]byte(body), &m)
			req, _ := http.NewRequest("POST", url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", m.Method)
			if name := m.Params.Name + m.Params.URI; name != "" {
				req.Header.Set("Mcp-Name", name)
			}
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			out := []string{head(resp) + "; X-Accel-Buffering " + resp.Header.Get("X-Accel-Buffering") + "; Mcp-Session-Id " + resp.Header.Get("Mcp-Session-Id"), string(raw)}
			last := string(raw)
			if i := strings.LastIndex(last, "data: "); i >= 0 {
				last = strings.TrimSpace(last[i+len("data: "):])
			}
			return out, last
		}
	})
}

// checkPluginMeta26 checks the _meta a plugin got at 2026-07-28 (step 3,
// echo_context): the request's own, and the client's capabilities, but
// not the framing the edge consumes (protocol version, client info, log
// level), which a plugin in a session of an older version never sees.
func checkPluginMeta26(t *testing.T, name string, run [][]string) {
	t.Helper()
	for i, st := range script26 {
		if st.id != 3 {
			continue
		}
		tr := run[i]
		line := tr[len(tr)-1]
		if j := strings.LastIndex(line, "data: "); j >= 0 {
			line = strings.TrimSpace(line[j+len("data: "):])
		}
		var m struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Result.Content) != 1 {
			t.Fatalf("%s: step 3 answered %s (%v)", name, line, err)
		}
		var got struct{ Meta map[string]any }
		if err := json.Unmarshal([]byte(m.Result.Content[0].Text), &got); err != nil {
			t.Fatalf("%s: echo_context answered %q: %v", name, m.Result.Content[0].Text, err)
		}
		want := map[string]any{"io.modelcontextprotocol/clientCapabilities": caps26, "progressToken": "p-1", "trace": "abc"}
		if !reflect.DeepEqual(got.Meta, want) {
			t.Errorf("%s: the plugin got _meta %v, want %v", name, got.Meta, want)
		}
		return
	}
	t.Fatal("no step 3 in script26")
}
