package cli

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Files given for what they are not.

// wasmMagic starts every WebAssembly module (binary format).
var wasmMagic = []byte("\x00asm")

// checkModule returns nil if wasm, read from where for a plugin, starts
// like a WebAssembly module, and otherwise an error that says what the
// file is: a configuration file (hangar serve examples/hangar.yaml, where
// --config was meant), WebAssembly text, or something else.
func checkModule(where string, wasm []byte) error {
	if bytes.HasPrefix(wasm, wasmMagic) {
		return nil
	}
	text := bytes.TrimSpace(bytes.TrimPrefix(wasm, []byte("\xef\xbb\xbf")))
	switch {
	case len(wasm) == 0:
		return fmt.Errorf("%s is empty, not a WebAssembly module", where)
	case bytes.HasPrefix(text, []byte("(module")):
		return fmt.Errorf("%s is WebAssembly text, not a module: assemble it first (wat2wasm %s)", where, where)
	}
	var doc map[string]any
	if yaml.Unmarshal(text, &doc) == nil && doc != nil {
		if _, ok := doc["plugins"]; ok {
			return fmt.Errorf("%s is a configuration file, not a WebAssembly module: pass it with --config (--config %s)", where, where)
		}
		return fmt.Errorf("%s is not a WebAssembly module: it is a JSON or YAML document (a module starts with the bytes \\0asm)", where)
	}
	head := wasm[:min(len(wasm), 4)]
	return fmt.Errorf("%s is not a WebAssembly module: it starts with %q where a module starts with \"\\x00asm\"", where, head)
}

// loadConfig is config.Load, with a hint for a configuration of another
// host, whose strict key errors would say nothing of what to do.
func loadConfig(path string) (*config.Config, error) { return loadConfigEnv(path, nil) }

// loadConfigEnv is loadConfig with config.LoadEnv's getenv.
func loadConfigEnv(path string, getenv func(string) (string, bool)) (*config.Config, error) {
	cfg, err := config.LoadEnv(path, getenv)
	if err != nil {
		if what := foreignConfig(path); what != "" {
			return nil, errors.New(what)
		}
	}
	return cfg, err
}

// foreignConfig says what to do with the configuration file at path when it
// is another host's, which Hangar imports, and returns "" otherwise.
func foreignConfig(path string) string {
	data, err := readConfigInput(path)
	if err != nil {
		return ""
	}
	var doc struct {
		Plugins any            `yaml:"plugins"`
		Rest    map[string]any `yaml:",inline"`
	}
	if yaml.Unmarshal(data, &doc) != nil || !isHyperMCP(doc.Plugins, doc.Rest) {
		return ""
	}
	out := filepath.Join(filepath.Dir(path), "hangar.yaml")
	return fmt.Sprintf("%s is a hyper-mcp configuration, which Hangar does not read as it is: convert it with\n"+
		"  hangar import hyper-mcp %s > %s\n"+
		"review the result (hangar import lists what it could not carry over), then run\n"+
		"  hangar pull --config %s\n"+
		"  hangar serve --config %s", path, path, out, out, out)
}

// isHyperMCP reports whether a configuration's plugins and its other
// top-level members are hyper-mcp's: plugins with "url" or
// "runtime_config" (as a list or as a mapping of names) and none of
// Hangar's own keys, and no top-level member but hyper-mcp's.
func isHyperMCP(plugins any, rest map[string]any) bool {
	for k := range rest {
		switch k {
		case "oci", "auths", "dynamic_loading":
		default:
			return false
		}
	}
	var entries []any
	switch ps := plugins.(type) {
	case []any:
		entries = ps
	case map[string]any:
		for _, p := range ps {
			entries = append(entries, p)
		}
	default:
		return false
	}
	hyper := false
	for _, p := range entries {
		m, _ := p.(map[string]any)
		for k := range m {
			switch k {
			case "url", "runtime_config":
				hyper = true
			case "source", "sha256", "verify", "prefix", "config", "limits", "grants":
				return false // Hangar's
			}
		}
	}
	return hyper
}
