package httpcalls_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
)

// TestTrack: a tracked request is found by its headers, and only by them
// (a client's own header names nothing once cleared); its calls' ids are
// found by method and key, unless two calls share them; Wait waits for the
// session's requests, and the scope ends when the client goes away.
func TestTrack(t *testing.T) {
	tr := httpcalls.NewTracker()
	type seen struct {
		found, carried bool
		ids            [3]string
		done           <-chan struct{}
	}
	got := make(chan seen, 1)
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forged, carried := tr.Lookup(r.Header)
		if forged != nil || !carried {
			t.Errorf("a client's own header: %v, %v; want nil and carried (it names a request)", forged, carried)
		}
		httpcalls.ClearHeader(r.Header)
		if hr, carried := tr.Lookup(r.Header); hr != nil || carried {
			t.Errorf("cleared: %v, %v; want nil, false", hr, carried)
		}
		hr, done := tr.Track(r, "s1")
		defer done()
		hr.Record([]httpcalls.CallRef{
			{Method: "tools/call", Key: "echo", ID: "7"},
			{Method: "tools/call", Key: "twice", ID: "8"},
			{Method: "tools/call", Key: "twice", ID: "9"},
		})
		found, carried := tr.Lookup(r.Header)
		got <- seen{
			found: found == hr, carried: carried,
			ids:  [3]string{found.IDFor("tools/call", "echo"), found.IDFor("tools/call", "twice"), found.IDFor("resources/read", "echo")},
			done: hr.Scope.Done(),
		}
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-release
	}))
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Hangar-Internal-Request", "1") // forged: the tracker's first token
	respc := make(chan error, 1)
	go func() {
		resp, err := ts.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		respc <- err
	}()
	var s seen
	select {
	case s = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not served")
	}
	if !s.found || !s.carried {
		t.Errorf("the tracked request was not found by its headers (%v, %v)", s.found, s.carried)
	}
	if s.ids != [3]string{"7", "", ""} {
		t.Errorf("ids %q, want the one call's and none for the shared or absent ones", s.ids)
	}
	// Wait waits while the session's request is in progress, and not for
	// another session's.
	start := time.Now()
	tr.Wait("other", time.Second)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Wait for another session took %v", d)
	}
	start = time.Now()
	tr.Wait("s1", 100*time.Millisecond)
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("Wait returned after %v while the session's request ran", d)
	}
	// The client goes away: the request's scope ends with its context.
	<-respc // the headers arrived
	cancel()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the scope did not end when the client went away")
	}
	close(release)
	start = time.Now()
	tr.Wait("", 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait took %v after the request ended", d)
	}
	var none *httpcalls.Tracker
	if hr, carried := none.Lookup(http.Header{"Hangar-Internal-Request": {"1"}}); hr != nil || carried {
		t.Errorf("a nil Tracker found %v, %v", hr, carried)
	}
	var hr *httpcalls.Request
	hr.Record([]httpcalls.CallRef{{Method: "tools/call", Key: "echo", ID: "7"}}) // a nil request records nothing, and does not panic
	if id := hr.IDFor("tools/call", "echo"); id != "" {
		t.Errorf("a nil request has the id %q", id)
	}
}
