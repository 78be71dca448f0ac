package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
)

// TestImportHyperMCP imports hyper-mcp configurations, in the list form
// of older versions and the mapping form of newer ones: the printed YAML
// loads with Hangar's configuration loader and says what each setting
// became; what Hangar does not support is reported.
func TestImportHyperMCP(t *testing.T) {
	t.Setenv("MY_TOKEN", "t0k3n")
	dir := t.TempDir()
	for _, d := range []string{"data", "logs"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	wasm := filepath.Join(dir, "local.wasm")
	os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	os.WriteFile(filepath.Join(dir, "trusted_root.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "cosign.pub"), []byte("key"), 0o644)

	list := `{
  "plugins": [
    {"name": "time", "url": "oci://ghcr.io/tuananh/time-plugin:latest"},
    {"name": "QR_code", "path": "oci://ghcr.io/tuananh/qrcode-plugin",
     "runtime_config": {
       "allowed_hosts": ["api.example.com", "*.example.org"],
       "allowed_paths": ["DIR/data", "DIR/logs:/plugin/logs"],
       "env_vars": {"TOKEN": "${MY_TOKEN}", "PRICE": "5$", "X": "${A:-b}"},
       "memory_limit": "64Mi",
       "tool_name_prefix": "qr",
       "skip_tools": ["debug_.*"],
       "allowed_secrets": [{"service": "s", "user": "u"}],
       "frobnicate": true}},
    {"name": "local", "url": "file://DIR/local.wasm"},
    {"name": "web", "url": "https://plugins.example.com/p.wasm"},
    {"name": "bucket", "url": "s3://bucket/p.wasm"},
    {"name": "other", "url": "oci://registry.example.com/team/other:2.0"}
  ],
  "auths": {"https://ghcr.io": {"type": "token", "token": "x"}},
  "color": "blue"
}`
	mapping := `
oci:
  cert_issuer: https://token.actions.githubusercontent.com
  cert_url: https://github.com/acme/plugins/.github/workflows/release.yml@refs/tags/v1
plugins:
  fetch:
    url: oci://ghcr.io/acme/fetch-plugin:1.2
    runtime_config:
      allowed_hosts: ["api.acme.example"]
      memory_limit: 1GB
  unsigned:
    url: oci://ghcr.io/acme/dev-plugin:dev
`
	unsafeOCI := "oci:\n  insecure_skip_signature: true\nplugins:\n  dev:\n    url: oci://localhost:5000/dev:1\n"

	for _, tc := range []struct {
		name, file, src string
		wantOut         []string // in the YAML
		wantErr         []string // on stderr
		check           func(t *testing.T, cfg *config.Config)
	}{
		{"list", "config.json", list,
			[]string{"name: qr_code", "source: oci://ghcr.io/tuananh/qrcode-plugin:latest", "memory: 64MiB", "prefix: qr", "PRICE: 5$$", "TOKEN: ${MY_TOKEN}",
				"{host: " + dir + "/logs, guest: /plugin/logs}", "source: file://" + dir + "/local.wasm", "NOT IMPORTED: web", "NOT IMPORTED: bucket", "key: ./cosign.pub"},
			[]string{"auths: not carried over", "color: unknown hyper-mcp setting", "QR_code: imported with all its tools: skip_tools is not supported, so those it skips are served too",
				"QR_code: allowed_secrets (keyring entries) is not supported", "QR_code: runtime_config.frobnicate is unknown",
				"QR_code: env_vars.X: ${NAME:-default}", "web: an https:// source needs a sha256 pin", "bucket: s3:// sources are not supported",
				"hyper-mcp accepted a signature by anyone"},
			func(t *testing.T, cfg *config.Config) {
				if len(cfg.Plugins) != 4 {
					t.Fatalf("%d plugins", len(cfg.Plugins))
				}
				qr := cfg.Plugins[1]
				if qr.Name != "qr_code" || qr.Prefix != "qr" || qr.Limits.MemoryPages != 64<<20/config.PageSize ||
					len(qr.Grants.AllowedPaths) != 2 || qr.Grants.AllowedPaths[1].Guest != "/plugin/logs" ||
					qr.Grants.Env["PRICE"] != "5$" || qr.Verify == nil || qr.Verify.Issuer != "https://token.actions.githubusercontent.com" {
					t.Errorf("qr_code = %+v", qr)
				}
				if l := cfg.Plugins[2]; l.Kind != config.SourceFile || l.Path != wasm {
					t.Errorf("local = %+v", l)
				}
				if o := cfg.Plugins[3]; o.Verify == nil || o.Verify.Key != filepath.Join(dir, "cosign.pub") {
					t.Errorf("other = %+v", o)
				}
			}},
		{"mapping", "config.yaml", mapping,
			[]string{"subject: https://github.com/acme/plugins/.github/workflows/release.yml@refs/tags/v1", "memory: 1GB", "allowed_hosts: [api.acme.example]"},
			nil,
			func(t *testing.T, cfg *config.Config) {
				if len(cfg.Plugins) != 2 || cfg.Plugins[0].Verify.Subject == "" || cfg.Plugins[1].Verify.Subject == "" {
					t.Errorf("plugins = %+v", cfg.Plugins)
				}
			}},
		{"insecure", "c.yaml", unsafeOCI, []string{"verify: false"}, nil,
			func(t *testing.T, cfg *config.Config) {
				if !cfg.Plugins[0].Verify.Disabled {
					t.Errorf("verify = %+v", cfg.Plugins[0].Verify)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			os.WriteFile(path, []byte(strings.ReplaceAll(tc.src, "DIR", dir)), 0o644)
			out, errOut, code := hangar(t, "import", "hyper-mcp", path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			// The output loads with Hangar's loader, beside the input.
			hangarYAML := filepath.Join(dir, "hangar-"+tc.name+".yaml")
			os.WriteFile(hangarYAML, []byte(out), 0o644)
			cfg, err := config.Load(hangarYAML)
			if err != nil {
				t.Fatalf("the imported configuration does not load: %v\n%s", err, out)
			}
			if strings.Contains(errOut, "does not load yet") {
				t.Errorf("import reported load problems: %s", errOut)
			}
			tc.check(t, cfg)
		})
	}

	// "*" (any host) is carried over as it is.
	out, _, err := importHyperMCP([]byte(`{"plugins": [{"name": "f", "url": "file:///f.wasm", "runtime_config": {"allowed_hosts": ["*"]}}]}`), ".json")
	if err != nil || !strings.Contains(string(out), "allowed_hosts: ['*']") {
		t.Errorf("allowed_hosts [\"*\"]: %v\n%s", err, out)
	}

	// Unusable input: a clear error.
	for src, want := range map[string]string{
		"[1, 2]":           "want an object with \"plugins\"",
		"{\"servers\": 1}": "no \"plugins\"",
		"plugins: [":       "not JSON or YAML",
	} {
		path := filepath.Join(dir, "bad.json")
		os.WriteFile(path, []byte(src), 0o644)
		if _, errOut, code := hangar(t, "import", "hyper-mcp", path); code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, %s; want %q", src, code, errOut, want)
		}
	}
	if _, errOut, code := hangar(t, "import", "mcp.run", "x"); code != 1 || !strings.Contains(errOut, "unknown format") {
		t.Errorf("unknown format: %d %s", code, errOut)
	}
}
