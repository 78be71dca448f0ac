package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MRTR configures the multi round-trip requests of MCP 2026-07-28: a
// plugin's call that asks its client for input is parked until the
// client's retry brings the answers, which its requestState leads back
// to it, on this replica or, forwarded, on another. See the package
// documentation for what each key means.
type MRTR struct {
	// Replica names this server in the states it issues (and starts its
	// session IDs); the --replica flag overrides it. "" for a server alone.
	Replica string
	// StateKey seals the states: StateKeySize bytes, the same on every
	// replica, read from state_key_file or state_key_env. Nil: a random
	// key for this process.
	StateKey []byte
	// StateKeyFrom says where StateKey came from (a file, or "$NAME"),
	// for logs.
	StateKeyFrom string
	// PreviousStateKeys open states too (they never seal), for rotating
	// the key without failing retries in flight.
	PreviousStateKeys [][]byte
	// ParkTimeout bounds how long a parked call waits for its retry.
	ParkTimeout time.Duration
	// MaxParked and MaxParkedPerPrincipal cap the parked calls, on this
	// server and per authenticated caller.
	MaxParked, MaxParkedPerPrincipal int
	// PeerURL is the URL of a replica's MCP endpoint with {replica} for
	// its name; Peers maps replica names to those URLs, and takes
	// precedence. Neither: a retry held by another replica is told to
	// start again.
	PeerURL string
	Peers   map[string]string
	// ForwardTimeout bounds a retry forwarded to the replica holding its
	// call, the answer included.
	ForwardTimeout time.Duration
}

// Defaults and bounds of the mrtr section.
const (
	StateKeySize                 = 32 // AES-256
	DefaultParkTimeout           = 10 * time.Minute
	DefaultMaxParked             = 1000
	DefaultMaxParkedPerPrincipal = 8
	DefaultForwardTimeout        = 2 * time.Minute
	maxParkTimeout               = 24 * time.Hour
)

// DefaultMRTR returns the mrtr section's defaults.
func DefaultMRTR() MRTR {
	return MRTR{ParkTimeout: DefaultParkTimeout, MaxParked: DefaultMaxParked, MaxParkedPerPrincipal: DefaultMaxParkedPerPrincipal, ForwardTimeout: DefaultForwardTimeout}
}

// ReplicaRE is the syntax of a replica name: one DNS label or IPv4
// address, which a URL can carry.
var ReplicaRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

var (
	mrtrKeys  = []string{"replica", "state_key_file", "state_key_env", "previous_state_key_files", "park_timeout", "max_parked", "max_parked_per_principal", "peer_url", "peers", "forward_timeout"}
	mrtrHints = map[string]string{
		"state_key": "the key is never written in the configuration: put it in a file (state_key_file) or an environment variable (state_key_env)",
	}
)

