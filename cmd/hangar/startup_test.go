package main_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/catalog"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// started is a `hangar serve` over stdio with a connected client.
type started struct {
	cs      *mcp.ClientSession
	logs    *testutil.SyncBuffer
	changed chan string // list_changed notifications, by kind
}

// startServe runs hangar serve with args over stdio, with the debug log in
// a buffer, and connects a client.
func startLogged(t *testing.T, xdg string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(hangar, append([]string{"serve", "--log-level", "debug"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+xdg)
	s := &started{logs: &testutil.SyncBuffer{}, changed: make(chan string, 16)}
	cmd.Stderr = s.logs
	client := mcp.NewClient(&mcp.Implementation{Name: "startup-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.changed <- "tools" },
	})
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v; log:\n%s", err, s.logs.String())
	}
	s.cs = cs
	t.Cleanup(func() { cs.Close() })
	return s
}

func (s *started) tools(t *testing.T) string {
	t.Helper()
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v; log:\n%s", err, s.logs.String())
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return strings.Join(names, ",")
}

// waitLog waits until the log holds want.
func (s *started) waitLog(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(s.logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q; log:\n%s", want, s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// threePlugins writes a configuration of three Go plugins, whose compilation
// takes seconds (and, on a busy machine, minutes: calls wait for legacy for
// at most its call timeout). They compile at start (compile: eager), which
// is what the tests that use them look at; TestLazyCompileOnFirstCall
// (internal/cli) looks at the default.
func threePlugins(t *testing.T) string {
	return writeConfig(t, fmt.Sprintf(`plugins:
  - {name: legacy, path: %s, limits: {call_timeout: 5m}, compile: eager}
  - {name: servlet, path: %s, prefix: s, compile: eager}
  - {name: conformance, path: %s, compile: eager}
`, testutil.BuildPlugin(t, "./internal/testplugins/legacy"),
		testutil.BuildPlugin(t, "./internal/testplugins/servlet"),
		testutil.BuildPlugin(t, "./examples/conformance")))
}

// TestStartFromCatalog: the second start answers the first tools/list from
// the catalog cache while the plugins are still compiling (their machine
// code was removed from the cache), and a call made meanwhile waits for its
// plugin and succeeds.
func TestStartFromCatalog(t *testing.T) {
	cfg := threePlugins(t)
	cache := t.TempDir()
	xdg := t.TempDir()

	first := startLogged(t, xdg, "--config", cfg, "--cache-dir", cache)
	want := first.tools(t)
	first.waitLog(t, "msg=ready")
	first.cs.Close()
	entries, _ := filepath.Glob(filepath.Join(cache, "catalog-v*", "*.json"))
	if len(entries) != 3 {
		t.Fatalf("catalog entries after the first start: %v", entries)
	}
	// Only the catalog stays: every plugin compiles again.
	for _, pattern := range []string{"wazero-*", "fuel-v*", "hangar-sums.json"} {
		matches, _ := filepath.Glob(filepath.Join(cache, pattern))
		for _, m := range matches {
			os.RemoveAll(m)
		}
	}

	second := startLogged(t, xdg, "--config", cfg, "--cache-dir", cache)
	got := second.tools(t)
	logged := second.logs.String()
	if got != want {
		t.Errorf("first tools/list of the second start = %s, want %s", got, want)
	}
	if strings.Contains(logged, "msg=ready") || strings.Contains(logged, "msg=compiled") || strings.Contains(logged, `msg="compiled`) {
		t.Errorf("the plugins were compiled before the first tools/list was answered; log:\n%s", logged)
	}
	if n := strings.Count(logged, "lists from the catalog cache"); n != 3 {
		t.Errorf("%d plugins listed from the catalog, want 3; log:\n%s", n, logged)
	}
	res, err := second.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "cba" {
		t.Fatalf("reverse during compilation = %+v (%v), %v; log:\n%s", res, res.Content, err, second.logs.String())
	}
	if !strings.Contains(second.logs.String(), "msg=compiled plugin=legacy") {
		t.Errorf("the call returned before its plugin was compiled; log:\n%s", second.logs.String())
	}
	second.waitLog(t, "msg=ready")
	select {
	case kind := <-second.changed:
		t.Errorf("%s/list_changed, but the catalog was right", kind)
	default:
	}
}

// TestStartCatalogChecked: a catalog entry that says other tools than the
// plugin has is offered until the plugin is loaded, then replaced, with
// tools/list_changed; a corrupted entry is ignored, removed and written
// again. (The plugins compile at start; a lazy plugin's entry is checked on
// its first call.)
func TestStartCatalogChecked(t *testing.T) {
	cfg := writeConfig(t, fmt.Sprintf(`plugins:
  - {name: legacy, path: %s, compile: eager}
  - {name: servlet, path: %s, compile: eager}
`, testutil.BuildPlugin(t, "./internal/testplugins/legacy"), testutil.BuildPlugin(t, "./internal/testplugins/servlet")))
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	store := catalog.Open(cache)
	key := func(i int) catalog.Key {
		wasm, err := os.ReadFile(c.Plugins[i].Path)
		if err != nil {
			t.Fatal(err)
		}
		return catalog.KeyOf(wasm, c.Plugins[i])
	}
	// A consistent entry, checksum and all, that lies about legacy's tools.
	err = store.Put(key(0), &plugin.Lists{Read: plugin.AllLists, Tools: []*mcp.Tool{
		{Name: "ghost", InputSchema: map[string]any{"type": "object"}},
		{Name: "reverse", InputSchema: map[string]any{"type": "object"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// A corrupted entry for servlet.
	err = store.Put(key(1), &plugin.Lists{Read: plugin.AllLists, Tools: []*mcp.Tool{{Name: "wrong", InputSchema: map[string]any{"type": "object"}}}})
	if err != nil {
		t.Fatal(err)
	}
	servletEntry := filepath.Join(store.Dir(), key(1).String()+".json")
	b, err := os.ReadFile(servletEntry)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-5] ^= 0x20
	os.WriteFile(servletEntry, b, 0o600)

	s := startLogged(t, t.TempDir(), "--config", cfg, "--cache-dir", cache)
	if got := s.tools(t); got != "ghost,lookup,reverse" {
		t.Errorf("first tools/list = %s, want the catalog's ghost and reverse, and servlet's own lookup", got)
	}
	if !strings.Contains(s.logs.String(), "catalog entry ignored") {
		t.Errorf("the corrupted entry was not reported; log:\n%s", s.logs.String())
	}
	select {
	case <-s.changed:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no tools/list_changed; log:\n%s", s.logs.String())
	}
	if got := s.tools(t); got != "add,fail,lookup,reverse" {
		t.Errorf("tools once loaded = %s", got)
	}
	s.waitLog(t, "msg=ready")
	for i, name := range []string{"legacy", "servlet"} {
		l, err := store.Get(key(i))
		if err != nil || l == nil {
			t.Fatalf("%s's entry after the start: %v, %v", name, l, err)
		}
		var names []string
		for _, tool := range l.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if want := map[string]string{"legacy": "add,fail,reverse", "servlet": "lookup"}[name]; strings.Join(names, ",") != want {
			t.Errorf("%s's entry now lists %v, want %s", name, names, want)
		}
	}
}

// TestServeAddressInUse: an HTTP address in use fails the start at once,
// before any plugin is read or compiled.
func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	_, errOut, code := run(t, "serve", "--log-level", "debug", "--http", ln.Addr().String(), testutil.BuildPlugin(t, "./examples/conformance"))
	if code != 1 || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, sign := range []string{"plugin=", "compil", "catalog", "interpreter"} {
		if strings.Contains(errOut, sign) {
			t.Errorf("a plugin was loaded before the listener failed (%q in the log):\n%s", sign, errOut)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the start took %s to fail", d)
	}
}

// TestServeDownloadProgress: a plugin downloaded from an https source logs
// the download's start and end, with its size.
func TestServeDownloadProgress(t *testing.T) {
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./internal/testplugins/legacy"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(wasm)))
		w.Write(wasm)
	}))
	defer srv.Close()
	// The child trusts the test server's certificate through SSL_CERT_FILE.
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	cfg := writeConfig(t, fmt.Sprintf("plugins:\n  - {name: remote, source: %q, sha256: %s}\n", srv.URL+"/legacy.wasm", hex.EncodeToString(sum[:])))

	cmd := exec.Command(hangar, "serve", "--config", cfg, "--cache-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "SSL_CERT_FILE="+certFile)
	logs := &testutil.SyncBuffer{}
	cmd.Stderr = logs
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "download-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v; log:\n%s", err, logs.String())
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "dl"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "ld" {
		t.Fatalf("reverse = %+v, %v; log:\n%s", res, err, logs.String())
	}
	logged := logs.String()
	for _, want := range []string{
		fmt.Sprintf("msg=downloading plugin=remote source=%s/legacy.wasm bytes=%d", srv.URL, len(wasm)),
		fmt.Sprintf("msg=downloaded plugin=remote bytes=%d", len(wasm)),
	} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %q:\n%s", want, logged)
		}
	}
}
