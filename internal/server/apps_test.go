package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The tests of MCP Apps (io.modelcontextprotocol/ui) at the server level:
// plugintest/testdata/app served three times, unprefixed ("plain") and
// under the prefixes alpha and beta (each with its ui://dashboard), and
// internal/testplugins/views under v.

const (
	uiExtension = "io.modelcontextprotocol/ui"
	viewMIME    = "text/html;profile=mcp-app"
)

// prefixTag is the <meta> a view of a plugin with the given tool prefix
// gets.
func prefixTag(prefix string) string {
	return fmt.Sprintf(`<meta name="com.github.hangar-mcp/tool-prefix" content="%s_">`, prefix)
}

func appServer(t *testing.T, opts *server.Options) *server.Server {
	app := testutil.BuildPlugin(t, "./plugintest/testdata/app")
	return newServer(t, opts,
		server.Mount{Plugin: loadPlugin(t, "plain", app, config.Limits{})},
		server.Mount{Plugin: loadPlugin(t, "alpha", app, config.Limits{}), Prefix: "alpha"},
		server.Mount{Plugin: loadPlugin(t, "beta", app, config.Limits{}), Prefix: "beta"},
		server.Mount{Plugin: loadPlugin(t, "views", testutil.BuildPlugin(t, "./internal/testplugins/views"), config.Limits{}), Prefix: "v"},
	)
}

// uiHostCaps are the capabilities of a UI host.
func uiHostCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Extensions: map[string]any{uiExtension: map[string]any{"mimeTypes": []any{viewMIME}}}}
}

// exposedMeta is a tool's _meta as the plugin declared it (the unprefixed
// mount's), with its view URIs as served under prefix.
func exposedMeta(t *testing.T, meta map[string]any, prefix string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(mustJSON(meta)), &out); err != nil {
		t.Fatal(err)
	}
	if ui, ok := out["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok {
			ui["resourceUri"] = strings.Replace(u, "ui://", "ui://"+prefix+"+", 1)
		}
	}
	if u, ok := out["ui/resourceUri"].(string); ok {
		out["ui/resourceUri"] = strings.Replace(u, "ui://", "ui://"+prefix+"+", 1)
	}
	return out
}

// withTag is a view's HTML with the tag after its first <head>.
func withTag(html, tag string) string {
	return strings.Replace(html, "<head>", "<head>"+tag, 1)
}

