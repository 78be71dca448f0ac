package httpcalls_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
)

// TestReadBody: a body is read once, up to one byte past the limit, by
// whichever reader asks first; a second ReadBody, and one through a type
// that embeds the Body, returns the same bytes without reading; the next
// reader of the request reads the whole body, the rest of one longer than
// the limit included; the buffer is no larger than the body announced.
func TestReadBody(t *testing.T) {
	const limit = 100
	type seen struct {
		first, second, embedded []byte
		err                     error
		replay                  []byte
		replayErr               error
		capacity                int
	}
	got := make(chan seen, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var s seen
		s.first, s.err = httpcalls.ReadBody(r, limit)
		s.capacity = cap(s.first)
		s.second, _ = httpcalls.ReadBody(r, limit)
		// An edge keeps what it made of the body beside it.
		type kept struct {
			*httpcalls.Body
			note string
		}
		r.Body = &kept{Body: r.Body.(*httpcalls.Body), note: "parsed"}
		s.embedded, _ = httpcalls.ReadBody(r, limit)
		s.replay, s.replayErr = io.ReadAll(r.Body)
		got <- s
	}))
	defer ts.Close()
	for _, tc := range []struct {
		name    string
		body    string
		chunked bool // no Content-Length
	}{
		{"empty", "", false},
		{"small", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},
		{"at the limit", strings.Repeat("a", limit), false},
		{"one past", strings.Repeat("b", limit+1), false},
		{"longer", strings.Repeat("c", 3*limit), false},
		{"chunked small", "chunked", true},
		{"chunked longer", strings.Repeat("d", 5*limit), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length
			}
			resp, err := http.Post(ts.URL, "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			s := <-got
			want := tc.body[:min(len(tc.body), limit+1)]
			if s.err != nil || string(s.first) != want {
				t.Errorf("first read %q, %v; want %q", s.first, s.err, want)
			}
			if !bytes.Equal(s.second, s.first) || !bytes.Equal(s.embedded, s.first) {
				t.Errorf("later reads %q and %q; want the first's %q", s.second, s.embedded, s.first)
			}
			if len(s.second) > 0 && &s.second[0] != &s.first[0] {
				t.Error("a later read copied the body: want the first read's bytes")
			}
			if s.replayErr != nil || string(s.replay) != tc.body {
				t.Errorf("the next reader read %q, %v; want the whole body %q", s.replay, s.replayErr, tc.body)
			}
			if !tc.chunked && len(tc.body) <= limit && s.capacity > len(tc.body)+1 {
				t.Errorf("a body of %d bytes was read into %d: want its length and one byte", len(tc.body), s.capacity)
			}
		})
	}
}
