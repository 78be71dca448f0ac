package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func egressPlugin(t *testing.T, name string, hosts ...string) *plugin.Plugin {
	return load(t, testutil.BuildPlugin(t, "./internal/testplugins/egress"), plugin.Options{
		Name: name, Limits: hostileLimits, Logger: quiet(),
		Grants: config.Grants{AllowedHosts: hosts},
	})
}

// fetch calls the egress plugin's fetch tool.
func fetch(t *testing.T, p *plugin.Plugin, method, url, body string) (string, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"url": url, "method": method, "body": body,
		"headers": map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}})
	got, isErr, err := callBounded(t, p, "fetch", string(args))
	if isErr {
		t.Fatalf("fetch %s: tool error %q", url, got)
	}
	return got, err
}

func port(ts *httptest.Server) int { return ts.Listener.Addr().(*net.TCPAddr).Port }

// TestEgressGrants: "*" reaches public addresses only; a loopback address
// only through a grant that names it; Hangar's own server never, even
// through a granted "localhost", and redirects are checked the same way.
// Public names are simulated: the test resolves them to public addresses
// and connects those to its servers on 127.0.0.1.
func TestEgressGrants(t *testing.T) {
	var hangarHits atomic.Int32
	hangar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hangarHits.Add(1)
		fmt.Fprint(w, "hangar")
	}))
	defer hangar.Close()
	defer plugin.ProtectAddr(hangar.Listener.Addr())()

	var other *httptest.Server
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/to-hangar":
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/mcp", port(hangar)), http.StatusTemporaryRedirect)
		default:
			fmt.Fprintf(w, "other %s", r.Method)
		}
	}))
	defer other.Close()
	otherPort := port(other)

	const publicIP = "93.184.215.14"
	plugin.SetDialHooks(t, func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		switch host {
		case "public.test":
			return []netip.Addr{netip.MustParseAddr(publicIP)}, nil
		case "rebind.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}, func(ctx context.Context, network, address string) (net.Conn, error) {
		if ap := netip.MustParseAddrPort(address); ap.Addr().String() == publicIP {
			address = fmt.Sprintf("127.0.0.1:%d", ap.Port())
		}
		return (&net.Dialer{}).DialContext(ctx, network, address)
	})

	star := egressPlugin(t, "web", "*")
	local := egressPlugin(t, "local", "localhost")
	named := egressPlugin(t, "named", "*", "127.0.0.1")

	ok := func(p *plugin.Plugin, method, url, want string) {
		t.Helper()
		if got, err := fetch(t, p, method, url, ""); err != nil || got != want {
			t.Errorf("%s %s %s = %q, %v; want %q", p.Name(), method, url, got, err, want)
		}
	}
	denied := func(p *plugin.Plugin, method, url, want string) {
		t.Helper()
		got, err := fetch(t, p, method, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if !errors.Is(err, plugin.ErrHostDenied) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %s %s = %q, %v; want ErrHostDenied with %q", p.Name(), method, url, got, err, want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "plugin "+p.Name()+": call: HTTP request denied: ") {
			t.Errorf("error %q does not start with the plugin and the refusal", err)
		}
	}

	// "*": public names and addresses, nothing local.
	ok(star, "GET", fmt.Sprintf("http://public.test:%d/", otherPort), "200 other GET")
	ok(star, "GET", fmt.Sprintf("http://%s:%d/", publicIP, otherPort), "200 other GET")
	denied(star, "GET", fmt.Sprintf("http://127.0.0.1:%d/", otherPort),
		`host "127.0.0.1" is a loopback address, which "*" and "*.domain" grants do not reach; to allow it, add "127.0.0.1" to grants.allowed_hosts of plugin web`)
	denied(star, "GET", fmt.Sprintf("http://localhost:%d/", otherPort), `host "localhost" resolves to`)
	denied(star, "GET", fmt.Sprintf("http://rebind.test:%d/", otherPort), `host "rebind.test" resolves to 127.0.0.1, a loopback address`)
	denied(star, "GET", "http://169.254.169.254/latest/meta-data/", "link-local")
	denied(star, "GET", "http://[::ffff:127.0.0.1]:1/", "loopback")
	// A redirect from a public host to a loopback address.
	denied(star, "GET", fmt.Sprintf("http://public.test:%d/to-loopback", otherPort), `host "127.0.0.1" is a loopback address`)

	// A loopback address granted by name; Hangar's port never.
	ok(named, "GET", fmt.Sprintf("http://127.0.0.1:%d/", otherPort), "200 other GET")
	denied(named, "POST", fmt.Sprintf("http://127.0.0.1:%d/mcp", port(hangar)), "is Hangar's own server, which no grant allows")

	// "localhost": other local servers, not Hangar, not even by a redirect.
	ok(local, "POST", fmt.Sprintf("http://localhost:%d/", otherPort), "200 other POST")
	denied(local, "POST", fmt.Sprintf("http://localhost:%d/mcp", port(hangar)), `host "localhost" (`)
	denied(local, "GET", fmt.Sprintf("http://localhost:%d/to-hangar", otherPort), "Hangar's own server")
	denied(local, "GET", fmt.Sprintf("http://127.0.0.1:%d/", otherPort), `host "127.0.0.1" is not in grants.allowed_hosts; to allow it, add "127.0.0.1" to grants.allowed_hosts of plugin local`)

	if n := hangarHits.Load(); n != 0 {
		t.Errorf("Hangar's server was reached %d times", n)
	}
	for _, p := range []*plugin.Plugin{star, local, named} {
		settled(t, p, "refused requests")
	}
}

