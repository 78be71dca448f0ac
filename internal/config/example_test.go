package config_test

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hangar-mcp/hangar/internal/config"
)

func Example() {
	src := []byte(`
plugins:
  - name: hello
    path: plugins/hello.wasm
    prefix: hi
    limits:
      memory: 64MiB
      call_timeout: 5s
    grants:
      allowed_hosts: ["api.example.com"]
      env:
        API_KEY: ${HANGAR_API_KEY}
`)
	getenv := func(name string) (string, bool) {
		if name == "HANGAR_API_KEY" {
			return "secret", true
		}
		return "", false
	}
	cfg, err := config.Parse(src, "hangar.yaml", "testdata", getenv)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := cfg.Plugins[0]
	fmt.Println(p.Name, p.Prefix, filepath.Base(p.Path))
	fmt.Println(p.Limits.MemoryPages, "pages,", p.Limits.CallTimeout, "per call,", p.Limits.HostTimeout, "for the client")
	fmt.Println(p.Grants.AllowedHosts, p.Grants.Env["API_KEY"])
	fmt.Printf("HTTP address: %q\n", cfg.HTTP.Addr)

	// Every problem is reported, each with its position.
	_, err = config.Parse([]byte("plugins:\n  - name: Hello\n    path: plugins/hello.wasm\n    limits: {memroy: 1GiB}\n"), "bad.yaml", "testdata", getenv)
	fmt.Println(err)
	fmt.Println(errors.Is(err, config.ErrInvalid))
	// Output:
	// hello hi hello.wasm
	// 1024 pages, 5s per call, 2m0s for the client
	// [api.example.com] secret
	// HTTP address: ""
	// bad.yaml:2:11: plugins[0].name: invalid plugin name "Hello": use 1 to 64 lower-case letters, digits, "_" and "-", starting with a letter or digit
	// bad.yaml:4:14: plugins[0].limits: unknown key "memroy"; did you mean "memory"?
	// true
}

func ExampleParseSize() {
	for _, s := range []string{"64MiB", "5MB", "1024", "1.5GiB"} {
		n, err := config.ParseSize(s)
		fmt.Println(n, err)
	}
	// Output:
	// 67108864 <nil>
	// 5000000 <nil>
	// 1024 <nil>
	// 0 invalid size "1.5GiB": fractions are not supported; use a smaller unit (for example 1536MiB instead of 1.5GiB)
}

func ExampleSingle() {
	p := config.Single("/srv/wasm/Weather Tool.wasm")
	fmt.Println(p.Name, p.Path, p.Limits == config.DefaultLimits())
	// Output:
	// weather-tool /srv/wasm/Weather Tool.wasm true
}
