package pdk

import (
	"errors"
	"strings"
	"testing"
)

// withSender makes Fetch send through fn until the end of the test.
func withSender(t *testing.T, fn func(meta, body []byte) (int, []byte, []byte, error)) {
	saved := sendHTTP
	sendHTTP = fn
	t.Cleanup(func() { sendHTTP = saved })
}

func TestFetchEncodes(t *testing.T) {
	var gotMeta, gotBody string
	withSender(t, func(meta, body []byte) (int, []byte, []byte, error) {
		gotMeta, gotBody = string(meta), string(body)
		return 201, []byte("made"), []byte(`{"Content-Type":"text/plain","X-Seen":"one, two"}`), nil
	})
	resp, err := Fetch(&HTTPRequest{Method: "post", URL: "https://api.test/x", Header: map[string]string{"Authorization": "Bearer k"}, Body: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"url":"https://api.test/x","method":"POST","headers":{"Authorization":"Bearer k"},"hangar":1}`; gotMeta != want || gotBody != "{}" {
		t.Errorf("sent %s with body %q\nwant %s", gotMeta, gotBody, want)
	}
	if resp.StatusCode != 201 || string(resp.Body) != "made" || resp.Header.Get("content-type") != "text/plain" || resp.Header.Get("X-Seen") != "one, two" || resp.Header.Get("X-None") != "" {
		t.Errorf("response %+v", resp)
	}

	if _, err := Get("https://api.test/y"); err != nil || !strings.Contains(gotMeta, `"method":"GET"`) || strings.Contains(gotMeta, "headers") || gotBody != "" {
		t.Errorf("Get sent %s, body %q: %v", gotMeta, gotBody, err)
	}
}

func TestFetchFailures(t *testing.T) {
	for _, c := range []struct {
		answer, want string
		denied       bool
	}{
		{`{"error":"HTTP request denied: host \"api.test\" is not in grants.allowed_hosts; to allow it, add \"api.test\" to grants.allowed_hosts of plugin w","denied":true}`,
			`pdk: GET https://api.test/v1: HTTP request denied: host "api.test" is not in grants.allowed_hosts; to allow it, add "api.test" to grants.allowed_hosts of plugin w`, true},
		{`{"error":"dial tcp: connection refused"}`, "pdk: GET https://api.test/v1: dial tcp: connection refused", false},
		{``, "pdk: GET https://api.test/v1: the host answered no status and no reason", false},
	} {
		withSender(t, func(meta, body []byte) (int, []byte, []byte, error) { return 0, []byte(c.answer), nil, nil })
		resp, err := Get("https://api.test/v1?key=secret")
		var he *HTTPError
		if resp != nil || !errors.As(err, &he) || err.Error() != c.want || errors.Is(err, ErrHTTPDenied) != c.denied {
			t.Errorf("answer %s: %v, %v\nwant %q, denied %v", c.answer, resp, err, c.want, c.denied)
		}
	}
}

// TestFetchWithoutHost: outside wasip1 builds, Fetch says where requests
// can be tested.
func TestFetchWithoutHost(t *testing.T) {
	_, err := Get("https://api.test/")
	if !errors.Is(err, ErrNoHost) || !strings.Contains(err.Error(), "plugintest") {
		t.Errorf("Get without a host: %v", err)
	}
}
