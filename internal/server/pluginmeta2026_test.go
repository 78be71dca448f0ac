package server_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testplugins/contract/xtp"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestPluginMeta2026: at 2026-07-28 a plugin's context._meta is the
// request's _meta without the keys that frame the request (protocol
// version, client info, log level), which the edge consumes and a plugin
// in an older session never sees; the client's capabilities and the
// request's own members stay. So on the fast path and on the go-sdk's, for
// every export a request reaches (tools/call, prompts/get,
// resources/read, completion/complete); and so for the usual _meta,
// which the fast path reads without decoding it (scanMeta), and one with
// a member of the request's own, which it decodes.
func TestPluginMeta2026(t *testing.T) {
	c, err := xtp.Load()
	if err != nil {
		t.Fatal(err)
	}
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/contract")
	for _, own := range []bool{false, true} {
		caps := map[string]any{"roots": map[string]any{"listChanged": true}, "elicitation": map[string]any{"form": map[string]any{}}}
		meta := modernMeta(caps)
		meta["io.modelcontextprotocol/logLevel"] = "error"
		want := map[string]any{"io.modelcontextprotocol/clientCapabilities": caps}
		if own {
			meta["trace"] = "x"
			want["trace"] = "x"
		}
		t.Run(fmt.Sprintf("own-member=%v", own), func(t *testing.T) { testPluginMeta2026(t, c, wasm, meta, want) })
	}
}

func testPluginMeta2026(t *testing.T, c *xtp.Contract, wasm string, meta, want map[string]any) {
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-fast-path=%v", disable), func(t *testing.T) {
			p := loadPlugin(t, "contract", wasm, config.Limits{MaxInstances: 1})
			s := newServer(t, &server.Options{DisableFastPath: disable}, server.Mount{Plugin: p, Prefix: "k"})
			io := newRawIO(t, s)
			for i, tc := range []struct {
				export, method string
				params         map[string]any
				text           func(result map[string]any) string
			}{
				{"call_tool", "tools/call", map[string]any{"name": "k_echo", "arguments": map[string]any{}}, func(r map[string]any) string {
					return r["content"].([]any)[0].(map[string]any)["text"].(string)
				}},
				{"get_prompt", "prompts/get", map[string]any{"name": "k_envelope", "arguments": map[string]any{}}, func(r map[string]any) string {
					return r["messages"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"].(string)
				}},
				{"read_resource", "resources/read", map[string]any{"uri": "k+contract://envelope"}, func(r map[string]any) string {
					return r["contents"].([]any)[0].(map[string]any)["text"].(string)
				}},
				{"complete", "completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "k_envelope"}, "argument": map[string]any{"name": "a", "value": "b"}}, func(r map[string]any) string {
					return r["completion"].(map[string]any)["values"].([]any)[0].(string)
				}},
			} {
				tc.params["_meta"] = meta
				id := fmt.Sprint(10 + i)
				out := io.exchange(mustJSON(map[string]any{"jsonrpc": "2.0", "id": 10 + i, "method": tc.method, "params": tc.params}), id)
				var answer struct{ Result map[string]any }
				if err := json.Unmarshal([]byte(out[len(out)-1]), &answer); err != nil || answer.Result == nil {
					t.Fatalf("%s: answered %s (%v)", tc.method, out[len(out)-1], err)
				}
				env := checkEnvelope(t, c, tc.export, tc.text(answer.Result))
				if !reflect.DeepEqual(env.Context.Meta, want) {
					t.Errorf("%s: the plugin got _meta %v, want %v", tc.method, env.Context.Meta, want)
				}
			}
		})
	}
}
