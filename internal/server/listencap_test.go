package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server"
)

// listenFrom opens a subscriptions/listen from the local address from
// (127.0.0.x) and returns its HTTP status and, when it is refused, its
// body; an accepted stream stays open until the test ends or end is
// called.
func (c *modern) listenFrom(from string, id int) (status int, body string, s *stream) {
	c.t.Helper()
	return c.listenVia(from, "", id)
}

// listenVia is listenFrom with an X-Forwarded-For header, unless xff is "".
func (c *modern) listenVia(from, xff string, id int) (status int, body string, s *stream) {
	c.t.Helper()
	req := c.request(id, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(cancel)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{DialContext: d.DialContext}
	c.t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req.WithContext(ctx))
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		// The acknowledgment: the stream is open and counted.
		buf := make([]byte, 1)
		if _, err := resp.Body.Read(buf); err != nil {
			c.t.Fatalf("listen from %s: %v", from, err)
		}
		return resp.StatusCode, "", &stream{resp, cancel}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Connection") != "close" && !resp.Close {
		c.t.Errorf("a refused listen's connection is kept open")
	}
	return resp.StatusCode, string(b), nil
}

// stream is an open listen.
type stream struct {
	resp   *http.Response
	cancel context.CancelFunc
}

func (s *stream) end() { s.cancel(); s.resp.Body.Close() }

// rest reads the stream to its end (10 s at most).
func (s *stream) rest() string {
	t := time.AfterFunc(10*time.Second, s.cancel)
	defer t.Stop()
	b, _ := io.ReadAll(s.resp.Body)
	return string(b)
}

// Listen streams are bounded per client and in all (issue 24, finding 4):
// without authentication a client is the address its requests come from;
// a refused listen says which limit it met and what to do, and a stream
// that ends frees its place.
func TestListenCaps(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	c := newModern(t, serveHTTP(t, s, &server.HTTPOptions{MaxListens: 3, MaxListensPerClient: 2}))
	var ends []*stream
	for i := range 2 {
		st, body, end := c.listenFrom("127.0.0.1", i+1)
		if st != http.StatusOK {
			t.Fatalf("listen %d from 127.0.0.1: %d %s", i+1, st, body)
		}
		ends = append(ends, end)
	}
	st, body, _ := c.listenFrom("127.0.0.1", 3)
	if st != http.StatusTooManyRequests || !strings.Contains(body, "-32011") || !strings.Contains(body, "max_listens_per_client") || !strings.Contains(body, "127.0.0.1") {
		t.Errorf("a third listen from 127.0.0.1: %d %s; want 429, -32011 naming the limit per client", st, body)
	} else {
		var msg struct{ Error struct{ Message string } }
		json.Unmarshal([]byte(body), &msg)
		t.Logf("refused: %s", msg.Error.Message)
	}
	if st, body, _ := c.listenFrom("127.0.0.2", 4); st != http.StatusOK {
		t.Errorf("a listen from another address, 127.0.0.2: %d %s; want it served", st, body)
	}
	// At the cap in all, a client holding none takes the place of the
	// oldest stream of the client holding the most, which ends with its
	// result.
	if st, body, _ := c.listenFrom("127.0.0.3", 5); st != http.StatusOK {
		t.Errorf("a listen from 127.0.0.3 at the cap in all, 127.0.0.1 holding 2: %d %s; want it served", st, body)
	}
	if !strings.Contains(ends[0].rest(), `"resultType":"complete"`) {
		t.Errorf("127.0.0.1's oldest stream did not end with its result")
	}
	st, body, _ = c.listenFrom("127.0.0.4", 6)
	if st != http.StatusServiceUnavailable || !strings.Contains(body, "-32011") || !strings.Contains(body, "http.max_listens") {
		t.Errorf("a listen at the cap in all, every client holding one: %d %s; want 503, -32011 naming the limit in all", st, body)
	}
	// A stream that ends frees its place.
	ends[1].end()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, body, _ = c.listenFrom("127.0.0.4", 7)
		if st == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st != http.StatusOK {
		t.Errorf("a listen once a stream ended: %d %s", st, body)
	}
}

// At mrtr.max_parked, an anonymous client (an address) holding every
// place does not lock another out, on both paths (issue 24, finding 1).
func TestAnonymousParkedFair(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) {
			s := newServer(t, &server.Options{DisableFastPath: !fast, MaxParked: 1}, server.Mount{Plugin: mrtrPlugin(t)})
			url := serveHTTP(t, s, nil)
			from := func(ip string) *modern {
				c := newModern(t, url)
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
				c.hc.Transport = &http.Transport{DialContext: d.DialContext}
				return c
			}
			a, b := from("127.0.0.1"), from("127.0.0.2")
			if r := a.post(1, "tools/call", askParams(nil, nil)).result(); r["resultType"] != "input_required" {
				t.Fatalf("the first client's call: %v", r)
			}
			if r := a.post(2, "tools/call", askParams(nil, nil)); r.errorCode() != -32010 {
				t.Fatalf("the first client's second call at max_parked 1: %s", r)
			}
			time.Sleep(2100 * time.Millisecond) // mrtr.EvictGrace
			if r := b.post(3, "tools/call", askParams(nil, nil)); r.result()["resultType"] != "input_required" {
				t.Errorf("another address's call once the first had waited the grace: %s", r)
			}
		})
	}
}

// TestListenCapsBehindProxy: behind a trusted proxy (http.trusted_proxies),
// a client without a token is the address X-Forwarded-For names, so the
// clients of one load balancer do not share one client's cap; a request
// from any other address is its connection's, whatever it sends.
func TestListenCapsBehindProxy(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: v1full(t, config.Limits{})})
	c := newModern(t, serveHTTP(t, s, &server.HTTPOptions{MaxListensPerClient: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}))
	for i, tc := range []struct {
		from, xff string
		want      int
	}{
		{"127.0.0.1", "10.0.0.1", http.StatusOK},
		{"127.0.0.1", "10.0.0.2", http.StatusOK},                        // another client behind the proxy
		{"127.0.0.1", "10.0.0.1", http.StatusTooManyRequests},           // the first one again
		{"127.0.0.1", "10.0.0.9, 10.0.0.1", http.StatusTooManyRequests}, // the client's own entry is not believed
		{"127.0.0.1", "10.0.0.3, 127.0.0.1", http.StatusOK},             // a chain of trusted proxies
		{"127.0.0.2", "10.0.0.4", http.StatusOK},                        // not a proxy: its own address
		{"127.0.0.2", "10.0.0.5", http.StatusTooManyRequests},           // whatever it claims
	} {
		st, body, _ := c.listenVia(tc.from, tc.xff, i+1)
		if st != tc.want {
			t.Errorf("listen %d from %s with X-Forwarded-For %q: HTTP %d %s, want %d", i+1, tc.from, tc.xff, st, body, tc.want)
		}
	}
}