func TestAppsIn2025Sessions(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			s := appServer(t, &server.Options{DisableFastPath: !fast})
			ui := connect(t, s, &mcp.ClientOptions{Capabilities: uiHostCaps()})
			plain := connect(t, s, nil)
			ctx := context.Background()

			if _, ok := plain.InitializeResult().Capabilities.Extensions[uiExtension]; !ok {
				t.Errorf("initialize's capabilities lack %s: %+v", uiExtension, plain.InitializeResult().Capabilities)
			}

			tools := func(cs *mcp.ClientSession) map[string]*mcp.Tool {
				out := map[string]*mcp.Tool{}
				for tool, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					out[tool.Name] = tool
				}
				return out
			}
			uiTools, plainTools := tools(ui), tools(plain)
			for _, name := range []string{"refresh", "alpha_refresh", "beta_refresh", "v_secret"} {
				if uiTools[name] == nil {
					t.Errorf("the UI host's list lacks the app-only tool %s", name)
				}
				if plainTools[name] != nil {
					t.Errorf("a client that is no UI host is listed the app-only tool %s", name)
				}
			}
			for _, name := range []string{"show", "alpha_show", "beta_show", "v_show", "ping"} {
				if uiTools[name] == nil || plainTools[name] == nil {
					t.Errorf("tool %s not listed to both clients", name)
				}
			}
			for _, p := range []string{"alpha", "beta"} {
				for _, name := range []string{"show", "refresh"} {
					want := exposedMeta(t, uiTools[name].Meta, p)
					if got := uiTools[p+"_"+name].Meta; !reflect.DeepEqual(map[string]any(got), want) {
						t.Errorf("%s_%s's _meta = %v, want %v", p, name, got, want)
					}
				}
			}
			if u := uiTools["alpha_show"].Meta["ui"].(map[string]any)["resourceUri"]; u != "ui://alpha+dashboard" {
				t.Errorf("alpha_show's view is %v", u)
			}

			// Each prefixed plugin's view is its own, with the plugin's
			// _meta as declared and the tool prefix put in.
			base, err := ui.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://dashboard"})
			if err != nil || len(base.Contents) != 1 {
				t.Fatalf("reading ui://dashboard: %v %v", base, err)
			}
			if strings.Contains(base.Contents[0].Text, "tool-prefix") || base.Contents[0].MIMEType != viewMIME {
				t.Errorf("unprefixed view: %+v", base.Contents[0])
			}
			listed := map[string]*mcp.Resource{}
			for r, err := range ui.Resources(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				listed[r.URI] = r
			}
			for _, p := range []string{"alpha", "beta"} {
				uri := "ui://" + p + "+dashboard"
				r, err := plain.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil || len(r.Contents) != 1 {
					t.Fatalf("reading %s: %v %v", uri, r, err)
				}
				c := r.Contents[0]
				if c.URI != uri || c.MIMEType != viewMIME || !reflect.DeepEqual(c.Meta, base.Contents[0].Meta) || c.Meta["ui"] == nil {
					t.Errorf("%s: %+v, want the _meta %v", uri, c, base.Contents[0].Meta)
				}
				if want := withTag(base.Contents[0].Text, prefixTag(p)); c.Text != want {
					t.Errorf("%s's HTML:\n%s\nwant\n%s", uri, c.Text, want)
				}
				if l := listed[uri]; l == nil || !reflect.DeepEqual(l.Meta, listed["ui://dashboard"].Meta) {
					t.Errorf("%s listed as %+v", uri, l)
				}
			}

			// A blob view gets its tag too, after <HEAD ...>.
			r, err := ui.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://v+blob"})
			if err != nil || len(r.Contents) != 1 || !strings.Contains(string(r.Contents[0].Blob), `<HEAD lang="en">`+prefixTag("v")+`<title>`) {
				t.Errorf("ui://v+blob: %v %v", r, err)
			}

			// App-only tools: unknown to a client that is no UI host.
			if _, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_refresh", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), `unknown tool "alpha_refresh"`) {
				t.Errorf("alpha_refresh called by a client that is no UI host: %v", err)
			}
			if res := callTool(t, ui, "alpha_refresh", map[string]any{}); res.IsError || resultText(t, res) != `{"alerts":3,"up":12}` {
				t.Errorf("alpha_refresh for a UI host: %+v", res)
			}

			// The size bound.
			if _, err := ui.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://v+big"}); err == nil || !strings.Contains(err.Error(), "more than the 4194304 a view may be") {
				t.Errorf("reading a view past the bound: %v", err)
			}
		})
	}
}

