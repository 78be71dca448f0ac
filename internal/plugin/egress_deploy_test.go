package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// fetchWith calls the egress plugin's fetch tool with headers.
func fetchWith(t *testing.T, p *plugin.Plugin, url string, headers map[string]string) (string, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"url": url, "headers": headers})
	got, isErr, err := callBounded(t, p, "fetch", string(args))
	if isErr {
		t.Fatalf("fetch %s: tool error %q", url, got)
	}
	return got, err
}

// TestDeploymentRefused: the addresses of deployment.addresses are
// refused at dial time whatever the grants: by address (a loopback one
// standing for every loopback address), by name, by the addresses a name
// resolves to, through a redirect; other granted addresses are reached.
func TestDeploymentRefused(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	server := func(name string) *httptest.Server {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits[name]++
			mu.Unlock()
			fmt.Fprint(w, name)
		}))
		t.Cleanup(ts.Close)
		return ts
	}
	sibling, byName, lb := server("sibling"), server("by-name"), server("lb")
	var other *httptest.Server
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/to-sibling" {
			http.Redirect(w, r, sibling.URL+"/mcp", http.StatusTemporaryRedirect)
			return
		}
		fmt.Fprint(w, "other")
	}))
	defer other.Close()

	plugin.SetDialHooks(t, func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		switch host {
		case "replica-2.test", "alias.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}, nil)
	plugin.SetDeployment(t, []config.AddrRange{
		{Host: "127.0.0.1", FirstPort: uint16(port(sibling)), LastPort: uint16(port(sibling))},
		{Host: "replica-2.test", FirstPort: uint16(port(byName)), LastPort: uint16(port(byName))},
		{Host: "*", FirstPort: uint16(port(lb)), LastPort: uint16(port(lb))},
	})
	p := egressPlugin(t, "granted", "127.0.0.1", "localhost", "replica-2.test", "alias.test")

	for _, url := range []string{
		sibling.URL + "/mcp",
		fmt.Sprintf("http://localhost:%d/mcp", port(sibling)),
		fmt.Sprintf("http://replica-2.test:%d/mcp", port(byName)),
		fmt.Sprintf("http://alias.test:%d/mcp", port(byName)),
		lb.URL + "/mcp",
		other.URL + "/to-sibling",
	} {
		got, err := fetchWith(t, p, url, nil)
		if !errors.Is(err, plugin.ErrHostDenied) || !strings.Contains(err.Error(), "is an address of Hangar's deployment") {
			t.Errorf("GET %s = %q, %v; want refused as the deployment's", url, got, err)
		}
	}
	if got, err := fetchWith(t, p, other.URL+"/", nil); err != nil || got != "200 other" {
		t.Errorf("GET %s (granted, not the deployment's) = %q, %v", other.URL, got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 0 {
		t.Errorf("the deployment's servers were reached: %v", hits)
	}
}

// TestMarkerHeader: every plugin request, redirects included, carries the
// marker, which a plugin can neither set nor spoof; a server behind
// RefuseMarked refuses such a request with 403, and serves the others.
func TestMarkerHeader(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	var ts *httptest.Server
	ts = httptest.NewServer(plugin.RefuseMarked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "served")
	})))
	defer ts.Close()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/final", http.StatusFound)
			return
		}
		mu.Lock()
		seen = append(seen, r.URL.Path+"="+strings.Join(r.Header.Values(plugin.MarkerHeader), ","))
		mu.Unlock()
		fmt.Fprint(w, "echo")
	}))
	defer echo.Close()
	p := egressPlugin(t, "marked", "127.0.0.1")

	if got, err := fetchWith(t, p, echo.URL+"/redirect", nil); err != nil || got != "200 echo" {
		t.Fatalf("GET through a redirect: %q, %v", got, err)
	}
	mu.Lock()
	if strings.Join(seen, " ") != "/final=1" {
		t.Errorf("the redirected request's marker: %q, want /final=1", seen)
	}
	mu.Unlock()

	got, err := fetchWith(t, p, ts.URL+"/mcp", nil)
	if err != nil || !strings.HasPrefix(got, "403 Forbidden: this request was made by a Hangar plugin") {
		t.Errorf("a plugin's request to a Hangar: %q, %v; want 403", got, err)
	}

	for _, name := range []string{plugin.MarkerHeader, "hangar-plugin-request", "HANGAR-PLUGIN-REQUEST"} {
		got, err := fetchWith(t, p, echo.URL+"/", map[string]string{name: ""})
		if !errors.Is(err, plugin.ErrHostDenied) || !strings.Contains(err.Error(), "a plugin may not set it") {
			t.Errorf("a plugin setting %s: %q, %v; want refused", name, got, err)
		}
	}

	req, _ := http.NewRequest("GET", ts.URL+"/mcp", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a request without the marker: %v %v", resp, err)
	}
	resp.Body.Close()
	req.Header.Set(plugin.MarkerHeader, "anything")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request with the marker: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
}
