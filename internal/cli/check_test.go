package cli

import (
	"flag"
	"strings"
	"testing"
)

func TestCheckArgs(t *testing.T) {
	for _, line := range []string{
		"help",
		"help serve",
		"--help",
		"--version",
		"version",
		"serve examples/hello/hello.wasm",
		"serve --config hangar.yaml",
		"serve --config=hangar.yaml --http 127.0.0.1:8080",
		"serve --stdio --config hangar.yaml --offline --log-level debug",
		"serve a.wasm b.wasm c.wasm",
		"serve --help",
		"serve -h",
		"inspect examples/notes/notes.wasm",
		"inspect --json --set k=v p.wasm",
		"call p.wasm greet",
		`call p.wasm greet {"name":"Ada"}`,
		"call --json p.wasm greet {}",
		"pull oci://127.0.0.1:5000/a:1",
		"pull --sha256 abc https://x.example/p.wasm",
		"pull --config hangar.yaml",
		"pull --config hangar.yaml --update",
		"pull --cache-dir /tmp/c oci://127.0.0.1:5000/a:1",
		"push p.wasm oci://127.0.0.1:5000/hangar/hello:1.0",
		"push --plain-http=false p.wasm oci://127.0.0.1:5000/hangar/hello:1.0",
		"import hyper-mcp config.json",
		"client-config claude --config hangar.yaml",
		"client-config vscode --config hangar.yaml --name tools --placeholders",
	} {
		if err := CheckArgs(strings.Fields(line)); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	for line, want := range map[string]string{
		"":                                   "no command",
		"frobnicate":                         `unknown command "frobnicate"`,
		"help frobnicate":                    `help: unknown command "frobnicate"`,
		"serve --htpp 127.0.0.1:8080 p.wasm": "flag provided but not defined: -htpp",
		"serve --http":                       "flag needs an argument: -http",
		"serve --http 127.0.0.1:1 --stdio p.wasm": "do not fit the usage",
		"inspect":                             "do not fit the usage",
		"inspect a.wasm b.wasm":               "do not fit the usage",
		"call p.wasm":                         "do not fit the usage",
		"call p.wasm t {} extra":              "do not fit the usage",
		"pull":                                "do not fit the usage",
		"pull a b":                            "do not fit the usage",
		"pull --config x.yaml oci://r/a:1":    "do not fit the usage",
		"push p.wasm":                         "do not fit the usage",
		"import hyper p.json":                 "do not fit the usage",
		"client-config emacs --config x.yaml": "do not fit the usage",
		"client-config claude":                "do not fit the usage",
		"version now":                         "do not fit the usage",
		"serve --offline=maybe p.wasm":        "invalid boolean value",
	} {
		err := CheckArgs(strings.Fields(line))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", line, err, want)
		}
	}
}

// TestUsageLinesParse: every command's usage line is one CheckArgs
// understands, naming only the command's flags.
func TestUsageLinesParse(t *testing.T) {
	for _, c := range commands {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		if c.flags != nil {
			c.flags(fs)
		}
		if _, err := parseUsage(c.args, fs); err != nil {
			t.Errorf("hangar %s %s: %v", c.name, c.args, err)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("config", "", "")
	for line, want := range map[string]string{
		"[FILE":         `"[" without "]"`,
		"FILE ]":        `unexpected "]"`,
		"--nope":        "--nope is not a flag",
		"[--config]":    "--config takes a value",
		"... FILE":      `"..." after nothing`,
		"'unterminated": "unterminated quote",
	} {
		if _, err := parseUsage(line, fs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseUsage(%q) = %v, want %q", line, err, want)
		}
	}
}
