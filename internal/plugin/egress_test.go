package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNonPublic classifies addresses of every range, and their IPv6 forms.
func TestNonPublic(t *testing.T) {
	for addr, want := range map[string]string{
		// IPv4
		"0.0.0.0":         "unspecified",
		"0.1.2.3":         "unspecified",
		"10.0.0.1":        "private",
		"10.255.255.255":  "private",
		"100.64.0.1":      "shared (carrier-grade NAT)",
		"100.127.255.254": "shared (carrier-grade NAT)",
		"127.0.0.1":       "loopback",
		"127.1.2.3":       "loopback",
		"169.254.169.254": "link-local",
		"169.254.0.1":     "link-local",
		"172.16.0.1":      "private",
		"172.31.255.255":  "private",
		"192.0.0.8":       "special-purpose",
		"192.0.2.1":       "documentation",
		"192.88.99.1":     "reserved",
		"192.168.1.1":     "private",
		"198.18.0.1":      "benchmarking",
		"198.19.255.255":  "benchmarking",
		"198.51.100.7":    "documentation",
		"203.0.113.9":     "documentation",
		"224.0.0.1":       "multicast",
		"239.255.255.250": "multicast",
		"240.0.0.1":       "reserved",
		"255.255.255.255": "reserved",
		"1.1.1.1":         "",
		"8.8.8.8":         "",
		"9.255.255.255":   "",
		"11.0.0.0":        "",
		"100.63.255.255":  "",
		"100.128.0.0":     "",
		"126.255.255.255": "",
		"128.0.0.0":       "",
		"169.253.255.255": "",
		"172.15.255.255":  "",
		"172.32.0.0":      "",
		"192.167.255.255": "",
		"192.169.0.0":     "",
		"198.17.255.255":  "",
		"198.20.0.0":      "",
		"223.255.255.255": "",
		// IPv4-mapped IPv6 is IPv4
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:169.254.169.254": "link-local",
		"::ffff:10.1.2.3":        "private",
		"::ffff:0.0.0.0":         "unspecified",
		"::ffff:8.8.8.8":         "",
		// IPv6
		"::":                           "unspecified",
		"::1":                          "loopback",
		"::127.0.0.1":                  "reserved", // IPv4-compatible (deprecated)
		"::ffff:0:7f00:1":              "reserved", // IPv4-translated
		"100::1":                       "reserved", // discard-only
		"fc00::1":                      "private",
		"fd12:3456:789a::1":            "private",
		"fe80::1":                      "link-local",
		"fe80::1%eth0":                 "link-local",
		"febf::1":                      "link-local",
		"fec0::1":                      "private",
		"ff02::1":                      "multicast",
		"2001:db8::1":                  "documentation",
		"3fff::1":                      "documentation",
		"2001::1":                      "Teredo",
		"2001:2::1":                    "special-purpose",
		"2001:20::1":                   "special-purpose",
		"64:ff9b::7f00:1":              "loopback (127.0.0.1 in a NAT64 address)",
		"64:ff9b::a9fe:a9fe":           "link-local (169.254.169.254 in a NAT64 address)",
		"64:ff9b::808:808":             "",
		"64:ff9b:1::1":                 "private",
		"2002:7f00:1::1":               "loopback (127.0.0.1 in a 6to4 address)",
		"2002:a00:1::1":                "private (10.0.0.1 in a 6to4 address)",
		"2002:808:808::1":              "",
		"2606:4700:4700::1111":         "",
		"2001:4860:4860::8888":         "",
		"2a00:1450:4001:80b::200e":     "",
		"3ffe::1":                      "",
		"4000::1":                      "reserved",
		"e000::1":                      "reserved",
		"1fff:ffff:ffff:ffff::ffff":    "reserved",
		"2001:200::1":                  "",
		"2001:1ff:ffff:ffff::ffff:fff": "special-purpose",
	} {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := nonPublic(a); got != want {
			t.Errorf("nonPublic(%s) = %q, want %q", addr, got, want)
		}
	}
	if got := nonPublic(netip.Addr{}); got == "" {
		t.Error("the zero address is public")
	}
}

