package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// after collects what After yields: the data, and the errors.
func after(s mcp.EventStore, session, stream string, index int) ([]string, []error) {
	var data []string
	var errs []error
	for d, err := range s.After(context.Background(), session, stream, index) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		data = append(data, string(d))
	}
	return data, errs
}

// mustOpen opens a stream and appends events to it.
func mustOpen(t *testing.T, s *eventStore, session, stream string, events ...string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Open(ctx, session, stream); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if err := s.Append(ctx, session, stream, []byte(e)); err != nil {
			t.Fatal(err)
		}
	}
}

// check checks the store's counts against what its lists hold, and that
// each bound holds.
func (s *eventStore) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var events, bytes, postStreams int
	for id, ss := range s.sessions {
		if ss.id != id {
			t.Fatalf("session %q kept as %q", ss.id, id)
		}
		var sessionEvents, sessionBytes, sessionStreams int
		for sid, st := range ss.byID {
			if st.id != sid || st.session != ss {
				t.Fatalf("stream %q of %q kept as %q", st.id, st.session.id, sid)
			}
			if !st.standalone() {
				sessionStreams++
			}
			for _, e := range st.events {
				sessionEvents++
				sessionBytes += e.size()
			}
		}
		if sessionEvents != ss.events.n || sessionBytes != ss.nBytes || sessionStreams != ss.streams.n {
			t.Fatalf("session %q: %d events (list %d), %d bytes (counted %d), %d streams (list %d)", id, sessionEvents, ss.events.n, sessionBytes, ss.nBytes, sessionStreams, ss.streams.n)
		}
		if ss.streams.n > s.maxSessionStreams {
			t.Fatalf("session %q keeps %d streams, bound %d", id, ss.streams.n, s.maxSessionStreams)
		}
		events += sessionEvents
		bytes += sessionBytes
		postStreams += sessionStreams
	}
	if events != s.events.n || bytes != s.nBytes || postStreams != s.streams.n || len(s.sessions) != s.lru.n {
		t.Fatalf("store: %d events (list %d), %d bytes (counted %d), %d streams (list %d), %d sessions (list %d)", events, s.events.n, bytes, s.nBytes, postStreams, s.streams.n, len(s.sessions), s.lru.n)
	}
	if s.streams.n > s.maxStreams || s.lru.n > s.maxSessions {
		t.Fatalf("store keeps %d streams (bound %d), %d sessions (bound %d)", s.streams.n, s.maxStreams, s.lru.n, s.maxSessions)
	}
}

// TestEventStoreContract: After yields the events after an index; an
// index at or past the last event yields nothing; a stream or session
// never opened is an error, and takes no event.
func TestEventStoreContract(t *testing.T) {
	s := newEventStore(0)
	mustOpen(t, s, "S", "", "n0")
	mustOpen(t, s, "S", "A", "", "a1", "a2")
	mustOpen(t, s, "S", "B")
	for _, c := range []struct {
		stream string
		index  int
		want   []string
	}{
		{"A", -1, []string{"", "a1", "a2"}},
		{"A", 0, []string{"a1", "a2"}},
		{"A", 1, []string{"a2"}},
		{"A", 2, nil},
		{"A", 7, nil},
		{"B", -1, nil},
		{"", -1, []string{"n0"}},
	} {
		data, errs := after(s, "S", c.stream, c.index)
		if !slices.Equal(data, c.want) || errs != nil {
			t.Errorf("After(%q, %d) = %q, %v; want %q", c.stream, c.index, data, errs, c.want)
		}
	}
	for _, c := range [][2]string{{"S", "C"}, {"T", "A"}, {"T", ""}} {
		data, errs := after(s, c[0], c[1], -1)
		if data != nil || len(errs) != 1 || !errors.Is(errs[0], errNotKept) {
			t.Errorf("After(%q, %q) = %q, %v; want errNotKept alone", c[0], c[1], data, errs)
		}
		if err := s.Append(context.Background(), c[0], c[1], []byte("x")); !errors.Is(err, errNotKept) {
			t.Errorf("Append(%q, %q) = %v, want errNotKept", c[0], c[1], err)
		}
	}
	// Open is idempotent: it keeps what the stream has.
	mustOpen(t, s, "S", "A")
	if data, _ := after(s, "S", "A", 0); !slices.Equal(data, []string{"a1", "a2"}) {
		t.Errorf("after a second Open, After = %q", data)
	}
	// A consumer that stops early stops the iterator.
	for range s.After(context.Background(), "S", "A", -1) {
		break
	}
	s.check(t)
}

