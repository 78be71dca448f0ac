package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlines is a ResponseWriter that records the write deadlines set on
// it (http.ResponseController finds SetWriteDeadline).
type deadlines struct {
	*httptest.ResponseRecorder
	set []time.Time
}

func (d *deadlines) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

// TestWriteDeadlines: every write has at least the write timeout from its
// start, and at most 1/16 more; the writes that follow within that slack
// set no deadline of their own; a write after it sets one; a client the
// drain cut gets none.
func TestWriteDeadlines(t *testing.T) {
	const d = 800 * time.Millisecond
	rw := &deadlines{ResponseRecorder: httptest.NewRecorder()}
	w := &clientWriter{ResponseWriter: rw, rc: *http.NewResponseController(rw), d: d}
	check := func(what string, start time.Time, wantSet int) {
		t.Helper()
		if len(rw.set) != wantSet {
			t.Fatalf("%s: %d deadlines set, want %d", what, len(rw.set), wantSet)
		}
		last := rw.set[len(rw.set)-1]
		if left := last.Sub(start); left < d || left > d+d/deadlineSlack+50*time.Millisecond {
			t.Errorf("%s: the deadline is %v after the write began, want %v to %v", what, left, d, d+d/deadlineSlack)
		}
	}
	start := time.Now()
	w.extend(start) // as limitClient does
	check("the request's start", start, 1)
	for range 3 {
		start = time.Now()
		w.Write([]byte("event\n"))
		check("a write that follows at once", start, 1)
	}
	w.Flush()
	check("a flush that follows at once", start, 1)
	time.Sleep(d/deadlineSlack + 10*time.Millisecond)
	start = time.Now()
	w.Write([]byte("later\n"))
	check("a write after the slack", start, 2)
	w.stop()
	n := len(rw.set)
	time.Sleep(d/deadlineSlack + 10*time.Millisecond)
	w.Write([]byte("cut\n"))
	if len(rw.set) != n {
		t.Errorf("a write after the drain cut the client set a deadline: %v", rw.set[n:])
	}
}
