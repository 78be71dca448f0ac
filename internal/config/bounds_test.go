package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigBounds: a "billion laughs" file (aliases of aliases) and an
// oversized file are refused quickly with a clear error.
func TestConfigBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("plugins:\n  - name: a\n    path: plugins/hello.wasm\n    grants:\n      allowed_hosts: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n")
	prev := "a"
	for i, c := range "bcdefghi" {
		fmt.Fprintf(&b, "  - name: p%d\n    path: plugins/hello.wasm\n    config: {x: &%c [%s]}\n", i, c, strings.TrimSuffix(strings.Repeat("*"+prev+", ", 9), ", "))
		prev = string(c)
	}
	fmt.Fprintf(&b, "  - name: last\n    path: plugins/hello.wasm\n    grants: {allowed_hosts: *%s}\n", prev)
	start := time.Now()
	_, err := parse(t, b.String())
	if err == nil || !strings.Contains(err.Error(), "aliases (*name) expand to") {
		t.Errorf("billion laughs: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("billion laughs took %v", d)
	}
	t.Logf("billion laughs (%d bytes) refused in %v: %v", b.Len(), time.Since(start), err)

	// Wide rather than deep: one plugin aliased 30,000 times in 90KB.
	wide := "p: &p\n  name: p\n  path: plugins/hello.wasm\n  grants: {allowed_hosts: [a.example, b.example], env: {A: \"1\", B: \"2\"}}\n" +
		"plugins: [" + strings.TrimSuffix(strings.Repeat("*p,", 30000), ",") + "]\n"
	start = time.Now()
	_, err = parse(t, wide)
	if err == nil || !strings.Contains(err.Error(), "aliases (*name) expand to") {
		t.Errorf("wide aliases: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wide aliases took %v", d)
	}
	t.Logf("wide aliases (%d bytes) refused in %v", len(wide), time.Since(start))

	// A few aliases are fine.
	mustParse(t, "plugins:\n  - name: a\n    path: plugins/hello.wasm\n    grants: {allowed_hosts: &h [a.example, b.example]}\n  - name: b\n    path: plugins/hello.wasm\n    grants: {allowed_hosts: *h}\n")

	big := "plugins:\n" + strings.Repeat("# padding\n", MaxFileSize/10+1)
	if _, err := parse(t, big); err == nil || !strings.Contains(err.Error(), "a configuration file may have at most") {
		t.Errorf("oversized: %v", err)
	}
	path := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(path, []byte(big), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "a configuration file may have at most") {
		t.Errorf("Load oversized: %v", err)
	}
}
