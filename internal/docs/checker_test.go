package docs_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// check runs the checker on a document held in memory, as file of the
// repository, and returns its problems.
func check(t *testing.T, file, text string) []string {
	t.Helper()
	blocks, problems := parseBlocks(file, text)
	d := &docCheck{t: t, root: testutil.Root(), file: file, home: t.TempDir(), run: &runEnv{root: testutil.Root()}}
	t.Cleanup(d.run.cleanup)
	for _, b := range blocks {
		if (b.lang == "yaml" || b.lang == "yml") && blockName(b) != "" {
			d.named = append(d.named, blockName(b))
		}
	}
	for _, b := range blocks {
		d.check(b)
	}
	return append(problems, d.problems...)
}

// TestCheckerFinds: the checker reports each kind of wrong block, with the
// file and line, and accepts right ones; so TestDocs passing means
// something.
func TestCheckerFinds(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string // substrings of the problems, in order; none: no problem
	}{
		{"valid configuration", "# T\n\n```yaml\nplugins:\n  - name: a\n    path: ./a.wasm\n    grants:\n      env: {K: '${SECRET}'}\n      allowed_paths: [{host: /srv/data}]\n```\n", nil},
		{"unknown key", "text\n\n```yaml\nplugins:\n  - name: a\n    pathh: ./a.wasm\n```\n",
			[]string{"docs/x.md:3: yaml block (lines 3-7) is not a valid Hangar configuration", "docs/x.md:6:5: plugins[0]: unknown key \"pathh\"", "<!-- check: fragment -->"}},
		{"truncated digest", "```yaml\nplugins:\n  - name: w\n    source: https://x.example/w.wasm\n    sha256: 5f2b8c0e...\n```\n",
			[]string{"docs/x.md:5:13: plugins[0].sha256: invalid sha256"}},
		{"fragment", "<!-- check: fragment -->\n```yaml\nlimits:\n  memory: 64MiB\n```\n", nil},
		{"bad fragment", "<!-- check: fragment -->\n```yaml\na: [\n```\n", []string{"docs/x.md:2: yaml fragment is not valid YAML"}},
		{"skip", "<!-- check: skip another program's format -->\n```yaml\nnot: hangar\n```\n", nil},
		{"skip without reason", "<!-- check: skip -->\n```yaml\nnot: hangar\n```\n", []string{"needs a reason"}},
		{"unknown marker", "<!-- check: maybe -->\n```yaml\nplugins: []\n```\n", []string{`unknown check marker "maybe"`}},
		{"stray marker", "<!-- check: fragment -->\n\ntext\n", []string{"docs/x.md:1: a check marker that is not on the line just before"}},
		{"marker on the wrong block", "<!-- check: run -->\n```yaml\nplugins: []\n```\n", []string{`<!-- check: run --> on a "yaml" block`}},
		{"good commands", "```sh\n./hangar serve --config hangar.yaml   # stdio\nhangar inspect x.wasm | head\ngo run ./cmd/hangar call x.wasm greet '{\"name\": \"A d a\"}' > out.txt 2>&1\nFOO=1 hangar pull --config h.yaml && hangar version\n```\n", nil},
		{"prompts and output", "```sh\n$ ./hangar pull --config hangar.yaml\nhello  sha256:1162  oci://x  --not-a-flag\n$ ./hangar serve --config hangar.yaml \\\n    --offline\n```\n", nil},
		{"unknown flag", "text\n```sh\nmake examples\n./hangar serve --htpp 127.0.0.1:8080 x.wasm\n```\n",
			[]string{`docs/x.md:4: "./hangar serve --htpp 127.0.0.1:8080 x.wasm": hangar serve: flag provided but not defined: -htpp`}},
		{"unknown command", "```sh\n$ hangar frobnicate\n```\n", []string{`unknown command "frobnicate"`}},
		{"wrong arguments", "```sh\nhangar call x.wasm\n```\n", []string{"do not fit the usage"}},
		{"unterminated quote", "```sh\nhangar call x.wasm greet '{\n```\n", []string{"line 1: unterminated ' quote"}},
		{"bad json", "```json\n{\"a\": }\n```\n", []string{"docs/x.md:1: json block is not valid JSON"}},
		{"excerpt", "<!-- check: excerpt examples/hangar.yaml -->\n```yaml\nplugins:\n  - name: hello                  # greet, hash, uuid, base64\n    path: ./hello/hello.wasm\n```\n", nil},
		{"excerpt differs", "<!-- check: excerpt examples/hangar.yaml -->\n```yaml\nplugins:\n  - name: hello\n    path: ./hello/hello.wasm\n```\n",
			[]string{"docs/x.md:2: the block is marked as an excerpt of examples/hangar.yaml, which does not hold its lines"}},
		{"client-config without --command", "<!-- check: client-config claude --config examples/hangar.yaml -->\n```json\n{}\n```\n", []string{"must give --command"}},
		{"client-config", "<!-- check: client-config cursor --command /usr/local/bin/hangar --config examples/hangar.yaml -->\n```json\n" +
			`{"mcpServers": {"hangar": {"command": "/usr/local/bin/hangar", "args": ["serve", "--stdio", "--config", "/home/me/hangar/examples/hangar.yaml"]}}}` + "\n```\n", nil},
		{"client-config differs", "<!-- check: client-config vscode --command /usr/local/bin/hangar --config examples/hangar.yaml -->\n```json\n" +
			`{"mcpServers": {"hangar": {"command": "/usr/local/bin/hangar", "args": ["serve", "--stdio", "--config", "/home/me/hangar/examples/hangar.yaml"]}}}` + "\n```\n",
			[]string{`docs/x.md:2: json block differs from what "hangar client-config vscode`, `"servers"`}},
		{"client-config of a named block", "```yaml\n# team.yaml\nplugins:\n  - name: t\n    path: ./t.wasm\n    grants: {env: {TOKEN: '${TEAM_TOKEN}'}}\n```\n" +
			"<!-- check: client-config windsurf --command /opt/hangar --config team.yaml -->\n```json\n" +
			`{"mcpServers": {"hangar": {"command": "/opt/hangar", "args": ["serve", "--stdio", "--config", "/home/me/team.yaml"], "env": {"TEAM_TOKEN": "<value of TEAM_TOKEN>"}}}}` + "\n```\n", nil},
	} {
		got := check(t, "docs/x.md", tc.doc)
		if len(tc.want) == 0 {
			if len(got) > 0 {
				t.Errorf("%s: problems:\n%s", tc.name, strings.Join(got, "\n"))
			}
			continue
		}
		all := strings.Join(got, "\n")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: problems lack %q:\n%s", tc.name, w, all)
			}
		}
	}
}

