package plugin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// pdkFetched is the answer of the pdkhttp test plugin's fetch tool.
type pdkFetched struct {
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
	ContentType string            `json:"content_type"`
	Error       string            `json:"error"`
	Denied      bool              `json:"denied"`
}

// pdkFetch calls the pdkhttp plugin's fetch tool with args, which must
// succeed as a call: the plugin answers failures itself.
func pdkFetch(t *testing.T, p *plugin.Plugin, args map[string]any) pdkFetched {
	t.Helper()
	b, _ := json.Marshal(args)
	got, isErr, err := callBounded(t, p, "fetch", string(b))
	if err != nil || isErr {
		t.Fatalf("fetch %v: %q, isError %v, %v", args, got, isErr, err)
	}
	var f pdkFetched
	if err := json.Unmarshal([]byte(got), &f); err != nil {
		t.Fatalf("fetch %v: %q: %v", args, got, err)
	}
	return f
}

// TestPDKHTTP: requests of Hangar's Go PDK (pdk.Fetch) carry their method,
// header fields and body; the response its status, header fields and
// body; and a refused or failed request is an error the plugin's code gets
// (naming the grant to add), not a trap, while the refusal is logged.
func TestPDKHTTP(t *testing.T) {
	var hangarHits atomic.Int32
	hangar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hangarHits.Add(1) }))
	defer hangar.Close()
	defer plugin.ProtectAddr(hangar.Listener.Addr())()

	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Add("X-Seen", "one")
			w.Header().Add("X-Seen", "two")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "%s %s %s %q", r.Method, r.URL.RawQuery, r.Header.Get("X-Api-Key"), body)
		case "/missing":
			http.NotFound(w, r)
		case "/to-hangar":
			http.Redirect(w, r, hangar.URL+"/mcp", http.StatusFound)
		case "/big": // with its query, which no error may repeat
			w.Write(make([]byte, 33<<20)) // more than hostileLimits.MemoryPages
		}
	}))
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()

	sibling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hangarHits.Add(1) }))
	defer sibling.Close()
	plugin.SetDeployment(t, []config.AddrRange{{Host: "127.0.0.1", FirstPort: uint16(port(sibling)), LastPort: uint16(port(sibling))}})

	var logs testutil.SyncBuffer
	p := load(t, testutil.BuildPlugin(t, "./internal/testplugins/pdkhttp"), plugin.Options{
		Name: "api", Limits: hostileLimits, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Grants: config.Grants{AllowedHosts: []string{"127.0.0.1"}},
	})

	got := pdkFetch(t, p, map[string]any{"method": "post", "url": srv.URL + "/echo?q=1",
		"headers": map[string]string{"X-Api-Key": "k"}, "body": `{"a":1}`})
	if got.Status != 201 || got.Body != `POST q=1 k "{\"a\":1}"` || got.Error != "" {
		t.Errorf("POST /echo: %+v", got)
	}
	if got.Headers["X-Seen"] != "one, two" || got.ContentType != "text/plain; charset=utf-8" {
		t.Errorf("response header fields: %v, Get(content-type) %q", got.Headers, got.ContentType)
	}
	if got := pdkFetch(t, p, map[string]any{"url": srv.URL + "/missing"}); got.Status != 404 || got.Error != "" {
		t.Errorf("GET /missing: %+v; want status 404 and no error", got)
	}

	for _, c := range []struct {
		url, want string
		denied    bool
	}{
		{strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/echo?token=secret",
			fmt.Sprintf("pdk: GET http://localhost:%d/echo: ", port(srv)) + `HTTP request denied: host "localhost" is not in grants.allowed_hosts; to allow it, add "localhost" to grants.allowed_hosts of plugin api`, true},
		{srv.URL + "/to-hangar", "is Hangar's own server, which no grant allows", true},
		{sibling.URL + "/mcp", `HTTP request denied: host "127.0.0.1" is an address of Hangar's deployment, which no grant allows`, true},
		{"http://" + deadAddr + "/?token=secret", "pdk: GET http://" + deadAddr + "/: dial tcp " + deadAddr + ": connect: connection refused", false},
		{srv.URL + "/big?token=secret", "pdk: GET " + srv.URL + "/big: the response body is larger than 33554432 bytes, what the plugin's memory (limits.memory) allows", false},
		{"/no/host", "pdk: GET /no/host: invalid url: it has no host; a request needs an absolute http:// or https:// URL", false},
	} {
		got := pdkFetch(t, p, map[string]any{"url": c.url})
		if got.Status != 0 || !strings.Contains(got.Error, c.want) || got.Denied != c.denied {
			t.Errorf("GET %s: %+v\nwant an error with %q, denied %v", c.url, got, c.want, c.denied)
		}
		if strings.Contains(got.Error, "secret") || strings.Contains(got.Error, "deployment.addresses") {
			t.Errorf("the error shows the URL's query or the deployment's configuration: %q", got.Error)
		}
	}
	got = pdkFetch(t, p, map[string]any{"url": srv.URL + "/echo", "headers": map[string]string{plugin.MarkerHeader: "x"}})
	if !got.Denied || !strings.Contains(got.Error, "a plugin may not set it") {
		t.Errorf("a request setting the marker header: %+v", got)
	}
	if n := hangarHits.Load(); n != 0 {
		t.Errorf("Hangar's servers were reached %d times", n)
	}
	l := logs.String()
	if !strings.Contains(l, `level=WARN msg="HTTP request denied: host \"localhost\" is not in grants.allowed_hosts`) {
		t.Errorf("the refusal is not logged at warn:\n%s", l)
	}
	if want := fmt.Sprintf("(127.0.0.1:%d in deployment.addresses)", port(sibling)); !strings.Contains(l, want) {
		t.Errorf("the log does not name the deployment's range %s:\n%s", want, l)
	}
	settled(t, p, "answered failures")
}