// TestEgressOwnConnections: a plugin never sends a request on a connection
// that Hangar or another plugin opened.
func TestEgressOwnConnections(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // remote address -> who used it
	clash := ""
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := r.URL.Query().Get("who")
		mu.Lock()
		if prev, ok := seen[r.RemoteAddr]; ok && prev != who {
			clash += fmt.Sprintf("%s used %s's connection; ", who, prev)
		}
		seen[r.RemoteAddr] = who
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer ts.Close()

	hangarGet := func() {
		resp, err := http.Get(ts.URL + "/?who=hangar")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	a := egressPlugin(t, "a", "127.0.0.1")
	b := egressPlugin(t, "b", "127.0.0.1")
	for range 3 {
		hangarGet() // leaves an idle connection in http.DefaultTransport
		for _, p := range []*plugin.Plugin{a, b} {
			if got, err := fetch(t, p, "GET", ts.URL+"/?who="+p.Name(), ""); err != nil || got != "200 ok" {
				t.Fatalf("%s: %q, %v", p.Name(), got, err)
			}
		}
	}
	hangarGet()
	mu.Lock()
	defer mu.Unlock()
	if clash != "" {
		t.Error(clash)
	}
	if len(seen) < 3 {
		t.Errorf("connections: %v; want at least one for each of hangar, a and b", seen)
	}
}

// TestLogFlood: a plugin that floods stdout and stderr costs a bounded
// number of log records, the call still succeeds, and every dropped line
// is counted.
func TestLogFlood(t *testing.T) {
	rec := &countingHandler{}
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/egress"), plugin.Options{
		Name: "flood", Limits: hostileLimits, Logger: slog.New(rec),
	})
	const lines = 20000 // to each stream, 100 bytes each: 4 MB in all
	start := time.Now()
	got, isErr, err := callBounded(t, p, "flood", fmt.Sprintf(`{"lines":%d}`, lines))
	elapsed := time.Since(start)
	if err != nil || isErr || got != "flooded" {
		t.Fatalf("flood = %q, %v, %v", got, isErr, err)
	}
	// At most the burst (500) and the rate (100 a second) over the call,
	// with a second of slack for the clock.
	logged, _, bytes := rec.counts()
	if limit := 500 + 100*int64(elapsed.Seconds()+1); logged > limit {
		t.Errorf("%d lines logged in %v, more than %d", logged, elapsed, limit)
	}
	t.Logf("%d lines (%d bytes) logged of %d written in %v", logged, bytes, 2*lines, elapsed.Round(time.Millisecond))
	deadline := time.Now().Add(15 * time.Second)
	for {
		logged, dropped, _ := rec.counts()
		if logged+dropped == 2*lines {
			if dropped == 0 {
				t.Error("nothing was dropped")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lines logged and %d reported dropped, want %d in all", logged, dropped, 2*lines)
		}
		time.Sleep(20 * time.Millisecond)
	}
	settled(t, p, "a flood")
}

// countingHandler counts the plugin's output lines and the reported drops.
type countingHandler struct {
	mu                      sync.Mutex
	logged, dropped, nbytes int64
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	stream := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "stream":
			stream = true
		case "dropped":
			h.dropped += a.Value.Int64()
		}
		return true
	})
	if stream {
		h.logged++
		h.nbytes += int64(len(r.Message))
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) counts() (logged, dropped, nbytes int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logged, h.dropped, h.nbytes
}
