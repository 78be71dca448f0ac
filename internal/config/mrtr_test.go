package config

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMRTRDefaults(t *testing.T) {
	cfg := mustParse(t, "plugins: []\n")
	if cfg.MRTR.StateKey != nil || cfg.MRTR.ParkTimeout != 10*time.Minute || cfg.MRTR.MaxParked != 1000 || cfg.MRTR.MaxParkedPerPrincipal != 8 || cfg.MRTR.Replica != "" {
		t.Errorf("defaults = %+v", cfg.MRTR)
	}
}

func TestMRTRStateKey(t *testing.T) {
	want := []byte("0123456789abcdef0123456789abcdef")
	for name, text := range map[string]string{
		"hex":              "3031323334353637383961626364656630313233343536373839616263646566",
		"base64":           "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"base64 unpadded":  "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY",
		"with white space": "  3031323334353637383961626364656630313233343536373839616263646566\n",
		"base64 url-safe":  "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY",
	} {
		cfg, err := Parse([]byte("mrtr:\n  state_key_env: KEY\n"), "test.yaml", "testdata", func(n string) (string, bool) { return text, n == "KEY" })
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(cfg.MRTR.StateKey, want) || cfg.MRTR.StateKeyFrom != "$KEY" {
			t.Errorf("%s: key %x from %s", name, cfg.MRTR.StateKey, cfg.MRTR.StateKeyFrom)
		}
	}
	// Raw bytes, from a file only.
	if key, err := parseStateKey([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"), true); err != nil || len(key) != 32 {
		t.Errorf("raw key: %x %v", key, err)
	}
}

func TestMRTRErrors(t *testing.T) {
	env := func(n string) (string, bool) {
		switch n {
		case "SHORT":
			return "abcd", true
		case "KEY":
			return "3031323334353637383961626364656630313233343536373839616263646566", true
		}
		return "", false
	}
	for _, tc := range []struct{ name, src, want string }{
		{"inline key", "mrtr:\n  state_key: abc\n", `test.yaml:2:3: mrtr: unknown key "state_key" (the key is never written in the configuration: put it in a file (state_key_file) or an environment variable (state_key_env))`},
		{"file and env", "mrtr:\n  state_key_file: ./state.key\n  state_key_env: KEY\n", "mrtr.state_key_env: give state_key_file or state_key_env, not both"},
		{"unset env", "mrtr:\n  state_key_env: NOPE\n", "mrtr.state_key_env: environment variable NOPE is not set"},
		{"short key", "mrtr:\n  state_key_env: SHORT\n", "mrtr.state_key_env: environment variable SHORT: not a state key: want 32 random bytes, written as 64 hexadecimal digits or in Base64"},
		{"missing key file", "mrtr:\n  state_key_file: ./nope.key\n", "mrtr.state_key_file:"},
		{"not a key file", "mrtr:\n  state_key_file: ./tokens.yaml\n", "not a state key"},
		{"replica", "mrtr:\n  replica: -x\n", `mrtr.replica: invalid replica name "-x"`},
		{"no {replica}", "mrtr:\n  peer_url: http://peer:8080/mcp\n", "has no {replica}"},
		{"not http", "mrtr:\n  peer_url: ftp://{replica}/mcp\n", "not an absolute http or https URL"},
		{"credentials", "mrtr:\n  peer_url: http://u:p@{replica}:8080/mcp\n", "carries credentials"},
		{"peer name", "mrtr:\n  peers: {\"a b\": http://x/mcp}\n", `invalid replica name "a b"`},
		{"peer URL", "mrtr:\n  peers: {a: /mcp}\n", "mrtr.peers.a: peer URL \"/mcp\": not an absolute http or https URL"},
		{"long park", "mrtr:\n  park_timeout: 48h\n", "mrtr.park_timeout: must be at most 24h0m0s"},
		{"zero park", "mrtr:\n  park_timeout: 0s\n", "mrtr.park_timeout: must be greater than 0"},
		{"no caps", "mrtr:\n  max_parked: 0\n", "mrtr.max_parked: must be between 1 and"},
	} {
		_, err := Parse([]byte(tc.src), "test.yaml", "testdata", env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestForwardTimeoutAllowed: a call_timeout longer than forward_timeout is
// refused only where retries are forwarded (TestErrors has the refusals).
func TestForwardTimeoutAllowed(t *testing.T) {
	const plugin = "plugins:\n  - {name: a, path: plugins/hello.wasm, limits: {call_timeout: 10m}}\n"
	for _, src := range []string{
		plugin, // no forwarding
		plugin + "mrtr:\n  forward_timeout: 1m\n",                                         // no forwarding: the timeout is unused
		plugin + "mrtr:\n  forward_timeout: 10m\n  peer_url: http://{replica}:8080/mcp\n", // equal
	} {
		if _, err := Parse([]byte(src), "test.yaml", "testdata", func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// TestTrustedProxies: addresses become ranges of one address; IPv4 in
// IPv6 is IPv4.
func TestTrustedProxies(t *testing.T) {
	cfg := mustParse(t, "http:\n  trusted_proxies: [10.0.0.1, 10.0.0.0/8, \"2001:db8::/32\", \"::ffff:192.0.2.1\"]\n")
	want := []string{"10.0.0.1/32", "10.0.0.0/8", "2001:db8::/32", "192.0.2.1/32"}
	if !slices.Equal(cfg.HTTP.TrustedProxies, want) {
		t.Errorf("trusted_proxies = %q, want %q", cfg.HTTP.TrustedProxies, want)
	}
}
