package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestErrors checks the exact messages, positions included, for every class
// of error. $DIR stands for the absolute testdata directory.
func TestErrors(t *testing.T) {
	const head = "plugins:\n  - name: a\n    path: plugins/hello.wasm\n" // lines 1-3
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		// Syntax and document shape.
		{"syntax with line", "plugins:\n  - name: a\n    path: [x\n", []string{
			"test.yaml:3: syntax error: did not find expected ',' or ']'"}},
		{"syntax, parser error", "plugins:\n  - name: a\n\n    path: {x\n", []string{
			"test.yaml:4: syntax error: did not find expected ',' or '}'"}},
		{"syntax, scanner error", "plugins:\n  - name: a\n    path: @x\n", []string{
			"test.yaml:3: syntax error: found character that cannot start any token"}},
		{"syntax, unknown anchor", "plugins:\n  - name: a\n    path: *wasm\n", []string{
			"test.yaml:3:11: syntax error: alias *wasm refers to no anchor &wasm defined before it"}},
		{"syntax on line 1", "a: b: c\n", []string{
			"test.yaml:1: syntax error: mapping values are not allowed in this context"}},
		{"control character", "plugins:\n  - name: \"a\x01\"\n", []string{
			"test.yaml:2:13: control character U+0001 is not allowed; write it as an escape in a double-quoted string"}},
		{"invalid utf-8", "plugins:\n  - name: é\xff\n", []string{
			"test.yaml:2:12: invalid UTF-8; a configuration file must be UTF-8 text"}},
		{"wasm", "\x00asm\x01\x00\x00\x00", []string{
			"test.yaml: this is a WebAssembly module, not a configuration file"}},
		{"two documents", "plugins: []\n---\nplugins: []\n", []string{
			"test.yaml:2:1: a configuration file holds one YAML document; remove the second document and its \"---\" separator"}},
		{"top level list", "- name: a\n", []string{
			"test.yaml:1:1: the top level must be a mapping with the keys http, metrics, tracing, deployment, mrtr, tasks and plugins, got a list"}},
		{"top level scalar", "hangar\n", []string{
			`test.yaml:1:1: the top level must be a mapping with the keys http, metrics, tracing, deployment, mrtr, tasks and plugins, got the string "hangar"`}},

		// Unknown keys.
		{"unknown top-level key with suggestion", "plugin: []\n", []string{
			`test.yaml:1:1: unknown key "plugin"; did you mean "plugins"?`}},
		{"unknown key without suggestion", "version: 2\n", []string{
			`test.yaml:1:1: unknown key "version"; known keys are http, metrics, tracing, deployment, mrtr, tasks, plugins`}},
		{"plugin key at top level", "name: a\n", []string{
			`test.yaml:1:1: unknown key "name" (plugin settings belong in an item of the plugins list)`}},
		{"http key at top level", "addr: :80\n", []string{
			`test.yaml:1:1: unknown key "addr" (it belongs under http)`}},
		{"trusted proxies", "http:\n  trusted_proxies: [lb.local, 10.0.0.1/8, 10.0.0.1, \"::ffff:10.0.0.1\", fe80::1%eth0]\n", []string{
			`test.yaml:2:21: http.trusted_proxies[0]: invalid proxy address "lb.local": write an IP address (10.0.0.5) or a CIDR range (10.0.0.0/8), not a host name`,
			`test.yaml:2:31: http.trusted_proxies[1]: invalid proxy address "10.0.0.1/8": the range has bits set past its length; write 10.0.0.0/8`,
			`test.yaml:2:53: http.trusted_proxies[3]: proxy address "::ffff:10.0.0.1" is already listed on line 2`,
			`test.yaml:2:72: http.trusted_proxies[4]: invalid proxy address "fe80::1%eth0": remove the zone (%eth0): a request's address carries none`}},
		// Forwarding: a forward must outlast the calls it may wait for.
		{"forward_timeout below a call_timeout", head + "    limits: {call_timeout: 5m}\nmrtr:\n  forward_timeout: 1m\n  peer_url: http://{replica}:8080/mcp\n", []string{
			`test.yaml:6:20: mrtr.forward_timeout: 1m0s is shorter than plugin "a"'s call_timeout (5m0s): a retry forwarded to the replica holding one of its calls would be cut before the call could end; set it above 5m0s`}},
		{"call_timeout above the default forward_timeout", head + "    limits: {call_timeout: 3m}\nmrtr:\n  peers: {r2: \"http://r2:8080/mcp\"}\n", []string{
			`test.yaml:4:28: plugins[0].limits.call_timeout: 3m0s is longer than mrtr.forward_timeout (2m0s, its default): a retry forwarded to the replica holding one of this plugin's calls would be cut before the call could end; set mrtr.forward_timeout above 3m0s, or shorten call_timeout`}},
		{"unknown limits key", head + "    limits:\n      memroy: 1MiB\n", []string{
			`test.yaml:5:7: plugins[0].limits: unknown key "memroy"; did you mean "memory"?`}},
		{"camelCase key", head + "    limits: {callTimeout: 5s}\n", []string{
			`test.yaml:4:14: plugins[0].limits: unknown key "callTimeout"; did you mean "call_timeout"?`}},
		{"limit at plugin level", head + "    memory: 1MiB\n", []string{
			`test.yaml:4:5: plugins[0]: unknown key "memory" (it belongs under limits)`}},
		{"grant at plugin level", head + "    env: {A: b}\n", []string{
			`test.yaml:4:5: plugins[0]: unknown key "env" (it belongs under grants)`}},
		{"unknown mount key", head + "    grants:\n      allowed_paths:\n        - host: data\n          readonly: true\n", []string{
			`test.yaml:7:11: plugins[0].grants.allowed_paths[0]: unknown key "readonly"; did you mean "read_only"?`}},
		{"merge key", head + "    limits: {<<: {memory: 1MiB}}\n", []string{
			`test.yaml:4:14: plugins[0].limits: YAML merge keys (<<) are not supported; repeat the keys, or use an alias (*name) for the whole value`}},

		// The tasks section.
		{"unknown tasks key", "tasks: {afetr: 1s}\n", []string{
			`test.yaml:1:9: tasks: unknown key "afetr"; did you mean "after"?`}},
		{"tasks after not a duration", "tasks: {after: 3}\n", []string{
			`test.yaml:1:16: tasks.after: expected a duration with a unit, such as "30s" or "10m", got the integer 3`}},
		{"tasks max_run too long", "tasks: {max_run: 25h}\n", []string{
			`test.yaml:1:18: tasks.max_run: must be at most 24h0m0s, got 25h0m0s`}},
		{"tasks max_tasks zero", "tasks: {max_tasks: 0}\n", []string{
			`test.yaml:1:20: tasks.max_tasks: must be between 1 and 1000000, got 0`}},
		{"tasks result past kept", "tasks: {max_result_bytes: 2MiB, max_kept_bytes: 1MiB}\n", []string{
			`test.yaml:1:8: tasks.max_result_bytes: must be at most max_kept_bytes (1MiB), got 2MiB`}},
		{"tasks kept per client past kept", "tasks: {max_kept_bytes: 1MiB, max_kept_bytes_per_client: 2MiB}\n", []string{
			`test.yaml:1:8: tasks.max_kept_bytes_per_client: must be between max_result_bytes (1MiB) and max_kept_bytes (1MiB), got 2MiB`}},
		{"tasks kept per client below a result", "tasks: {max_kept_bytes_per_client: 512KiB}\n", []string{
			`test.yaml:1:8: tasks.max_kept_bytes_per_client: must be between max_result_bytes (1MiB) and max_kept_bytes (64MiB), got 512KiB`}},
		{"tasks enabled not a bool", "tasks: {enabled: yes please}\n", []string{
			`test.yaml:1:18: tasks.enabled: expected a boolean (true or false), got the string "yes please"`}},

		{"plugin tasks unknown mode", head + "    tasks: {render: sometimes}\n", []string{
			`test.yaml:4:21: plugins[0].tasks.render: must be "auto" (a task once the call runs past tasks.after), "never", "always" or "required", got "sometimes"`}},

		// Duplicate keys.
		{"duplicate top-level key", "plugins: []\nhttp: {}\nplugins: []\n", []string{
			`test.yaml:3:1: duplicate key "plugins" (first on line 1)`}},
		{"duplicate plugin key", head + "    name: b\n", []string{
			`test.yaml:4:5: plugins[0]: duplicate key "name" (first on line 2)`}},
		{"duplicate unknown key", "x: 1\nx: 2\n", []string{
			`test.yaml:1:1: unknown key "x"; known keys are http, metrics, tracing, deployment, mrtr, tasks, plugins`,
			`test.yaml:2:1: duplicate key "x" (first on line 1)`}},
		{"duplicate config key", head + "    config:\n      k: 1\n      k: 2\n", []string{
			`test.yaml:6:7: plugins[0].config: duplicate key "k" (first on line 5)`}},
		{"duplicate env key", head + "    grants:\n      env: {A: x, A: y}\n", []string{
			`test.yaml:5:19: plugins[0].grants.env: duplicate key "A" (first on line 5)`}},

		// Wrong types.
		{"plugins is a mapping", "plugins:\n  a: {path: x}\n", []string{
			`test.yaml:2:3: plugins: expected a list of plugins, got a mapping; write each plugin as a list item starting with "- name: "`}},
		{"plugins is a string", "plugins: hello.wasm\n", []string{
			`test.yaml:1:10: plugins: expected a list of plugins, got the string "hello.wasm"`}},
		{"long string", head + "    limits: {max_instances: \"" + strings.Repeat("x", 100) + "\"}\n", []string{
			`test.yaml:4:29: plugins[0].limits.max_instances: expected an integer, got the string "` + strings.Repeat("x", 57) + `"...`}},
		{"http is a list", "http: [a]\n", []string{
			`test.yaml:1:7: http: expected a mapping, got a list`}},
		{"plugin item is a string", "plugins:\n  - hello.wasm\n", []string{
			`test.yaml:2:5: plugins[0]: expected a mapping, got the string "hello.wasm"`}},
		{"name is an integer", "plugins:\n  - name: 123\n    path: plugins/hello.wasm\n", []string{
			`test.yaml:2:11: plugins[0].name: expected a string, got the integer 123; quote the value to make it a string`}},
		{"name is a list", "plugins:\n  - name: [a]\n    path: plugins/hello.wasm\n", []string{
			`test.yaml:2:11: plugins[0].name: expected a string, got a list`}},
		{"memory is a boolean", head + "    limits: {memory: true}\n", []string{
			`test.yaml:4:22: plugins[0].limits.memory: expected a size such as "64MiB" or a number of bytes, got the boolean true`}},
		{"timeout is a number", head + "    limits:\n      call_timeout: 30\n", []string{
			`test.yaml:5:21: plugins[0].limits.call_timeout: expected a duration with a unit, such as "30s" or "10m", got the integer 30`}},
		{"max_instances is a string", head + "    limits:\n      max_instances: \"8\"\n", []string{
			`test.yaml:5:22: plugins[0].limits.max_instances: expected an integer, got the string "8"`}},
		{"max_instances is a float", head + "    limits:\n      max_instances: 1.5\n", []string{
			`test.yaml:5:22: plugins[0].limits.max_instances: expected an integer, got the number 1.5`}},
		{"legacy_sse is a string", "http:\n  legacy_sse: \"true\"\n", []string{
			`test.yaml:2:15: http.legacy_sse: expected a boolean (true or false), got the string "true"`}},
		{"read_only is yes", head + "    grants:\n      allowed_paths: [{host: data, read_only: yes}]\n", []string{
			`test.yaml:5:47: plugins[0].grants.allowed_paths[0].read_only: expected a boolean (true or false), got the string "yes"`}},
		{"allowed_hosts is a string", head + "    grants:\n      allowed_hosts: api.example.com\n", []string{
			`test.yaml:5:22: plugins[0].grants.allowed_hosts: expected a list of host names, got the string "api.example.com"; write ["api.example.com"] for a list of one`}},
		{"allowed_hosts item is a mapping", head + "    grants:\n      allowed_hosts: [{a: b}]\n", []string{
			`test.yaml:5:23: plugins[0].grants.allowed_hosts[0]: expected a string, got a mapping`}},
		{"config value nested", head + "    config:\n      a: [1, 2]\n      b: {c: d}\n      c:\n", []string{
			`test.yaml:5:10: plugins[0].config.a: expected a string, got a list; values cannot be nested`,
			`test.yaml:6:10: plugins[0].config.b: expected a string, got a mapping; values cannot be nested`,
			`test.yaml:7:9: plugins[0].config.c: value is null; write "" for an empty string`}},
		{"config is a list", head + "    config: [a]\n", []string{
			`test.yaml:4:13: plugins[0].config: expected a mapping of names to strings, got a list`}},
		{"mapping key is a list", "[a]: 1\n", []string{
			`test.yaml:1:1: a key must be a string, got a list`}},
		{"integer out of range", head + "    limits: {max_instances: 99999999999999999999}\n", []string{
			`test.yaml:4:29: plugins[0].limits.max_instances: expected an integer, got the number 99999999999999999999`}},
		{"custom tag", head + "    prefix: !secret x\n", []string{
			`test.yaml:4:13: plugins[0].prefix: expected a string, got a value tagged !secret; quote the value to make it a string`}},

		// Required keys and empty values.
		{"missing name and path", "plugins:\n  - prefix: x\n", []string{
			`test.yaml:2:5: plugins[0]: missing required key "name"`,
			`test.yaml:2:5: plugins[0]: missing required key "source" (or "path" for a file)`}},
		{"empty item", "plugins:\n  -\n  - name: a\n    path: plugins/hello.wasm\n", []string{
			`test.yaml:2:4: plugins[0]: empty list item; a plugin needs at least name and source (or path)`}},
		{"empty name", "plugins:\n  - name: \"\"\n    path: plugins/hello.wasm\n", []string{
			`test.yaml:2:11: plugins[0].name: must not be empty`}},
		{"null path", "plugins:\n  - name: a\n    path:\n", []string{
			`test.yaml:3:10: plugins[0].path: must not be empty`}},
		{"mount without host", head + "    grants:\n      allowed_paths:\n        - guest: /x\n", []string{
			`test.yaml:6:11: plugins[0].grants.allowed_paths[0]: missing required key "host"`}},
		{"empty host name in list", head + "    grants: {allowed_hosts: [\"\"]}\n", []string{
			`test.yaml:4:30: plugins[0].grants.allowed_hosts[0]: must not be empty`}},

		// Invalid values.
		{"bad name", "plugins:\n  - name: Hello World\n    path: plugins/hello.wasm\n", []string{
			`test.yaml:2:11: plugins[0].name: invalid plugin name "Hello World": use 1 to 64 lower-case letters, digits, "_" and "-", starting with a letter or digit`}},
		{"name too long", "plugins:\n  - name: " + strings.Repeat("a", 65) + "\n    path: plugins/hello.wasm\n", []string{
			`test.yaml:2:11: plugins[0].name: invalid plugin name "` + strings.Repeat("a", 65) + `": use 1 to 64 lower-case letters, digits, "_" and "-", starting with a letter or digit`}},
		{"bad prefix", head + "    prefix: 1x\n", []string{
			`test.yaml:4:13: plugins[0].prefix: invalid prefix "1x": use 1 to 32 letters, digits, "." and "-", starting with a letter`}},
		{"prefix with underscore", head + "    prefix: a_b\n", []string{
			`test.yaml:4:13: plugins[0].prefix: invalid prefix "a_b": use 1 to 32 letters, digits, "." and "-", starting with a letter`}},
		{"missing wasm", "plugins:\n  - name: a\n    path: nope.wasm\n", []string{
			`test.yaml:3:11: plugins[0].path: nope.wasm (resolved to $DIR/nope.wasm) does not exist`}},
		{"wasm is a directory", "plugins:\n  - name: a\n    path: $DIR/plugins\n", []string{
			`test.yaml:3:11: plugins[0].path: $DIR/plugins is a directory, not a WebAssembly file`}},
		{"tilde", "plugins:\n  - name: a\n    path: ~/a.wasm\n", []string{
			`test.yaml:3:11: plugins[0].path: "~/a.wasm": ~ is not expanded; use an absolute path or one relative to the configuration file`}},
		{"memory zero", head + "    limits: {memory: 0}\n", []string{
			`test.yaml:4:22: plugins[0].limits.memory: must be greater than 0`}},
		{"memory negative", head + "    limits: {memory: -1}\n", []string{
			`test.yaml:4:22: plugins[0].limits.memory: must not be negative`}},
		{"memory too large", head + "    limits: {memory: 4097MiB}\n", []string{
			`test.yaml:4:22: plugins[0].limits.memory: 4097MiB is more than the maximum of 4GiB, the most a 32-bit WebAssembly memory can hold`}},
		{"memory lower-case unit", head + "    limits: {memory: 64mb}\n", nil}, // valid: units ignore case
		{"memory ambiguous", head + "    limits: {memory: 64M}\n", []string{
			`test.yaml:4:22: plugins[0].limits.memory: invalid size "64M": unit "M" is ambiguous; write MiB (powers of 1024) or MB (powers of 1000)`}},
		{"max_output too large", head + "    limits: {max_output: 5GB}\n", []string{
			`test.yaml:4:26: plugins[0].limits.max_output: 5GB is more than the maximum of 4GiB`}},
		{"timeouts", head + "    limits:\n      call_timeout: 0s\n      host_timeout: 5 minutes\n", []string{
			`test.yaml:5:21: plugins[0].limits.call_timeout: must be greater than 0, got 0s`,
			`test.yaml:6:21: plugins[0].limits.host_timeout: invalid duration "5 minutes": use a number with a unit (ns, us, ms, s, m, h), such as 30s, 1m30s or 1.5h`}},
		{"max_instances range", head + "    limits: {max_instances: 1025}\n", []string{
			`test.yaml:4:29: plugins[0].limits.max_instances: must be between 0 (automatic) and 1024, got 1025`}},
		{"compile policy", head + "    compile: later\n", []string{
			`test.yaml:4:14: plugins[0].compile: must be "lazy" (compile on the first call) or "eager" (compile at start), got "later"`}},
		{"compile is a string", head + "    compile: true\n", []string{
			`test.yaml:4:14: plugins[0].compile: expected a string, got the boolean true; quote the value to make it a string`}},
		{"compile under limits", head + "    limits: {compile: eager}\n", []string{
			`test.yaml:4:14: plugins[0].limits: unknown key "compile" (it belongs to the plugin, beside limits)`}},
		{"http bounds", "http:\n  max_sessions: 0\n  max_connections: -1\n  write_timeout: 0s\n  drain_timeout: 10\n  session_timeout: 5m\n", []string{
			`test.yaml:2:17: http.max_sessions: must be between 1 and 1000000, got 0`,
			`test.yaml:3:20: http.max_connections: must be between 0 and 1000000, got -1`,
			`test.yaml:4:18: http.write_timeout: must be greater than 0, got 0s`,
			`test.yaml:5:18: http.drain_timeout: expected a duration with a unit, such as "30s" or "10m", got the integer 10`,
			`test.yaml:6:3: http: unknown key "session_timeout"; known keys are addr, allowed_origins, allowed_hosts, legacy_sse, session_idle_timeout, max_sessions, max_connections, max_listens, max_listens_per_client, trusted_proxies, read_header_timeout, read_timeout, write_timeout, idle_timeout, drain_timeout, tls, auth`}},
		{"listen bounds", "http:\n  max_listens: -1\n  max_listens_per_client: 0\n", []string{
			`test.yaml:2:16: http.max_listens: must be between 0 and 1000000, got -1`,
			`test.yaml:3:27: http.max_listens_per_client: must be between 1 and 1000000, got 0`}},
		{"addr", "http:\n  addr: localhost\n", []string{
			`test.yaml:2:9: http.addr: invalid address "localhost": want host:port, such as 127.0.0.1:8080 or :8080`}},
		{"addr port", "http:\n  addr: \"localhost:http\"\n", []string{
			`test.yaml:2:9: http.addr: invalid address "localhost:http": the port must be a number`}},
		{"addr port range", "http:\n  addr: :70000\n", []string{
			`test.yaml:2:9: http.addr: invalid address ":70000": the port must be between 1 and 65535`}},
		{"origins", "http:\n  allowed_origins:\n    - \"*\"\n    - http://a.test/\n    - a.test\n    - http://a.test/x\n    - http://*.a.test\n    - HTTP://B.test\n    - http://b.test:80\n", []string{
			`test.yaml:3:7: http.allowed_origins[0]: invalid origin "*": list the origins instead; "*" would let every web page use the server`,
			`test.yaml:4:7: http.allowed_origins[1]: invalid origin "http://a.test/": remove the trailing slash; an origin has no path`,
			`test.yaml:5:7: http.allowed_origins[2]: invalid origin "a.test": want scheme://host[:port], such as http://localhost:3000`,
			`test.yaml:6:7: http.allowed_origins[3]: invalid origin "http://a.test/x": an origin has no path, query or fragment; want scheme://host[:port]`,
			`test.yaml:7:7: http.allowed_origins[4]: invalid origin "http://*.a.test": wildcards are not supported; list each origin`,
			`test.yaml:9:7: http.allowed_origins[6]: origin "http://b.test:80" is already listed on line 8`}},
		{"http hosts", "http:\n  allowed_hosts: [\"https://a.test\", \"a.test/x\", \"*.a.test\", \"::1\", \"a.test:\", \"a..test\", A.test, a.test]\n", []string{
			`test.yaml:2:19: http.allowed_hosts[0]: invalid host "https://a.test": remove the scheme; list the host as in a Host header, such as mcp.example.com or mcp.example.com:8443`,
			`test.yaml:2:37: http.allowed_hosts[1]: invalid host "a.test/x": list the host only, such as mcp.example.com or mcp.example.com:8443`,
			`test.yaml:2:49: http.allowed_hosts[2]: invalid host "*.a.test": wildcards are not supported; list each host`,
			`test.yaml:2:61: http.allowed_hosts[3]: invalid host "::1": write an IPv6 address in brackets, as in a Host header: [::1]`,
			`test.yaml:2:68: http.allowed_hosts[4]: invalid host "a.test:": the port must be a number`,
			`test.yaml:2:79: http.allowed_hosts[5]: invalid host "a..test": has an empty label (two dots in a row, or a leading dot)`,
			`test.yaml:2:98: http.allowed_hosts[7]: host "a.test" is already listed on line 2`}},
		{"grant hosts", head + "    grants:\n      allowed_hosts:\n        - \"**\"\n        - https://api.test\n        - api.test:443\n        - api.test/v1\n        - \"*.test\"\n        - \"api.*.test\"\n        - \"*api.test\"\n        - api.test.\n        - -api.test\n        - ápi.test\n", []string{
			`test.yaml:6:11: plugins[0].grants.allowed_hosts[0]: invalid host "**": a wildcard is allowed only as a leading "*.", as in "*.example.com"`,
			`test.yaml:7:11: plugins[0].grants.allowed_hosts[1]: invalid host "https://api.test": remove the scheme; list the host name only, such as api.example.com`,
			`test.yaml:8:11: plugins[0].grants.allowed_hosts[2]: invalid host "api.test:443": list the host name without a port`,
			`test.yaml:9:11: plugins[0].grants.allowed_hosts[3]: invalid host "api.test/v1": list the host name only, such as api.example.com, without a path`,
			`test.yaml:10:11: plugins[0].grants.allowed_hosts[4]: invalid host "*.test": too broad; a pattern must name a domain with at least two labels, such as "*.example.com"`,
			`test.yaml:11:11: plugins[0].grants.allowed_hosts[5]: invalid host "api.*.test": a wildcard is allowed only as a leading "*.", as in "*.example.com"`,
			`test.yaml:12:11: plugins[0].grants.allowed_hosts[6]: invalid host "*api.test": a wildcard is allowed only as a leading "*.", as in "*.example.com"`,
			`test.yaml:13:11: plugins[0].grants.allowed_hosts[7]: invalid host "api.test.": remove the trailing dot`,
			`test.yaml:14:11: plugins[0].grants.allowed_hosts[8]: invalid host "-api.test": has a label starting or ending with "-"`,
			`test.yaml:15:11: plugins[0].grants.allowed_hosts[9]: invalid host "ápi.test": is not a valid host name: it contains 'á'`}},
		{"mounts", head + "    grants:\n      allowed_paths:\n        - host: missing\n        - host: plugins/hello.wasm\n        - {host: data, guest: data}\n        - {host: data, guest: /d}\n        - {host: ./data/, guest: /e}\n        - {host: notes, guest: /d/}\n        -\n", []string{
			`test.yaml:6:17: plugins[0].grants.allowed_paths[0].host: missing (resolved to $DIR/missing) does not exist`,
			`test.yaml:7:17: plugins[0].grants.allowed_paths[1].host: plugins/hello.wasm (resolved to $DIR/plugins/hello.wasm) is not a directory`,
			`test.yaml:8:31: plugins[0].grants.allowed_paths[2].guest: guest path "data" must be absolute, such as /data`,
			`test.yaml:10:18: plugins[0].grants.allowed_paths[4]: host directory $DIR/data is already mounted on line 9`,
			`test.yaml:11:32: plugins[0].grants.allowed_paths[5]: guest path /d is already mounted on line 9`,
			`test.yaml:12:10: plugins[0].grants.allowed_paths[6]: empty list item; a mount needs at least host`}},
		{"env", head + "    grants:\n      env:\n        A: ${HANGAR_TEST_UNSET}\n        1B: x\n        C: $HOME\n        D: ${X:-y}\n        E: \"${E\"\n        F-G: x\n        H: \"a\\0b\"\n        I: ~\n", []string{
			`test.yaml:6:12: plugins[0].grants.env.A: environment variable HANGAR_TEST_UNSET is not set`,
			`test.yaml:7:9: plugins[0].grants.env: invalid variable name "1B": use letters, digits and underscores, not starting with a digit`,
			`test.yaml:8:12: plugins[0].grants.env.C: "$HOME" is not expanded: write ${HOME} to use the variable, or $$HOME for a literal $`,
			`test.yaml:9:12: plugins[0].grants.env.D: ${X:-y}: defaults and other shell operators are not supported; only ${NAME}`,
			`test.yaml:10:12: plugins[0].grants.env.E: unterminated "${E"; write ${NAME}, or $$ for a literal $`,
			`test.yaml:11:9: plugins[0].grants.env: invalid variable name "F-G": use letters, digits and underscores, not starting with a digit`,
			`test.yaml:12:12: plugins[0].grants.env.H: must not contain a NUL character`,
			`test.yaml:13:12: plugins[0].grants.env.I: value is null; write "" for an empty string`}},
		{"config blank key", head + "    config: {\" \": x}\n", []string{
			`test.yaml:4:14: plugins[0].config: keys must not be blank`}},

		// Duplicate plugin names name both lines.
		{"duplicate plugin names", "plugins:\n  - name: a\n    path: plugins/hello.wasm\n  - name: b\n    path: plugins/hello.wasm\n  - {name: a, path: plugins/weather.wasm}\n  - name: a\n    path: plugins/hello.wasm\n", []string{
			`test.yaml:6:12: plugins[2].name: duplicate plugin name "a" (first used on line 2)`,
			`test.yaml:7:11: plugins[3].name: duplicate plugin name "a" (first used on line 2)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testdataDir(t)
			src := strings.ReplaceAll(tc.src, "$DIR", dir)
			cfg, err := parse(t, src)
			got := messages(err)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = strings.ReplaceAll(w, "$DIR", dir)
			}
			if len(want) == 0 {
				want = nil
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if err != nil {
				if cfg != nil {
					t.Error("non-nil config with an error")
				}
				if !errors.Is(err, ErrInvalid) {
					t.Error("error does not wrap ErrInvalid")
				}
			}
		})
	}
}

// TestErrorFiles checks that every problem in a file is reported, sorted by
// position, for YAML and JSON.
func TestErrorFiles(t *testing.T) {
	dir := testdataDir(t)
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"testdata/bad.yaml", []string{
			`testdata/bad.yaml:3:9: http.addr: invalid address "localhost": want host:port, such as 127.0.0.1:8080 or :8080`,
			`testdata/bad.yaml:4:3: http: unknown key "allowed_origin"; did you mean "allowed_origins"?`,
			`testdata/bad.yaml:9:15: plugins[0].limits.memory: must be greater than 0`,
			`testdata/bad.yaml:10:21: plugins[0].limits.call_timeout: must be greater than 0, got -1s`,
			`testdata/bad.yaml:11:22: plugins[0].limits.max_instances: must be between 0 (automatic) and 1024, got 2000`,
			`testdata/bad.yaml:14:17: plugins[0].grants.allowed_paths[0].host: ./missing (resolved to $DIR/missing) does not exist`,
			`testdata/bad.yaml:15:22: plugins[0].grants.allowed_paths[0].read_only: expected a boolean (true or false), got the string "yes"`,
			`testdata/bad.yaml:17:16: plugins[0].grants.env.TOKEN: environment variable HANGAR_TEST_UNSET is not set`,
			`testdata/bad.yaml:18:11: plugins[1].name: duplicate plugin name "hello" (first used on line 6)`,
			`testdata/bad.yaml:20:5: plugins[1]: unknown key "call_timeout" (it belongs under limits)`,
			`testdata/bad.yaml:21:5: plugins[2]: missing required key "name"`,
		}},
		{"testdata/bad.json", []string{
			`testdata/bad.json:6:53: plugins[0].limits.max_instances: expected an integer, got the string "8"`,
			`testdata/bad.json:7:35: plugins[0].grants.allowed_hosts: expected a list of host names, got the string "api.example.com"; write ["api.example.com"] for a list of one`,
			`testdata/bad.json:10:15: plugins[1].name: duplicate plugin name "hello" (first used on line 4)`,
			`testdata/bad.json:12:17: plugins[1].prefix: invalid prefix "1x": use 1 to 32 letters, digits, "." and "-", starting with a letter`,
			`testdata/bad.json:13:7: plugins[1]: duplicate key "prefix" (first on line 12)`,
			`testdata/bad.json:16:3: unknown key "extra"; known keys are http, metrics, tracing, deployment, mrtr, tasks, plugins`,
		}},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(data, tc.file, "testdata", testEnv)
		got := strings.Join(messages(err), "\n")
		want := strings.ReplaceAll(strings.Join(tc.want, "\n"), "$DIR", dir)
		if got != want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.file, got, want)
		}
	}
}

func TestErrorValues(t *testing.T) {
	_, err := parse(t, "plugins:\n  - name: A\n    path: plugins/hello.wasm\nextra: 1\n")
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%v does not wrap ErrInvalid", err)
	}
	var first *Error
	if !errors.As(err, &first) {
		t.Fatalf("%v is not an *Error", err)
	}
	if *first != (Error{File: "test.yaml", Line: 2, Column: 11, Msg: `plugins[0].name: invalid plugin name "A": use 1 to 64 lower-case letters, digits, "_" and "-", starting with a letter or digit`}) {
		t.Errorf("first = %#v", first)
	}
	all := err.(interface{ Unwrap() []error }).Unwrap()
	if len(all) != 2 {
		t.Fatalf("got %d errors, want 2", len(all))
	}
	if e := all[1].(*Error); e.Line != 4 || e.Column != 1 {
		t.Errorf("second error at %d:%d, want 4:1", e.Line, e.Column)
	}

	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "f", Line: 1, Column: 2, Msg: "m"}, "f:1:2: m"},
		{Error{File: "f", Line: 1, Msg: "m"}, "f:1: m"},
		{Error{File: "f", Msg: "m"}, "f: m"},
		{Error{Line: 3, Column: 4, Msg: "m"}, "3:4: m"},
		{Error{Msg: "m"}, "m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}