func TestAppsAt2026(t *testing.T) {
	const alphaToken = "alpha-0123456789abcdef0123456789abcdef"
	a, err := auth.New(&config.Auth{Tokens: []config.Token{
		{ID: "all", SHA256: sha(allToken), Plugins: []string{"*"}},
		{ID: "alpha", SHA256: sha(alphaToken), Plugins: []string{"alpha"}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	uiCaps := map[string]any{"extensions": map[string]any{uiExtension: map[string]any{"mimeTypes": []any{viewMIME}}}}
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			s := appServer(t, &server.Options{DisableFastPath: !fast})
			ts := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{Auth: a}))
			t.Cleanup(ts.Close)
			c := newModern(t, ts.URL+server.Path)
			id := 0
			post := func(token, method string, params, caps map[string]any) *reply {
				t.Helper()
				if params == nil {
					params = map[string]any{}
				}
				params["_meta"] = modernMeta(caps)
				id++
				return c.do(c.request(id, method, params, map[string]string{"Authorization": "Bearer " + token}))
			}

			r := post(allToken, "server/discover", nil, nil)
			caps, _ := r.result()["capabilities"].(map[string]any)
			if ext, _ := caps["extensions"].(map[string]any); !reflect.DeepEqual(ext[uiExtension], map[string]any{}) {
				t.Errorf("server/discover: %s", r)
			}

			names := func(r *reply) map[string]bool {
				out := map[string]bool{}
				list, _ := r.result()["tools"].([]any)
				for _, x := range list {
					out[x.(map[string]any)["name"].(string)] = true
				}
				return out
			}
			uiList, plainList := names(post(allToken, "tools/list", nil, uiCaps)), names(post(allToken, "tools/list", nil, nil))
			for _, name := range []string{"refresh", "alpha_refresh", "beta_refresh", "v_secret"} {
				if !uiList[name] || plainList[name] {
					t.Errorf("%s listed to a UI host: %v, to another client: %v", name, uiList[name], plainList[name])
				}
			}
			if !uiList["show"] || !plainList["alpha_show"] {
				t.Errorf("lists: %v, %v", uiList, plainList)
			}
			if l := names(post(alphaToken, "tools/list", nil, uiCaps)); len(l) == 0 || l["beta_show"] || l["show"] || !l["alpha_refresh"] {
				t.Errorf("the alpha token's list: %v", l)
			}

			call := func(caps map[string]any) *reply {
				return post(allToken, "tools/call", map[string]any{"name": "beta_refresh", "arguments": map[string]any{}}, caps)
			}
			if r := call(nil); !strings.Contains(r.raw, `unknown tool \"beta_refresh\"`) {
				t.Errorf("beta_refresh called by a client that is no UI host: %s", r)
			}
			if r := call(uiCaps); r.result()["isError"] == true || !strings.Contains(r.raw, `alerts`) {
				t.Errorf("beta_refresh for a UI host: %s", r)
			}

			read := func(token, uri string) *reply {
				return post(token, "resources/read", map[string]any{"uri": uri}, nil)
			}
			base := read(allToken, "ui://dashboard").result()["contents"].([]any)[0].(map[string]any)
			for _, p := range []string{"alpha", "beta"} {
				r := read(allToken, "ui://"+p+"+dashboard")
				contents, _ := r.result()["contents"].([]any)
				if len(contents) != 1 {
					t.Fatalf("reading ui://%s+dashboard: %s", p, r)
				}
				got := contents[0].(map[string]any)
				if got["uri"] != "ui://"+p+"+dashboard" || got["mimeType"] != viewMIME || !reflect.DeepEqual(got["_meta"], base["_meta"]) {
					t.Errorf("ui://%s+dashboard: %v, want the _meta %v", p, got, base["_meta"])
				}
				if want := withTag(base["text"].(string), prefixTag(p)); got["text"] != want {
					t.Errorf("ui://%s+dashboard's HTML: %v", p, got["text"])
				}
			}

			// A token without the plugin: not found, as for a view no one
			// serves.
			if r := read(alphaToken, "ui://alpha+dashboard"); len(r.result()["contents"].([]any)) != 1 {
				t.Errorf("the alpha token reading its view: %s", r)
			}
			denied, none := read(alphaToken, "ui://beta+dashboard"), read(alphaToken, "ui://gamma+dashboard")
			if int64(denied.errorCode()) != mcp.CodeResourceNotFound || denied.errorCode() != none.errorCode() || strings.Contains(denied.raw, "<head>") {
				t.Errorf("the alpha token reading beta's view: %s (a view no one serves: %s)", denied, none)
			}

			if r := read(allToken, "ui://v+big"); r.errorCode() == 0 || !strings.Contains(r.raw, "more than the 4194304 a view may be") {
				t.Errorf("a view past the bound: %.300s", r)
			}
		})
	}
}