func (d *decoder) mrtr(n *yaml.Node, p string) MRTR {
	m := DefaultMRTR()
	f := d.mapping(n, p, mrtrKeys, mrtrHints)
	if e, ok := f["replica"]; ok {
		if s, ok := d.str(e.val, join(p, "replica")); ok && s != "" {
			if !ReplicaRE.MatchString(s) {
				d.errorf(resolve(e.val), join(p, "replica"), "invalid replica name %q: use 1 to 63 letters, digits, \".\", \"_\" and \"-\", starting with a letter or digit", s)
			} else {
				m.Replica = s
			}
		}
	}
	_, file := f["state_key_file"]
	_, env := f["state_key_env"]
	if file && env {
		d.errorf(resolve(f["state_key_env"].key), join(p, "state_key_env"), "give state_key_file or state_key_env, not both")
	}
	if e, ok := f["state_key_file"]; ok {
		m.StateKey, m.StateKeyFrom = d.keyFile(e.val, join(p, "state_key_file"))
	}
	if e, ok := f["state_key_env"]; ok {
		pp := join(p, "state_key_env")
		v := resolve(e.val)
		if name, ok := d.str(v, pp); ok {
			switch val, set := d.getenv(name); {
			case !envNameRe.MatchString(name):
				d.errorf(v, pp, "invalid variable name %q: use letters, digits and underscores, not starting with a digit", name)
			case !set:
				d.errorf(v, pp, "environment variable %s is not set", name)
			default:
				if key, err := parseStateKey([]byte(val), false); err != nil {
					d.errorf(v, pp, "environment variable %s: %v", name, err)
				} else {
					m.StateKey, m.StateKeyFrom = key, "$"+name
				}
			}
		}
	}
	if e, ok := f["previous_state_key_files"]; ok {
		items, _ := d.seq(e.val, join(p, "previous_state_key_files"), "a list of files")
		for i, it := range items {
			if key, _ := d.keyFile(it, fmt.Sprintf("%s[%d]", join(p, "previous_state_key_files"), i)); key != nil {
				m.PreviousStateKeys = append(m.PreviousStateKeys, key)
			}
		}
	}
	if e, ok := f["park_timeout"]; ok {
		if v, ok := d.duration(e.val, join(p, "park_timeout")); ok {
			if v > maxParkTimeout {
				d.errorf(resolve(e.val), join(p, "park_timeout"), "must be at most %s, got %s", maxParkTimeout, v)
			} else {
				m.ParkTimeout = v
			}
		}
	}
	for _, c := range []struct {
		key string
		v   *int
	}{{"max_parked", &m.MaxParked}, {"max_parked_per_principal", &m.MaxParkedPerPrincipal}} {
		if e, ok := f[c.key]; ok {
			if v, ok := d.count(e.val, join(p, c.key), 1); ok {
				*c.v = v
			}
		}
	}
	if e, ok := f["forward_timeout"]; ok {
		if v, ok := d.duration(e.val, join(p, "forward_timeout")); ok {
			if v > maxParkTimeout {
				d.errorf(resolve(e.val), join(p, "forward_timeout"), "must be at most %s, got %s", maxParkTimeout, v)
			} else {
				m.ForwardTimeout, d.forwardTimeoutAt = v, e.val
			}
		}
	}
	if e, ok := f["peer_url"]; ok {
		pp := join(p, "peer_url")
		if s, ok := d.str(e.val, pp); ok && s != "" {
			if !strings.Contains(s, "{replica}") {
				d.errorf(resolve(e.val), pp, "peer URL %q has no {replica}: write where a replica named NAME serves MCP with {replica} for NAME, such as http://{replica}:8080/mcp, or list the peers", s)
			} else if problem := checkPeerURL(strings.ReplaceAll(s, "{replica}", "replica")); problem != "" {
				d.errorf(resolve(e.val), pp, "peer URL %q: %s", s, problem)
			} else {
				m.PeerURL = s
			}
		}
	}
	if e, ok := f["peers"]; ok {
		pp := join(p, "peers")
		names, vals, nodes := d.stringMap(e.val, pp)
		for _, name := range names {
			switch {
			case !ReplicaRE.MatchString(name):
				d.errorf(nodes[name].key, pp, "invalid replica name %q: use 1 to 63 letters, digits, \".\", \"_\" and \"-\", starting with a letter or digit", name)
			default:
				if problem := checkPeerURL(vals[name]); problem != "" {
					d.errorf(nodes[name].val, join(pp, name), "peer URL %q: %s", vals[name], problem)
					continue
				}
				if m.Peers == nil {
					m.Peers = map[string]string{}
				}
				m.Peers[name] = vals[name]
			}
		}
	}
	return m
}

// keyFile reads a state key from the file at n.
func (d *decoder) keyFile(n *yaml.Node, p string) ([]byte, string) {
	path, ok := d.existingFile(n, p)
	if !ok {
		return nil, ""
	}
	data, err := readFile(path)
	if err == nil {
		var key []byte
		if key, err = parseStateKey(data, true); err == nil {
			return key, path
		}
	}
	d.errorf(resolve(n), p, "%s: %v", path, err)
	return nil, ""
}

// parseStateKey reads a state key: 64 hexadecimal digits, or the Base64
// (standard or URL-safe, padded or not) of 32 bytes, white space around
// it ignored; from a file, also exactly 32 bytes as they are.
func parseStateKey(data []byte, raw bool) ([]byte, error) {
	if raw && len(data) == StateKeySize && !printable(data) {
		return bytes.Clone(data), nil
	}
	s := strings.TrimSpace(string(data))
	if b, err := hex.DecodeString(s); err == nil && len(b) == StateKeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == StateKeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("not a state key: want %d random bytes, written as 64 hexadecimal digits or in Base64 (openssl rand -hex 32 makes one)", StateKeySize)
}

func printable(b []byte) bool {
	return !slices.ContainsFunc(b, func(c byte) bool { return c < 0x20 || c > 0x7e })
}

// checkPeerURL is the problem with a peer's URL, or "".
func checkPeerURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err.Error()
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "not an absolute http or https URL"
	case u.User != nil:
		return "carries credentials: a forwarded request carries the client's own"
	}
	return ""
}