// TestCheckerFindsFiles: files and directories the loader reports missing
// are provided even under keys the checker does not know.
func TestCheckerFindsFiles(t *testing.T) {
	useFileRefs = false
	defer func() { useFileRefs = true }()
	doc := "```yaml\nplugins:\n  - name: a\n    path: ./plugins/a.wasm\n    grants:\n      allowed_paths:\n        - {host: /srv/data, guest: /data}\n        - {host: ./scratch}\n" +
		"  - name: b\n    source: file:///opt/plugins/b.wasm\n  - name: c\n    source: oci://r.example/c:1\n    verify: {key: ../keys/cosign.pub}\n```\n"
	if got := check(t, "docs/x.md", doc); len(got) > 0 {
		t.Errorf("problems:\n%s", strings.Join(got, "\n"))
	}
	if got := check(t, "docs/x.md", "```yaml\nplugins:\n  - name: a\n    pathh: ./a.wasm\n```\n"); len(got) != 1 {
		t.Errorf("a wrong block: %q", got)
	}
}

// TestCheckerRuns: a block marked run is executed where ./hangar and the
// examples are, and fails the check when it fails.
func TestCheckerRuns(t *testing.T) {
	if got := check(t, "README.md", "<!-- check: run -->\n```sh\n./hangar call examples/hello/hello.wasm greet '{\"name\":\"Ada\"}' | grep -x 'Hello, Ada!'\nhangar inspect examples/notes/notes.wasm >/dev/null\ntest -f examples/hangar.yaml\n```\n"); len(got) > 0 {
		t.Errorf("a good block marked run: %s", strings.Join(got, "\n"))
	}
	got := check(t, "README.md", "<!-- check: run -->\n```sh\n./hangar call examples/hello/hello.wasm greet '{\"name\":\"Ada\"}' | grep -x 'Goodbye, Ada!'\n```\n")
	if len(got) != 1 || !strings.Contains(got[0], "README.md:2: block marked run failed") {
		t.Errorf("a failing block marked run: %q", got)
	}
}

