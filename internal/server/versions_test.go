package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// wireLog records the JSON-RPC messages a client reads, as they were on
// the wire (through mcp.LoggingTransport).
type wireLog struct{ testutil.SyncBuffer }

// wireMessage is a JSON-RPC message as received, kept raw.
type wireMessage struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	raw    string
}

// read returns the messages the client has read so far.
func (w *wireLog) read(t *testing.T) []wireMessage {
	t.Helper()
	var msgs []wireMessage
	for line := range strings.Lines(w.String()) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "read: ")
		if !ok {
			continue
		}
		m := wireMessage{raw: data}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("client read malformed JSON %q: %v", data, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// lastResult is the raw result of the last response the client read.
func (w *wireLog) lastResult(t *testing.T) string {
	t.Helper()
	msgs := w.read(t)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Result != nil {
			return string(msgs[i].Result)
		}
	}
	t.Fatal("the client read no response")
	return ""
}

// requests are the raw params of the requests of method the client read.
func (w *wireLog) requests(t *testing.T, method string) []string {
	t.Helper()
	var out []string
	for _, m := range w.read(t) {
		if m.Method == method {
			out = append(out, string(m.Params))
		}
	}
	return out
}

// TestProtocolVersions connects go-sdk clients negotiating each protocol
// version over Streamable HTTP on 127.0.0.1 and checks, on the wire, that
// each session is sent only what its version defines: capabilities,
// content types, and elicitation (none before 2025-06-18, no URL mode and
// no mode field before 2025-11-25).
func TestProtocolVersions(t *testing.T) {
	notes := loadPlugin(t, "notes", testutil.BuildPlugin(t, "./examples/notes"), config.Limits{MaxInstances: 1})
	s := newServer(t, nil,
		server.Mount{Plugin: fixture(t)},
		server.Mount{Plugin: notes, Prefix: "notes"},
		server.Mount{Plugin: v1full(t, config.Limits{}), Prefix: "v1"},
	)
	ts := httptest.NewServer(s.HTTPHandler(nil))
	t.Cleanup(ts.Close)

	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			ctx := context.Background()
			log := &wireLog{}
			var elicited []*mcp.ElicitParams
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
				// The client claims every kind of elicitation whatever
				// its version: the server must still keep to the version.
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
					Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
				}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					elicited = append(elicited, req.Params)
					if req.Params.URL != "" {
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
				},
			})
			transport := &mcp.LoggingTransport{Transport: &mcp.StreamableClientTransport{Endpoint: ts.URL + server.Path}, Writer: log}
			cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })

			// initialize: the version, and only the capabilities it defines.
			var init struct {
				ProtocolVersion string                     `json:"protocolVersion"`
				Capabilities    map[string]json.RawMessage `json:"capabilities"`
			}
			if err := json.Unmarshal([]byte(log.lastResult(t)), &init); err != nil {
				t.Fatal(err)
			}
			if init.ProtocolVersion != v {
				t.Fatalf("negotiated %s, want %s", init.ProtocolVersion, v)
			}
			for _, c := range []string{"logging", "tools", "resources", "prompts"} {
				if _, ok := init.Capabilities[c]; !ok {
					t.Errorf("capability %s missing", c)
				}
			}
			if _, ok := init.Capabilities["completions"]; ok != (v >= "2025-03-26") {
				t.Errorf("completions capability sent: %v (capabilities %v)", ok, init.Capabilities)
			}
			// The MCP Apps extension, at every version (the extension
			// negotiates at 2024-11-05 too).
			if ext := string(init.Capabilities["extensions"]); ext != `{"io.modelcontextprotocol/ui":{}}` {
				t.Errorf("extensions capability: %s", ext)
			}
			if len(init.Capabilities) != 5+b2i(v >= "2025-03-26") {
				t.Errorf("capabilities = %v", init.Capabilities)
			}
			// completion/complete itself exists in every version.
			cr, err := cs.Complete(ctx, &mcp.CompleteParams{
				Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "notes_summarize_note"},
				Argument: mcp.CompleteParamsArgument{Name: "id", Value: ""},
			})
			if err != nil || cr.Completion.Values == nil {
				t.Errorf("complete = %+v, %v", cr, err)
			}

			// A resource link is a resource_link from 2025-06-18 on, a text
			// naming the (prefixed) URI before.
			res := callTool(t, cs, "notes_add_note", map[string]any{"title": "t", "text": "x"})
			raw := log.lastResult(t)
			if strings.Contains(raw, `"resource_link"`) != (v >= "2025-06-18") {
				t.Errorf("add_note result on the wire: %s", raw)
			}
			if v < "2025-06-18" {
				text, ok := res.Content[1].(*mcp.TextContent)
				if !ok || !strings.HasPrefix(text.Text, "Resource: notes+notes://note/") || !strings.Contains(text.Text, "text/markdown") {
					t.Errorf("resource link stands as %#v", res.Content[1])
				}
			}
			// Audio content exists from 2025-03-26 on.
			callTool(t, cs, "test_audio_content", map[string]any{})
			raw = log.lastResult(t)
			if strings.Contains(raw, `"audio"`) != (v >= "2025-03-26") {
				t.Errorf("audio result on the wire: %s", raw)
			}
			if v < "2025-03-26" && !strings.Contains(raw, "no audio content") {
				t.Errorf("audio stands as %s", raw)
			}

			// Form elicitation from 2025-06-18 on, without mode before
			// 2025-11-25; a plugin is told why it cannot elicit.
			res = callTool(t, cs, "test_elicitation", map[string]any{"message": "who?"})
			forms := log.requests(t, "elicitation/create")
			if v < "2025-06-18" {
				if !res.IsError || !strings.Contains(resultText(t, res), "protocol version "+v+" has none") || len(forms) != 0 {
					t.Errorf("elicitation in %s: %q, %d requests sent", v, resultText(t, res), len(forms))
				}
			} else {
				if res.IsError || !strings.Contains(resultText(t, res), "action=accept") || len(forms) != 1 {
					t.Fatalf("elicitation: %q, %d requests sent", resultText(t, res), len(forms))
				}
				if strings.Contains(forms[0], `"mode"`) != (v >= "2025-11-25") || !strings.Contains(forms[0], `"requestedSchema"`) {
					t.Errorf("elicitation/create params on the wire: %s", forms[0])
				}
			}

			// URL elicitation only in 2025-11-25.
			res = callTool(t, cs, "v1_elicit_url", map[string]any{"url": "https://auth.example/x", "elicitationId": "e-" + v})
			urls := len(log.requests(t, "elicitation/create")) - len(forms)
			if v < "2025-11-25" {
				if !res.IsError || urls != 0 {
					t.Errorf("URL elicitation in %s: %q, %d requests sent", v, resultText(t, res), urls)
				}
				if v >= "2025-06-18" && !strings.Contains(resultText(t, res), `"url" elicitation`) {
					t.Errorf("URL elicitation in %s: %q", v, resultText(t, res))
				}
			} else if res.IsError || resultText(t, res) != "action=decline" || urls != 1 {
				t.Errorf("URL elicitation: %q, %d requests sent", resultText(t, res), urls)
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
