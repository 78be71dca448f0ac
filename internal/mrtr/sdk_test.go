package mrtr_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// On the go-sdk path the edge has the go-sdk's typed params, not the
// bytes: encoded again they bind to the same state as the raw params of
// the fast path, and the typed answers the go-sdk decoded pass the same
// checks.
func TestSDKPath(t *testing.T) {
	p := loadPlugin(t, 0)
	m := newManager(t, mrtr.Options{})
	for _, tc := range []struct {
		name   string
		tool   string
		args   string
		answer string
		want   string
	}{
		{"elicitation", "ask", `{"message":"Who?"}`, `{"action":"accept","content":{"name":"Ada"}}`, `"Ada"`},
		{"sampling", "sample", `{"prompt":"hi"}`, `{"role":"assistant","model":"m","content":{"type":"text","text":"yo"}}`, `"yo"`},
		{"roots", "roots", `{}`, `{"roots":[{"uri":"file:///w"}]}`, `"file:///w"`},
	} {
		for _, firstSDK := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				raw := json.RawMessage(`{"name":"` + tc.tool + `","arguments":` + tc.args + `,"_meta":{"progressToken":3}}`)
				// sdkParams is what the go-sdk path has: the params decoded
				// into the go-sdk's type, encoded again.
				sdkParams := func(raw json.RawMessage) json.RawMessage {
					var typed mcp.CallToolParamsRaw
					if err := json.Unmarshal(raw, &typed); err != nil {
						t.Fatal(err)
					}
					b, err := json.Marshal(&typed)
					if err != nil {
						t.Fatal(err)
					}
					return b
				}
				r := req{params: map[string]any{"name": tc.tool, "arguments": json.RawMessage(tc.args)}, caps: allCaps}
				first := r.request(t)
				first.Params = raw
				if firstSDK {
					first.Params = sdkParams(raw)
				}
				out, err := m.Serve(t.Context(), first, pluginRun(p, r, nil))
				key, _, state := mustInput(t, answer{out, err})
				retry := first
				retry.Params = sdkParams(json.RawMessage(`{"name":"` + tc.tool + `","arguments":` + tc.args +
					`,"_meta":{"progressToken":4},"requestState":"` + state + `","inputResponses":{"` + key + `":` + tc.answer + `}}`))
				out, err = m.Serve(t.Context(), retry, nil)
				text := toolText(t, answer{out, err})
				if !json.Valid([]byte(text)) || !strings.Contains(text, tc.want) {
					t.Errorf("result %s, want %s in it", text, tc.want)
				}
			})
		}
	}
}