func TestLinksAndAnchors(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	os.WriteFile(filepath.Join(root, "docs", "b.md"), []byte("# B\n\n## Files: `allowed_paths`\n\n```sh\n# not a heading\n```\n\n## Why X?\n## Why X?\n### hyper-mcp plugins and `hangar import`\n"), 0o644)
	doc := "# A\n\n## Set-up\n\nSee [b](docs/b.md#files-allowed_paths), [x](docs/b.md#why-x-1), [y](docs/b.md#hyper-mcp-plugins-and-hangar-import),\n" +
		"[up](#set-up), [web](https://example.com/#x), `[code](nope.md)`.\n\n```md\n[in code](nope.md)\n```\n" +
		"[gone](docs/c.md) [bad anchor](docs/b.md#why-y) [bad own](#setup)\n"
	os.WriteFile(filepath.Join(root, "README.md"), []byte(doc), 0o644)
	got := checkLinks(root, "README.md", doc)
	want := []string{
		"README.md:11: link to docs/c.md: docs/c.md does not exist",
		"README.md:11: link to docs/b.md#why-y: docs/b.md has no heading with the anchor #why-y",
		"README.md:11: link to #setup:",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d = %q, want %q...", i, got[i], w)
		}
	}
	if a := anchors("# Hangar\n## Why `prefix_name` and `prefix+uri`?\n## Protocol versions\n"); !slices.Equal(a, []string{"hangar", "why-prefix_name-and-prefixuri", "protocol-versions"}) {
		t.Errorf("anchors = %q", a)
	}
}

// TestSectionRefs: a prose reference to a section of the README that is
// not there (it moved to docs/) is found; so is one the checker cannot
// check; links and quoted headings that exist pass.
func TestSectionRefs(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	os.WriteFile(filepath.Join(root, "README.md"), []byte("# Hangar\n\n## Set-up\n\n## Write a plugin in 5 minutes\n\n```sh\n# Network\n```\n"), 0o644)
	os.WriteFile(filepath.Join(root, "docs", "sandbox.md"), []byte("# The sandbox\n\n## Network: `allowed_hosts`\n"), 0o644)
	doc := "# Doc\n\n" +
		"The README's \"Write a plugin in 5 minutes\" is short; see the README, \"Set-up\".\n" + // 3: fine
		"It is in sandbox.md's \"Network: allowed_hosts\" and [the README](../README.md#set-up).\n" + // 4: fine
		"Checked on every redirect (see the README, \"Network\").\n" + // 5: moved
		"See the README's \"Instances and state\".\n" + // 6: moved
		"Whatever their grants (see the sandbox section of the README).\n" + // 7: not checkable
		"See the README's Configuration and The sandbox.\n" + // 8: not checkable
		"See sandbox.md's \"Files\".\n" + // 9: no such heading
		"`the README's \"Nothing\"` in code is not prose.\n" // 10: fine
	got := checkSectionRefs(root, "docs/doc.md", doc)
	want := []string{
		`docs/doc.md:5: reference to the section "Network" of README.md, which has no such heading`,
		`docs/doc.md:6: reference to the section "Instances and state" of README.md, which has no such heading`,
		`docs/doc.md:7: "section of the README" refers to a section by a name the checker cannot check`,
		`docs/doc.md:8: "README's Configuration" refers to a section by a name the checker cannot check`,
		`docs/doc.md:9: reference to the section "Files" of sandbox.md, which has no such heading`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d = %q, want %q...", i, got[i], w)
		}
	}
}
