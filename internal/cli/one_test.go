package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// writeFile writes body to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCallWithConfig checks that the config values, grants and limits of
// the --config entry apply to call, and that they do not without it; then
// the same for inspect.
func TestCallWithConfig(t *testing.T) {
	cache := t.TempDir() // one compilation per module, not per command
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/typed")
	dir := t.TempDir()
	writeFile(t, dir, "note.txt", "from the grant")
	cfg := writeFile(t, dir, "hangar.yaml", fmt.Sprintf(`plugins:
  - name: typed
    path: %s
    prefix: ty
    config: {greeting: Ahoy}
    grants:
      allowed_paths: [{host: ., guest: /data, read_only: true}]
    limits:
      call_timeout: 1s
  - name: other
    path: %[1]s
    prefix: ot
`, wasm))
	with := []string{"call", "--cache-dir", cache, "--config", cfg, "--plugin", "typed"}

	out, errOut, code := hangar(t, append(with, "read_file", `{"path":"/data/note.txt"}`)...)
	if code != 0 || strings.TrimSpace(out) != `{"text":"from the grant"}` {
		t.Errorf("read_file with the grant: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := hangar(t, "call", "--cache-dir", cache, wasm, "read_file", `{"path":"/data/note.txt"}`); code != 1 || errOut == "" {
		t.Errorf("read_file without the grant: exit %d, %q", code, errOut)
	}

	out, errOut, code = hangar(t, append(with, "greet", `{"name":"Ada"}`)...)
	if code != 0 || strings.TrimSpace(out) != `{"greeting":"Ahoy, Ada."}` {
		t.Errorf("greet with config: exit %d, %q %q", code, out, errOut)
	}
	out, errOut, code = hangar(t, append(with, "--set", "greeting=Yo", "greet", `{"name":"Ada"}`)...)
	if code != 0 || strings.TrimSpace(out) != `{"greeting":"Yo, Ada."}` {
		t.Errorf("greet with --set over config: exit %d, %q %q", code, out, errOut)
	}

	start := time.Now()
	_, errOut, code = hangar(t, append(with, "spin")...)
	if code != 1 || !strings.Contains(errOut, "1s") {
		t.Errorf("spin with call_timeout 1s: exit %d, %q", code, errOut)
	}
	if took := time.Since(start); took > 25*time.Second {
		t.Errorf("spin with call_timeout 1s took %v; the default limit (30s) seems to apply", took)
	}

	if _, errOut, code := hangar(t, append(with, "add", `{"a":"x","b":1}`)...); code != 1 || !strings.Contains(errOut, `invalid arguments for tool "add"`) {
		t.Errorf("add with a bad argument: exit %d, %q", code, errOut)
	}
	if _, errOut, code := hangar(t, append(with, "ty_add", `{"a":1,"b":1}`)...); code != 1 || !strings.Contains(errOut, `unknown tool "ty_add"`) {
		t.Errorf("a prefixed name: exit %d, %q; want the plugin's own names", code, errOut)
	}

	if _, errOut, code := hangar(t, "call", "--config", cfg, "add"); code != 1 || !strings.Contains(errOut, "configures 2 plugins (typed, other): choose one with --plugin NAME") {
		t.Errorf("two plugins, no --plugin: exit %d, %q", code, errOut)
	}
	if _, errOut, code := hangar(t, "call", "--config", cfg, "--plugin", "nope", "add"); code != 1 || !strings.Contains(errOut, `configures no plugin named "nope"; its plugins are typed, other`) {
		t.Errorf("unknown --plugin: exit %d, %q", code, errOut)
	}
	if _, errOut, code := hangar(t, "call", "--plugin", "typed", wasm, "add"); code != 2 || !strings.Contains(errOut, "--plugin needs --config") {
		t.Errorf("--plugin without --config: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "hangar.lock")); !os.IsNotExist(err) {
		t.Errorf("call --config wrote hangar.lock for file plugins: %v", err)
	}

	checkInspectWithConfig(t, wasm, cache)

	// One plugin: --plugin may be left out.
	one := writeFile(t, t.TempDir(), "one.yaml", fmt.Sprintf("plugins:\n  - {name: solo, path: %s}\n", wasm))
	if out, errOut, code := hangar(t, "call", "--cache-dir", cache, "--config", one, "add", `{"a":1,"b":2}`); code != 0 || strings.TrimSpace(out) != `{"sum":3}` {
		t.Errorf("the only plugin: exit %d, %q %q", code, out, errOut)
	}
}

// checkInspectWithConfig checks that inspect loads the --config entry with
// its limits, and shows its prefix.
func checkInspectWithConfig(t *testing.T, wasm, cache string) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "hangar.yaml", fmt.Sprintf(`plugins:
  - name: typed
    path: %s
    prefix: ty
  - name: tiny
    path: %[1]s
    limits: {memory: 128KiB}
`, wasm))
	out, errOut, code := hangar(t, "inspect", "--cache-dir", cache, "--config", cfg, "--plugin", "typed")
	if code != 0 || !strings.Contains(out, "plugin:    typed\nprefix:    ty (clients see tools and prompts as ty_NAME, URIs as ty+URI)") ||
		!strings.Contains(out, "  add - Add two numbers.\n      arguments: a: number, b: number") {
		t.Errorf("inspect --config: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = hangar(t, "inspect", "--cache-dir", cache, "--json", "--config", cfg, "--plugin", "typed")
	var in inspection
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in.Prefix != "ty" || len(in.Tools) == 0 {
		t.Errorf("inspect --json --config: exit %d, %+v\n%s%s", code, in, out, errOut)
	}
	// The entry's memory limit applies: a Go plugin does not start in 128KiB.
	if _, errOut, code := hangar(t, "inspect", "--cache-dir", cache, "--config", cfg, "--plugin", "tiny"); code != 1 || !strings.Contains(errOut, "memory") {
		t.Errorf("inspect with a 128KiB memory limit: exit %d, %q", code, errOut)
	}
	if _, errOut, code := hangar(t, "inspect", "--config", cfg, "--plugin", "typed", wasm); code != 2 || !strings.Contains(errOut, "Usage: hangar inspect") {
		t.Errorf("inspect --config with a .wasm file too: exit %d, %q", code, errOut)
	}
}
