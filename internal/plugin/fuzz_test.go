package plugin

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// FuzzPluginOutput feeds arbitrary bytes to Hangar as the output of every
// export of a v1 and of a servlet plugin: list_tools/describe and the
// other lists (with pagination), call_tool/call, read_resource, get_prompt,
// complete, on_roots_list_changed. Decoding must never panic, a result that
// decodes must keep the promises the server relies on, and it must encode
// again as JSON, as the SDK will.
//
// The plugins are internal/testplugins/hostile/mirror_*.wat, which output
// their Extism variable "out"; the fuzz function sets it on the plugin's only
// instance before each call.
//
//	go test -run='^$' -fuzz='^FuzzPluginOutput$' -fuzztime=30s ./internal/plugin
func FuzzPluginOutput(f *testing.F) {
	for _, seed := range []string{
		``,
		` `,
		`null`,
		`[]`,
		`{}`,
		"\xff\xfe{}",
		`{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}]}`,
		`{"tools":[{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}],"nextCursor":"2"}`,
		`{"tools":[null,1,"x",{"name":""},{"name":"t","inputSchema":"object"}]}`,
		`[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}]`,
		`{"name":"solo","inputSchema":{"type":"object"}}`,
		`{"content":[{"type":"text","text":"hi"}],"isError":false}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"aGk=","mimeType":"audio/wav"}]}`,
		`{"content":[{"type":"resource_link","uri":"x://y","name":"y"},{"type":"resource","resource":{"uri":"x://y","text":"t"}}],"structuredContent":{"a":1}}`,
		`{"content":[null]}`,
		`{"content":[{"type":"nope"}]}`,
		`{"content":[{"type":"resource","resource":null}]}`,
		`{"resources":[{"uri":"x://a","name":"a"}],"resourceTemplates":[{"uriTemplate":"x://{id}","name":"t"}]}`,
		`{"contents":[{"uri":"x://a","text":"t"},{"uri":"x://b","blob":"AAE="}]}`,
		`{"contents":[null]}`,
		`{"contents":null}`,
		`{"prompts":[{"name":"p","arguments":[{"name":"a","required":true}]}]}`,
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`,
		`{"messages":[null,{"role":"user","content":null}]}`,
		`{"completion":{"values":["a","b"],"total":2,"hasMore":false}}`,
		`{"completion":{"values":null}}`,
		`{"tools":[],"nextCursor":"` + strings.Repeat("c", 100) + `"}`,
		strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000),
		`{"content":[{"type":"text","text":"` + strings.Repeat(`\u0000`, 100) + `"}]}`,
	} {
		f.Add([]byte(seed))
	}

	ctx := context.Background()
	engine, err := NewEngine("")
	if err != nil {
		f.Fatal(err)
	}
	var plugins []*Plugin
	for _, name := range []string{"mirror_v1", "mirror_servlet"} {
		wasm, err := os.ReadFile(buildHostileWAT(f, name))
		if err != nil {
			f.Fatal(err)
		}
		p, err := engine.Load(ctx, wasm, Options{
			Name:   name,
			Limits: config.Limits{MemoryPages: 256, CallTimeout: 10 * time.Second, MaxInstances: 1, MaxOutput: 1 << 20},
			Logger: discard(),
		})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { p.Close(ctx) })
		plugins = append(plugins, p)
	}

	f.Fuzz(func(t *testing.T, out []byte) {
		for _, p := range plugins {
			fuzzExports(t, p, out)
			if inUse, _ := p.Stats(); inUse != 0 {
				t.Fatalf("%s: %d instances left in use", p.Name(), inUse)
			}
		}
	})
}

// setOutput makes the plugin's next call output out: its only instance
// gets the variable the mirror module outputs.
func setOutput(t *testing.T, p *Plugin, out []byte) {
	t.Helper()
	inst, err := p.pool.get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	inst.vars["out"] = out
	p.pool.put(inst, true)
}

func fuzzExports(t *testing.T, p *Plugin, out []byte) {
	ctx := context.Background()
	reencode := func(what string, v any) {
		t.Helper()
		if _, err := json.Marshal(v); err != nil {
			t.Errorf("%s: %s decoded, but does not encode: %v", p.Name(), what, err)
		}
	}

	setOutput(t, p, out)
	if tools, err := p.ListTools(ctx, nil); err == nil {
		for _, tool := range tools {
			if tool == nil || tool.Name == "" || checkTool(tool) != nil {
				t.Errorf("%s: ListTools returned an invalid tool %+v", p.Name(), tool)
			}
		}
		reencode("tools", tools)
	}

	setOutput(t, p, out)
	if res, err := p.CallTool(ctx, nil, "t", json.RawMessage(`{"a":"b"}`)); err == nil {
		if res == nil || res.Content == nil {
			t.Errorf("%s: CallTool returned %+v with nil content", p.Name(), res)
		}
		reencode("CallToolResult", res)
	}

	setOutput(t, p, out)
	if rs, err := p.ListResources(ctx, nil); err == nil {
		for _, r := range rs {
			if r == nil || r.URI == "" || r.Name == "" {
				t.Errorf("%s: ListResources returned an invalid resource %+v", p.Name(), r)
			}
		}
		reencode("resources", rs)
	}

	setOutput(t, p, out)
	if ts, err := p.ListResourceTemplates(ctx, nil); err == nil {
		for _, r := range ts {
			if r == nil || r.URITemplate == "" || r.Name == "" {
				t.Errorf("%s: ListResourceTemplates returned an invalid template %+v", p.Name(), r)
			}
		}
		reencode("resource templates", ts)
	}

	setOutput(t, p, out)
	if res, err := p.ReadResource(ctx, nil, "x://a"); err == nil {
		if res == nil || res.Contents == nil {
			t.Errorf("%s: ReadResource returned %+v with nil contents", p.Name(), res)
		}
		reencode("ReadResourceResult", res)
	}

	setOutput(t, p, out)
	if ps, err := p.ListPrompts(ctx, nil); err == nil {
		for _, pr := range ps {
			if pr == nil || pr.Name == "" {
				t.Errorf("%s: ListPrompts returned an invalid prompt %+v", p.Name(), pr)
			}
		}
		reencode("prompts", ps)
	}

	setOutput(t, p, out)
	if res, err := p.GetPrompt(ctx, nil, "p", map[string]string{"a": "b"}); err == nil {
		if res == nil || res.Messages == nil {
			t.Errorf("%s: GetPrompt returned %+v with nil messages", p.Name(), res)
		}
		reencode("GetPromptResult", res)
	}

	setOutput(t, p, out)
	params := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"}}
	if res, err := p.Complete(ctx, nil, params); err == nil {
		if res == nil || res.Completion.Values == nil {
			t.Errorf("%s: Complete returned %+v with nil values", p.Name(), res)
		}
		reencode("CompleteResult", res)
	}

	setOutput(t, p, out)
	p.RootsListChanged(ctx, nil)
}

// buildHostileWAT assembles internal/testplugins/hostile/<name>.wat into
// the test's temporary directory.
func buildHostileWAT(tb testing.TB, name string) string {
	tb.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		tb.Fatal("wat2wasm not found: apt-get install wabt")
	}
	out := filepath.Join(tb.TempDir(), name+".wasm")
	src := filepath.Join(testutil.Root(), "internal", "testplugins", "hostile", name+".wat")
	if msg, err := exec.Command(tool, src, "-o", out).CombinedOutput(); err != nil {
		tb.Fatalf("wat2wasm %s: %v\n%s", src, err, msg)
	}
	return out
}

// TestHostAllowed checks the matching of redirect targets against
// grants.allowed_hosts.
func TestHostAllowed(t *testing.T) {
	allowed := []string{"api.example.com", "*.example.org", "127.0.0.1", "::1"}
	for host, want := range map[string]bool{
		"api.example.com":      true,
		"API.Example.COM":      true,
		"api.example.com.":     false,
		"x.api.example.com":    false,
		"example.com":          false,
		"a.example.org":        true,
		"a.b.example.org":      true,
		"example.org":          false,
		".example.org":         false,
		"evilexample.org":      false,
		"example.org.evil.com": false,
		"127.0.0.1":            true,
		"127.0.0.2":            false,
		"localhost":            false,
		"::1":                  true,
		"":                     false,
	} {
		if got := hostAllowed(allowed, host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	if hostAllowed(nil, "example.com") {
		t.Error("no grant allowed a host")
	}
}

// FuzzHostAllowed: a "*.domain" grant matches exactly the names ending in
// ".domain" with something before it, and an exact grant only itself.
//
//	go test -run='^$' -fuzz='^FuzzHostAllowed$' -fuzztime=10s ./internal/plugin
func FuzzHostAllowed(f *testing.F) {
	f.Add("example.org", "a.example.org")
	f.Add("example.org", "example.org")
	f.Add("example.org", "aexample.org")
	f.Fuzz(func(t *testing.T, domain, host string) {
		if strings.HasPrefix(domain, "*") {
			t.Skip("the configuration allows a wildcard only as a leading \"*.\"")
		}
		lh, ld := strings.ToLower(host), strings.ToLower(domain)
		wantGlob := strings.HasSuffix(lh, "."+ld) && len(lh) > len(ld)+1
		if got := hostAllowed([]string{"*." + domain}, host); got != wantGlob {
			t.Errorf("*.%s vs %q = %v", domain, host, got)
		}
		if got := hostAllowed([]string{domain}, host); got != (lh != "" && ld == lh) {
			t.Errorf("%s vs %q = %v", domain, host, got)
		}
	})
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