// FuzzNonPublic: an address judged public is a global unicast address that
// none of the standard library's predicates calls local, an IPv4 address
// and its IPv4-mapped form are judged alike, and judging never panics.
//
//	go test -run='^$' -fuzz='^FuzzNonPublic$' -fuzztime=10s ./internal/plugin
func FuzzNonPublic(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "8.8.8.8", "::1", "fe80::1", "64:ff9b::7f00:1", "2002:a00:1::1", "2606:4700::1"} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		kind := nonPublic(a)
		if kind == "" {
			u := a.Unmap()
			if !u.IsGlobalUnicast() || u.IsPrivate() || u.IsLoopback() || u.IsLinkLocalUnicast() ||
				u.IsMulticast() || u.IsUnspecified() || u.IsInterfaceLocalMulticast() {
				t.Errorf("%s judged public", a)
			}
			if u.Is4() && netip.MustParsePrefix("100.64.0.0/10").Contains(u) {
				t.Errorf("%s (shared) judged public", a)
			}
		}
		if a.Is4() {
			if mapped := netip.AddrFrom16(a.As16()); nonPublic(mapped) != kind {
				t.Errorf("%s is %q, its mapped form %s is %q", a, kind, mapped, nonPublic(mapped))
			}
		}
	})
}

// TestGrantedByName: only an exact grant of the host or the address.
func TestGrantedByName(t *testing.T) {
	grants := []string{"*", "*.example.org", "localhost", "10.0.0.5", "::1", "::ffff:192.168.0.9"}
	for _, c := range []struct {
		host, addr string
		want       bool
	}{
		{"localhost", "127.0.0.1", true},
		{"LOCALHOST", "127.0.0.1", false}, // hosts reach here in lower case
		{"intranet.example.org", "10.0.0.1", false},
		{"intranet.example.org", "10.0.0.5", true},
		{"printer", "10.0.0.5", true},
		{"10.0.0.5", "10.0.0.5", true},
		{"10.0.0.6", "10.0.0.6", false},
		{"::1", "::1", true},
		{"x", "::ffff:10.0.0.5", true},
		{"x", "192.168.0.9", true},
		{"x", "fe80::1%eth0", false},
		{"127.0.0.1", "127.0.0.1", false},
	} {
		if got := grantedByName(grants, c.host, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("grantedByName(%q, %s) = %v, want %v", c.host, c.addr, got, c.want)
		}
	}
	if grantedByName(nil, "localhost", netip.MustParseAddr("127.0.0.1")) {
		t.Error("no grant named localhost")
	}
	// "*" matches every host name; the dialer keeps it to public addresses.
	for _, host := range []string{"example.com", "localhost", "127.0.0.1", "::1", "a.b.c"} {
		if !hostAllowed([]string{"*"}, host) {
			t.Errorf("* does not match %q", host)
		}
	}
	if hostAllowed([]string{"*"}, "") {
		t.Error("* matches an empty host")
	}
}

// TestIsOwn: Hangar's listening addresses, on a specific and on an
// unspecified address.
func TestIsOwn(t *testing.T) {
	remove := ProtectAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001})
	removeWild := ProtectAddr(&net.TCPAddr{IP: net.IPv6unspecified, Port: 40002})
	for ap, want := range map[string]bool{
		"127.0.0.1:40001":          true,
		"127.0.0.2:40001":          true, // any loopback address: refuse rather than guess
		"[::ffff:127.0.0.1]:40001": true,
		"0.0.0.0:40001":            true, // connecting to 0.0.0.0 reaches the local host
		"[::1]:40001":              true,
		"127.0.0.1:40003":          false,
		"8.8.8.8:40001":            false,
		"10.0.0.1:40001":           false,
		"127.0.0.1:40002":          true,
		"[::1]:40002":              true,
		"0.0.0.0:40002":            true,
		"8.8.8.8:40002":            false,
	} {
		if got := isOwn(netip.MustParseAddrPort(ap)); got != want {
			t.Errorf("isOwn(%s) = %v, want %v", ap, got, want)
		}
	}
	// Every address of an interface is local.
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, ia := range addrs {
			if n, ok := ia.(*net.IPNet); ok {
				a, _ := netip.AddrFromSlice(n.IP)
				if !isOwn(netip.AddrPortFrom(a.Unmap(), 40002)) {
					t.Errorf("%s:40002 is not Hangar's own, under a listener on [::]:40002", a)
				}
			}
		}
	}
	remove()
	remove() // twice is harmless
	removeWild()
	if isOwn(netip.MustParseAddrPort("127.0.0.1:40001")) || isOwn(netip.MustParseAddrPort("127.0.0.1:40002")) {
		t.Error("still protected after remove")
	}
}

