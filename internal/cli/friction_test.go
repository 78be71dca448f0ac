package cli

// The smaller frictions of issue 26, each as a user met it.

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/source/registrytest"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// TestCallArgumentsErrors: hangar call with arguments that are not a JSON
// object says where they fail to parse, or what they are instead.
func TestCallArgumentsErrors(t *testing.T) {
	isolate(t)
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	for _, tc := range []struct{ args, want string }{
		{`{"text": abc}`, "hangar call: arguments are not valid JSON: invalid character 'a' looking for beginning of value at byte 10:\n" +
			"  {\"text\": abc}\n" +
			"           ^\n" +
			`(quote the arguments for the shell: '{"name": "value"}')`},
		{`{"text": "abc"`, "hangar call: arguments are not valid JSON: unexpected end of JSON input at byte 14:\n" +
			"  {\"text\": \"abc\"\n" +
			"               ^\n" +
			`(quote the arguments for the shell: '{"name": "value"}')`},
		{`[1]`, `hangar call: arguments must be a JSON object ({"name": value, ...}), not an array: [1]`},
		{`text=abc`, "hangar call: arguments are not valid JSON: invalid character 'e' in literal true (expecting 'r') at byte 2:\n" +
			"  text=abc\n" +
			"   ^\n" +
			`(quote the arguments for the shell: '{"name": "value"}')`},
	} {
		_, stderr, code := hangar(t, "call", wasm, "reverse", tc.args)
		if code != 1 || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("call reverse %s: exit %d\n%s\nwant\n%s", tc.args, code, stderr, tc.want)
		}
	}
}

// TestFlagDidYouMean: a flag of another program (--port) or a mistyped
// one is answered with the flag that does it.
func TestFlagDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "8080"}, "Did you mean --http? (serve Streamable HTTP on this address (host:port), at path /mcp)"},
		{[]string{"serve", "--cofig", "x.yaml"}, "Did you mean --config? (configuration file (YAML or JSON))"},
		{[]string{"inspect", "--verbose", "x.wasm"}, "Did you mean --log-level? (diagnostics on stderr: debug, info, warn or error)"},
	} {
		_, stderr, code := hangar(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want+"\n") {
			t.Errorf("hangar %s: exit %d\n%s\nwant a line\n%s", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if _, stderr, _ := hangar(t, "serve", "--frobnicate"); strings.Contains(stderr, "Did you mean") {
		t.Errorf("a suggestion for --frobnicate:\n%s", stderr)
	}
}

// TestHelpFlagsFirst: a command's help gives its synopsis, a paragraph and
// its flags on the first screen, the details after them.
func TestHelpFlagsFirst(t *testing.T) {
	for _, c := range commands {
		out, _, code := hangar(t, c.name, "--help")
		if code != 0 {
			t.Errorf("%s --help: exit %d", c.name, code)
			continue
		}
		lines := strings.Split(out, "\n")
		if c.flags != nil {
			at := -1
			for i, l := range lines {
				if l == "Flags:" {
					at = i
					break
				}
			}
			if at < 0 || at > 12 {
				t.Errorf("%s --help: the flags start at line %d, want within the first 12:\n%s", c.name, at+1, out)
			}
		}
		if c.name == "serve" && len(lines) > 50 {
			t.Errorf("serve --help is %d lines, want at most 50:\n%s", len(lines), out)
		}
	}
}

// TestPullCacheDir: pull --cache-dir compiles what it fetched into the
// compilation cache serve takes as --cache-dir, and a registry that cannot
// be reached is said in words first.
func TestPullCacheDir(t *testing.T) {
	reg := registrytest.Start(t)
	wasm := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	isolate(t)
	ref := reg.Ref("hangar/legacy:1.0")
	if out, errOut, code := hangar(t, "push", wasm, ref); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	cache := t.TempDir()
	out, errOut, code := hangar(t, "pull", "--cache-dir", cache, ref)
	if code != 0 || !strings.Contains(out, "compiled:") {
		t.Fatalf("pull --cache-dir: exit %d\n%s%s", code, out, errOut)
	}
	for _, pattern := range []string{"wazero-*", "catalog-v*/*.json"} {
		if m, _ := filepath.Glob(filepath.Join(cache, pattern)); len(m) == 0 {
			t.Errorf("pull --cache-dir left no %s in the cache:\n%s", pattern, out)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, errOut, code = hangar(t, "pull", "oci://"+addr+"/a:1")
	want := "hangar pull: oci://" + addr + "/a:1: nothing accepts connections at " + addr + " (connection refused): is the registry or server running, on that port?\n  ("
	if code != 1 || !strings.HasPrefix(errOut, want) {
		t.Errorf("pull from a closed port: exit %d\n%s\nwant it to start with\n%s", code, errOut, want)
	}
}
