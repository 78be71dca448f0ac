package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestSlowStartServesOthers: a plugin whose start sleeps 60 s holds
// neither the health probes, which answer from the listener's opening,
// nor the other plugins, which serve once the sleeper has run for the
// start's wait (10 s). A request carrying the plugin marker is refused.
func TestSlowStartServesOthers(t *testing.T) {
	isolate(t)

	wasm := testutil.BuildPlugin(t, "./internal/testplugins/sleeper")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`plugins:
  - name: sleepy
    path: %s
    prefix: sleepy
    config: {startup_sleep_ms: "60000"}
    limits: {call_timeout: 2m}
  - name: quick
    path: %s
    prefix: quick
    limits: {call_timeout: 10m}
`, wasm, wasm)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		done <- Main(ctx, []string{"serve", "--log-level", "debug", "--http", "127.0.0.1:0", "--cache-dir", filepath.Join(dir, "cache"), "--config", cfg},
			&Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr})
	}()
	defer func() {
		cancel()
		<-done
	}()
	addrRE := regexp.MustCompile(`msg="listening: answering health probes[^\n]*addr=(\S+)`)
	var addr string
	for addr == "" {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("not listening:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz during the start: %d %s", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"sleepy":"listing"`) {
		t.Errorf("/readyz during the start: %d %s, want 503 naming sleepy as listing", code, body)
	}
	probed := time.Since(start)
	// A request a plugin made is refused on every path, the probes too.
	req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
	req.Header.Set(plugin.MarkerHeader, "1")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("/healthz with the plugin marker: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	if probed > 10*time.Second {
		t.Errorf("the probes answered %v after the start", probed)
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := time.Since(start)
	offered := map[string]bool{}
	for _, tool := range tools.Tools {
		offered[tool.Name] = true
		if strings.HasPrefix(tool.Name, "sleepy_") {
			t.Errorf("tool %s offered before its plugin is listed", tool.Name)
		}
	}
	if !offered["quick_echo"] {
		t.Errorf("the other plugin's tools are not offered: %v", offered)
	}
	if listed > 50*time.Second {
		t.Errorf("the other plugin was offered %v after the start, not before the sleeper woke", listed)
	}
	// Its calls wait for its compilation (minutes under the race
	// detector), then run.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "quick_echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("quick_echo while sleepy sleeps: %v %v\n%s", res, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "serving before every plugin is listed") {
		t.Errorf("the log does not say the start served without the sleeper:\n%s", stderr.String())
	}
	t.Logf("probes answered %v after the start; the other plugin's tools were offered %v after", probed.Round(time.Millisecond), listed.Round(time.Millisecond))
}