// TestDialerRules drives the dialer with a resolver and a connector of the
// test's own: which addresses are connected to, and what a refusal says.
func TestDialerRules(t *testing.T) {
	names := map[string][]string{
		"public.test":     {"93.184.215.14"},
		"rebind.test":     {"127.0.0.1"},
		"metadata.test":   {"169.254.169.254"},
		"mixed.test":      {"10.0.0.1", "93.184.215.14"},
		"localhost":       {"::1", "127.0.0.1"},
		"lan.example.org": {"192.168.1.10"},
	}
	var mu sync.Mutex
	var dialed []string
	setDialHooks(t, func(_ context.Context, _, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, s := range names[host] {
			out = append(out, netip.MustParseAddr(s))
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no such host %s", host)
		}
		return out, nil
	}, func(_ context.Context, _, address string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, address)
		mu.Unlock()
		c1, c2 := net.Pipe()
		c2.Close()
		return c1, nil
	})
	defer ProtectAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})()

	dial := func(grants []string, address string) (string, error) {
		mu.Lock()
		dialed = nil
		mu.Unlock()
		d := &dialer{plugin: "fetch", grants: grants}
		c, err := d.DialContext(context.Background(), "tcp", address)
		if c != nil {
			c.Close()
		}
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(dialed, ","), err
	}
	star := []string{"*"}
	for _, c := range []struct {
		grants  []string
		address string
		dialed  string
		refusal string // part of the error, "" for none
	}{
		{star, "public.test:443", "93.184.215.14:443", ""},
		{star, "93.184.215.14:80", "93.184.215.14:80", ""},
		{star, "rebind.test:80", "", `host "rebind.test" resolves to 127.0.0.1, a loopback address, which "*" and "*.domain" grants do not reach; to allow it, add "rebind.test" to grants.allowed_hosts of plugin fetch`},
		{star, "metadata.test:80", "", "a link-local address"},
		{star, "169.254.169.254:80", "", `host "169.254.169.254" is a link-local address`},
		{star, "[::ffff:169.254.169.254]:80", "", "link-local"},
		{star, "[fd00::1]:80", "", "private"},
		{star, "100.64.1.1:80", "", "carrier-grade NAT"},
		{star, "0.0.0.0:80", "", "unspecified"},
		{star, "mixed.test:443", "93.184.215.14:443", ""},
		{star, "localhost:9000", "", "loopback"},
		{[]string{"*.example.org"}, "lan.example.org:80", "", "private"},
		{[]string{"*.example.org", "lan.example.org"}, "lan.example.org:80", "192.168.1.10:80", ""},
		{[]string{"*", "192.168.1.10"}, "lan.example.org:80", "192.168.1.10:80", ""},
		{[]string{"localhost"}, "localhost:9000", "[::1]:9000", ""},
		{[]string{"localhost"}, "localhost:8080", "", `host "localhost" ([::1]:8080) is Hangar's own server, which no grant allows`},
		{[]string{"127.0.0.1"}, "127.0.0.1:8080", "", "Hangar's own server"},
		{[]string{"127.0.0.1"}, "127.0.0.1:8081", "127.0.0.1:8081", ""},
		{[]string{"public.test"}, "other.test:80", "", `host "other.test" is not in grants.allowed_hosts; to allow it, add "other.test"`},
		{nil, "public.test:80", "", "not in grants.allowed_hosts"},
	} {
		got, err := dial(c.grants, c.address)
		switch {
		case c.refusal == "" && err != nil:
			t.Errorf("%v %s: %v", c.grants, c.address, err)
		case c.refusal != "" && (!errors.Is(err, ErrHostDenied) || !strings.Contains(err.Error(), c.refusal)):
			t.Errorf("%v %s: err = %v, want ErrHostDenied with %q", c.grants, c.address, err, c.refusal)
		}
		if got != c.dialed {
			t.Errorf("%v %s: connected to %q, want %q", c.grants, c.address, got, c.dialed)
		}
	}
}