// TestEventStorePurged: once an event after the index is dropped, After
// yields the error alone, never the events kept after it; from the
// oldest event kept on, it yields them.
func TestEventStorePurged(t *testing.T) {
	s := newEventStore(0)
	s.maxBytes = 3 * (eventOverhead + 2)
	mustOpen(t, s, "S", "A", "a0", "a1", "a2", "a3", "a4")
	s.check(t)
	for index := -1; index <= 0; index++ {
		data, errs := after(s, "S", "A", index)
		if data != nil || len(errs) != 1 || !errors.Is(errs[0], mcp.ErrEventsPurged) {
			t.Errorf("After(%d) = %q, %v; want ErrEventsPurged alone", index, data, errs)
		}
	}
	if data, errs := after(s, "S", "A", 1); !slices.Equal(data, []string{"a2", "a3", "a4"}) || errs != nil {
		t.Errorf("After(1) = %q, %v", data, errs)
	}
}

// TestEventStoreSessionStreams: a session keeps its most recently used
// streams of POSTs, up to the bound, and its standalone stream; an older
// stream is forgotten whole, and its resumption fails as that of purged
// data does; a stream in use (an event appended) is not the oldest.
func TestEventStoreSessionStreams(t *testing.T) {
	s := newEventStore(0)
	s.maxSessionStreams = 4
	mustOpen(t, s, "S", "", "n")
	mustOpen(t, s, "T", "T0", "t")
	for i := range 6 {
		mustOpen(t, s, "S", fmt.Sprint(i), "", fmt.Sprint("m", i))
		if i == 4 {
			// 1 is used again: 2 is now the oldest.
			if err := s.Append(context.Background(), "S", "1", []byte("again")); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.check(t)
	for _, id := range []string{"0", "2"} {
		data, errs := after(s, "S", id, -1)
		if data != nil || len(errs) != 1 || !errors.Is(errs[0], mcp.ErrEventsPurged) {
			t.Errorf("stream %s: After = %q, %v; want it forgotten", id, data, errs)
		}
		if err := s.Append(context.Background(), "S", id, []byte("late")); !errors.Is(err, errNotKept) {
			t.Errorf("stream %s: Append = %v, want errNotKept", id, err)
		}
	}
	for _, id := range []string{"1", "3", "4", "5"} {
		if data, errs := after(s, "S", id, 0); len(data) == 0 || errs != nil {
			t.Errorf("stream %s: After = %q, %v", id, data, errs)
		}
	}
	if data, errs := after(s, "S", "", -1); !slices.Equal(data, []string{"n"}) || errs != nil {
		t.Errorf("standalone stream: After = %q, %v", data, errs)
	}
	if data, errs := after(s, "T", "T0", -1); !slices.Equal(data, []string{"t"}) || errs != nil {
		t.Errorf("another session's stream: After = %q, %v", data, errs)
	}
}

// TestEventStoreSessionBytes: a session keeps at most its bound of bytes,
// dropping its oldest events first, and leaves the other sessions'
// events alone; the event just appended is kept even beyond the bound.
func TestEventStoreSessionBytes(t *testing.T) {
	s := newEventStore(0)
	s.maxSessionBytes = 4 * (eventOverhead + 2)
	mustOpen(t, s, "T", "B", "b0", "b1")
	mustOpen(t, s, "S", "A", "a0", "a1", "a2")
	mustOpen(t, s, "S", "C", "c0", "c1", "c2")
	s.check(t)
	if s.sessions["S"].nBytes > s.maxSessionBytes {
		t.Errorf("session S keeps %d bytes, bound %d", s.sessions["S"].nBytes, s.maxSessionBytes)
	}
	if _, errs := after(s, "S", "A", 0); len(errs) != 1 || !errors.Is(errs[0], mcp.ErrEventsPurged) {
		t.Errorf("A after 0: %v, want purged", errs)
	}
	if data, errs := after(s, "S", "A", 1); !slices.Equal(data, []string{"a2"}) || errs != nil {
		t.Errorf("A after 1 = %q, %v", data, errs)
	}
	if data, errs := after(s, "S", "C", -1); !slices.Equal(data, []string{"c0", "c1", "c2"}) || errs != nil {
		t.Errorf("C = %q, %v", data, errs)
	}
	if data, errs := after(s, "T", "B", -1); !slices.Equal(data, []string{"b0", "b1"}) || errs != nil {
		t.Errorf("the other session's B = %q, %v", data, errs)
	}
	big := string(make([]byte, 2*s.maxSessionBytes))
	mustOpen(t, s, "S", "D", big)
	if data, errs := after(s, "S", "D", -1); !slices.Equal(data, []string{big}) || errs != nil {
		t.Errorf("an event beyond the bound: %d events, %v", len(data), errs)
	}
	if _, errs := after(s, "S", "C", 1); len(errs) != 1 {
		t.Errorf("C is kept beside an event beyond the bound")
	}
	s.check(t)
}

// TestEventStoreBytes: the store keeps at most its bound of bytes for
// all sessions, dropping the oldest events first, whichever session's.
func TestEventStoreBytes(t *testing.T) {
	s := newEventStore(0)
	s.maxBytes = 5 * (eventOverhead + 2)
	mustOpen(t, s, "S", "A", "a0", "a1")
	mustOpen(t, s, "T", "B", "b0", "b1")
	mustOpen(t, s, "U", "C", "c0", "c1")
	s.check(t)
	if s.nBytes > s.maxBytes {
		t.Errorf("the store keeps %d bytes, bound %d", s.nBytes, s.maxBytes)
	}
	if _, errs := after(s, "S", "A", -1); len(errs) != 1 || !errors.Is(errs[0], mcp.ErrEventsPurged) {
		t.Errorf("the oldest event kept: %v", errs)
	}
	for _, c := range []struct {
		session, stream string
		want            []string
	}{{"S", "A", []string{"a1"}}, {"T", "B", []string{"b0", "b1"}}, {"U", "C", []string{"c0", "c1"}}} {
		index := -1
		if c.stream == "A" {
			index = 0
		}
		if data, errs := after(s, c.session, c.stream, index); !slices.Equal(data, c.want) || errs != nil {
			t.Errorf("%s: %q, %v; want %q", c.stream, data, errs, c.want)
		}
	}
}

// TestEventStoreSessionClosed: SessionClosed forgets the session whole,
// and no other.
func TestEventStoreSessionClosed(t *testing.T) {
	s := newEventStore(0)
	mustOpen(t, s, "S", "", "n")
	mustOpen(t, s, "S", "A", "a0", "a1")
	mustOpen(t, s, "T", "B", "b0")
	if err := s.SessionClosed(context.Background(), "S"); err != nil {
		t.Fatal(err)
	}
	s.check(t)
	if sessions, streams, events, bytes := s.counts(); sessions != 1 || streams != 1 || events != 1 || bytes != eventOverhead+2 {
		t.Errorf("after SessionClosed: %d sessions, %d streams, %d events, %d bytes", sessions, streams, events, bytes)
	}
	if _, errs := after(s, "S", "A", -1); len(errs) != 1 || !errors.Is(errs[0], errNotKept) {
		t.Errorf("a stream of the closed session: %v", errs)
	}
	if err := s.SessionClosed(context.Background(), "S"); err != nil {
		t.Errorf("closed twice: %v", err)
	}
	s.SessionClosed(context.Background(), "T")
	if sessions, streams, events, bytes := s.counts(); sessions+streams+events+bytes != 0 {
		t.Errorf("all closed: %d sessions, %d streams, %d events, %d bytes", sessions, streams, events, bytes)
	}
}

// TestEventStoreManyCalls: a session that makes many calls, each on a
// stream of its own (a priming event and the answer), keeps a bounded
// number of entries, with the defaults; its last calls can be resumed.
func TestEventStoreManyCalls(t *testing.T) {
	s := newEventStore(0)
	mustOpen(t, s, "S", "")
	const calls = 100_000
	for i := range calls {
		mustOpen(t, s, "S", fmt.Sprint(i), "", `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}
	s.check(t)
	sessions, streams, events, bytes := s.counts()
	if sessions != 1 || streams > eventStoreSessionStreams+1 || events > 2*eventStoreSessionStreams || bytes > eventStoreSessionBytes {
		t.Errorf("after %d calls: %d sessions, %d streams, %d events, %d bytes", calls, sessions, streams, events, bytes)
	}
	if data, errs := after(s, "S", fmt.Sprint(calls-1), 0); len(data) != 1 || errs != nil {
		t.Errorf("the last call: %q, %v", data, errs)
	}
}

// TestEventStoreNeverClosed: sessions that are never closed keep a
// bounded number of sessions and streams; the least recently used go
// first.
func TestEventStoreNeverClosed(t *testing.T) {
	s := newEventStore(50)
	s.maxStreams = 120
	for i := range 1000 {
		session := fmt.Sprint("S", i)
		mustOpen(t, s, session, "")
		for j := range 3 {
			mustOpen(t, s, session, fmt.Sprint(j), "", "m")
		}
		if i%100 == 0 {
			s.check(t)
		}
	}
	s.check(t)
	sessions, streams, _, _ := s.counts()
	if sessions != 50 || streams > 120+50 {
		t.Errorf("%d sessions, %d streams", sessions, streams)
	}
	if _, errs := after(s, "S0", "", -1); len(errs) != 1 {
		t.Errorf("the first session is kept")
	}
	if data, errs := after(s, "S999", "2", -1); len(data) != 2 || errs != nil {
		t.Errorf("the last session: %q, %v", data, errs)
	}
	// The store's bound on streams, below the sessions' streams, forgets
	// the least recently used across sessions.
	s = newEventStore(0)
	s.maxStreams = 10
	for i := range 10 {
		mustOpen(t, s, fmt.Sprint("S", i), "", "n")
		mustOpen(t, s, fmt.Sprint("S", i), "A", "a")
	}
	// S0's A is used again: S1's A is now the least recently used.
	if err := s.Append(context.Background(), "S0", "A", []byte("a")); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, s, "S0", "B", "b")
	s.check(t)
	if _, errs := after(s, "S1", "A", -1); len(errs) != 1 {
		t.Errorf("the least recently used stream is kept")
	}
	for _, c := range [][2]string{{"S0", "A"}, {"S0", "B"}, {"S1", ""}, {"S2", "A"}} {
		if data, errs := after(s, c[0], c[1], -1); len(data) == 0 || errs != nil {
			t.Errorf("%s %q: %q, %v", c[0], c[1], data, errs)
		}
	}
}

// TestEventStoreConcurrent: sessions opened, appended to, replayed and
// closed at once keep the store's counts right (run with -race).
func TestEventStoreConcurrent(t *testing.T) {
	s := newEventStore(8)
	s.maxSessionStreams, s.maxStreams, s.maxSessionBytes, s.maxBytes = 3, 10, 4*eventOverhead, 20*eventOverhead
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				session := fmt.Sprint("S", g, i%5)
				s.Open(ctx, session, "")
				stream := fmt.Sprint(i % 7)
				s.Open(ctx, session, stream)
				s.Append(ctx, session, stream, []byte("x"))
				after(s, session, stream, -1)
				if i%50 == 0 {
					s.SessionClosed(ctx, session)
				}
			}
		})
	}
	wg.Wait()
	s.check(t)
}
