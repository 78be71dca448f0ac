package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// attack is one batched 2025-03-26 request, which needs no session: it
// calls another plugin's tool, which answers with that plugin's granted
// environment.
const attack = `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}},` +
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"env","arguments":{}}}]`

// TestServePluginCannotReachHangar serves a plugin granted "localhost" with
// `hangar serve --http 127.0.0.1:0`, beside a plugin granted a secret. The
// plugin can reach another server on 127.0.0.1, but not Hangar's own /mcp,
// through which it would call the other plugin with its grants.
func TestServePluginCannotReachHangar(t *testing.T) {
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "local %s %s", r.Method, b)
	}))
	defer local.Close()

	cfg := writeConfig(t, fmt.Sprintf(`plugins:
  - name: web
    path: %s
    grants: {allowed_hosts: [localhost]}
  - name: victim
    path: %s
    grants: {env: {SECRET: s3cret-value}}
`, testutil.BuildPlugin(t, "./internal/testplugins/egress"), testutil.BuildPlugin(t, "./internal/testplugins/hostile")))
	cmd := exec.Command(hangar, "serve", "--config", cfg, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+testutil.ShareCompiledCache(t, t.TempDir()))
	var logs testutil.SyncBuffer
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:(\d+)/mcp`)
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m:
				default:
				}
			}
		}
	}()
	var m []string
	select {
	case m = <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("hangar did not log its URL; log:\n%s", logs.String())
	}
	endpoint, port := m[0], m[1]

	// One request cannot do it any more, even from a client: initialize is
	// refused inside a batch (issue 15.2b).
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(attack))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	direct, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(direct), "s3cret-value") || !strings.Contains(string(direct), "initialize must not be part of a JSON-RPC batch") {
		t.Fatalf("the batched request sent directly got %d %s; want it refused", resp.StatusCode, direct)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "egress-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// A client's session reaches the victim's tool: it is the plugin that
	// must not be able to.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{}}); err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(fmt.Sprint(res.Content[0]), "s3cret-value") {
		t.Fatalf("a client's call of env: %v %v; want the victim's environment", res, err)
	}
	fetch := func(url string) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{
			"url": url, "method": "POST", "body": attack,
			"headers": map[string]any{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
		}})
		if err != nil {
			t.Fatalf("fetch %s: %v", url, err)
		}
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return strings.Join(texts, ""), res.IsError
	}

	localURL := strings.Replace(local.URL, "127.0.0.1", "localhost", 1)
	if got, isErr := fetch(localURL + "/"); isErr || got != "200 local POST "+attack {
		t.Errorf("fetch of another local server = %q (error %v)", got, isErr)
	}
	for _, url := range []string{
		"http://localhost:" + port + "/mcp",
		"http://localhost:" + port + "/",
	} {
		got, isErr := fetch(url)
		if !isErr || strings.Contains(got, "s3cret") ||
			!strings.Contains(got, `plugin web: call: HTTP request denied: host "localhost"`) || !strings.Contains(got, "is Hangar's own server, which no grant allows") {
			t.Errorf("fetch %s = %q (error %v); want it refused as Hangar's own server", url, got, isErr)
		}
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the secret reached the log:\n%s", logs.String())
	}
}