// TestDenialMapped: a refusal that http_request panics with, as wazero
// wraps it, becomes a clear ErrHostDenied error, and nothing else does.
func TestDenialMapped(t *testing.T) {
	p := &Plugin{name: "fetch"}
	denied := &hostDeniedError{plugin: "fetch", host: "api.example.com", why: notGranted}
	wazeroErr := fmt.Errorf("%w (recovered by wazero)\nwasm stack trace:\n\textism:host/env.http_request(i64,i64) i64", denied)
	err := p.hostDenied("call", wazeroErr)
	want := `plugin fetch: call: HTTP request denied: host "api.example.com" is not in grants.allowed_hosts; to allow it, add "api.example.com" to grants.allowed_hosts of plugin fetch`
	if !errors.Is(err, ErrHostDenied) || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if err := p.hostDenied("call", errors.New("wasm error: unreachable")); err != nil {
		t.Errorf("a trap mapped to %v", err)
	}
	// A message that only mentions a refusal is not one.
	if err := p.hostDenied("call", errors.New("invalid url: parse \"HTTP request denied\": bad")); err != nil {
		t.Errorf("a parse error mapped to %v", err)
	}
}

// TestLogLimiter: a burst, then the rate, and the drops counted and
// reported.
func TestLogLimiter(t *testing.T) {
	var rec recorder
	log := slog.New(&rec)
	l := newLogLimiter(log, 10, 5, 20*time.Millisecond)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.last = now
	allowed := 0
	for range 100 {
		if l.allow() {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("burst: %d lines allowed, want 5", allowed)
	}
	now = now.Add(time.Second) // 10 tokens, capped at the burst of 5
	for range 100 {
		if l.allow() {
			allowed++
		}
	}
	if allowed != 10 {
		t.Errorf("after a second: %d lines allowed in all, want 10", allowed)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rec.dropped() != 190 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := rec.dropped(); got != 190 {
		t.Errorf("dropped lines reported: %d, want 190", got)
	}
}

// recorder is a slog handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// dropped sums the counts of the "lines dropped" records.
func (r *recorder) dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, rec := range r.records {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "dropped" {
				n += a.Value.Int64()
			}
			return true
		})
	}
	return n
}

// TestDefaultClientUntouched: plugins send their requests with clients of
// their own; the process's default client keeps its defaults.
func TestDefaultClientUntouched(t *testing.T) {
	if c := http.DefaultClient; c.Transport != nil || c.CheckRedirect != nil {
		t.Errorf("http.DefaultClient was changed: Transport %T, CheckRedirect set: %v", c.Transport, c.CheckRedirect != nil)
	}
}

// TestTransportsCollected: a plugin's transport and a logger's limiter go
// when the plugin and the logger do.
func TestTransportsCollected(t *testing.T) {
	count := func() (int, int) {
		transports.Lock()
		limiters.Lock()
		defer transports.Unlock()
		defer limiters.Unlock()
		return len(transports.m), len(limiters.m)
	}
	t0, l0 := count()
	func() {
		for i := range 10 {
			p := &Plugin{name: fmt.Sprint("gc", i)}
			if transportFor(p) != transportFor(p) {
				t.Error("two transports for one plugin")
			}
			log := slog.New(slog.DiscardHandler)
			if newLogWriter(log, slog.LevelInfo, "stdout").limit != newLogWriter(log, slog.LevelWarn, "stderr").limit {
				t.Error("two limiters for one plugin's streams")
			}
		}
	}()
	if tn, ln := count(); tn < t0+10 || ln < l0+10 {
		t.Fatalf("transports %d, limiters %d after making 10 of each", tn, ln)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		tn, ln := count()
		if tn <= t0 && ln <= l0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("transports %d (from %d), limiters %d (from %d): not collected", tn, t0, ln, l0)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDenialToldToGuest: what a plugin is told of a refused request (the
// guest copy httpFailure makes) names the host and the grant, but not the
// address a name resolved to nor Hangar's own addresses, which would let a
// plugin with a wildcard grant map internal names; the log keeps them.
func TestDenialToldToGuest(t *testing.T) {
	addr := netip.MustParseAddrPort("10.1.2.3:8080")
	for _, e := range []hostDeniedError{
		{plugin: "p", host: "internal.example", addr: addr, kind: "private", why: notPublic},
		{plugin: "p", host: "internal.example", addr: addr, why: ownServer},
		{plugin: "p", host: "internal.example", addr: addr, kind: "10.0.0.0/8", why: ownDeployment},
	} {
		logged := e.Error()
		if !strings.Contains(logged, "10.1.2.3") {
			t.Errorf("the log's text does not name the address: %q", logged)
		}
		e.guest = true
		told := e.Error()
		if strings.Contains(told, "10.") || !strings.Contains(told, `host "internal.example"`) {
			t.Errorf("the plugin is told %q: want the host, and no address or range", told)
		}
	}
}
