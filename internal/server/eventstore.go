package server

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The event store of the Streamable HTTP sessions keeps what each stream
// sent, so that a client that lost a stream can resume it (a GET with
// Last-Event-ID). The go-sdk and the fast path share it: each POST opens
// a stream of its own (Open), each event is stored before it is written
// (Append), and a resumption replays what followed the last event the
// client saw (After). Its fairness model:
//
//   - who holds: a session holds its streams and their events;
//   - how many: at most eventStoreSessionStreams streams of POSTs per
//     session, and eventStoreStreams in all, the least recently used
//     (opened, or appended to) forgotten whole: a resumption of it fails
//     as one of dropped events does. A session's standalone stream (ID
//     "", opened with the session, and resumed for its whole life) is not
//     counted there: it is kept as long as its session. At most as many
//     sessions as newEventStore was given, the least recently used
//     forgotten whole, for sessions whose SessionClosed never comes;
//   - how much: at most eventStoreSessionBytes per session, and
//     eventStoreBytes in all, an event counted as its data and
//     eventOverhead; the oldest events are dropped first, so a stream
//     keeps its newest ones. The event just appended is kept whatever its
//     size;
//   - how long: until the session ends (SessionClosed), or the bounds
//     push it out.
//
// Each bound is kept in O(1) amortized per call: the store keeps its
// sessions, streams and events in lists by age or use, and never walks
// more than what it drops.
//
// A client that resumes what was dropped gets HTTP 400 from the go-sdk
// ("failed to replay events"), on which the go-sdk's client ends its
// session: the bounds keep what a client may still resume, the streams it
// used most recently (opened, written to or resumed). A call that sends
// nothing while its session opens 64 streams more loses its stream here:
// its answer still goes out on its connection, but cannot be resumed.

const (
	// eventStoreSessionStreams bounds the streams of POSTs a session
	// keeps: a client resumes the streams of its calls in progress, and a
	// session has few of those at a time.
	eventStoreSessionStreams = 64
	// eventStoreStreams bounds the streams of POSTs the store keeps for
	// all sessions (at most a few MiB of entries).
	eventStoreStreams = 1 << 14
	// eventStoreDefaultSessions bounds the sessions the store keeps when
	// the server has no cap on its sessions (HTTPOptions.MaxSessions 0).
	eventStoreDefaultSessions = 1 << 14
	// eventStoreSessionBytes bounds the bytes of the events a session
	// keeps, so that one session cannot push out all others'.
	eventStoreSessionBytes = 1 << 20
	// eventStoreBytes bounds the bytes of the events the store keeps, as
	// the go-sdk's MemoryEventStore does by default.
	eventStoreBytes = 10 << 20
	// eventOverhead is what an event is counted for beyond its data: about
	// its entry in the store. An empty event (a priming one) is not free.
	eventOverhead = 64
)

// errNotKept is the error of After, and of Append, for a stream the store
// does not keep: never opened, or forgotten (its session closed, or pushed
// out by the bounds). It wraps mcp.ErrEventsPurged: the store cannot tell
// the two apart, and a forgotten stream is one whose events were dropped.
var errNotKept = fmt.Errorf("stream not kept: never opened, or forgotten (%w)", mcp.ErrEventsPurged)

// eventStore is Hangar's mcp.EventStore: bounded, with the fairness model
// above. The zero value is not ready; use newEventStore.
type eventStore struct {
	// The bounds: the constants above, but in tests.
	maxSessions                   int
	maxSessionStreams, maxStreams int
	maxSessionBytes, maxBytes     int

	mu       sync.Mutex // guards what follows
	sessions map[string]*storeSession
	lru      list[storeSession] // sessions, least recently used first
	streams  list[storeStream]  // streams of POSTs, least recently used first
	events   list[storeEvent]   // oldest first
	nBytes   int                // the events', as the bounds count them
}

// storeSession is what the store keeps of a session.
type storeSession struct {
	id      string
	byID    map[string]*storeStream // its streams, the standalone one too
	streams list[storeStream]       // its streams of POSTs, least recently used first
	events  list[storeEvent]        // oldest first
	nBytes  int
	link    links[storeSession] // in eventStore.lru
}

// storeStream is what the store keeps of a stream.
type storeStream struct {
	id      string
	session *storeSession
	first   int                // the index of events[0]
	events  []*storeEvent      // its events kept, oldest first
	global  links[storeStream] // in eventStore.streams, but for a standalone stream
	local   links[storeStream] // in storeSession.streams, but for a standalone stream
}

// standalone reports whether st is its session's standalone stream.
func (st *storeStream) standalone() bool { return st.id == "" }

// storeEvent is an event kept.
type storeEvent struct {
	data   []byte
	stream *storeStream
	global links[storeEvent] // in eventStore.events
	local  links[storeEvent] // in storeSession.events
}

func (e *storeEvent) size() int { return len(e.data) + eventOverhead }

// newEventStore returns an empty store that keeps at most maxSessions
// sessions (zero: eventStoreDefaultSessions), and the other bounds of the
// constants above.
func newEventStore(maxSessions int) *eventStore {
	if maxSessions <= 0 {
		maxSessions = eventStoreDefaultSessions
	}
	return &eventStore{
		maxSessions:       maxSessions,
		maxSessionStreams: eventStoreSessionStreams,
		maxStreams:        eventStoreStreams,
		maxSessionBytes:   eventStoreSessionBytes,
		maxBytes:          eventStoreBytes,
		sessions:          map[string]*storeSession{},
		lru:               list[storeSession]{link: func(s *storeSession) *links[storeSession] { return &s.link }},
		streams:           list[storeStream]{link: func(st *storeStream) *links[storeStream] { return &st.global }},
		events:            list[storeEvent]{link: func(e *storeEvent) *links[storeEvent] { return &e.global }},
	}
}

// Open implements mcp.EventStore: it keeps the stream, and forgets the
// least recently used ones beyond the bounds.
func (s *eventStore) Open(_ context.Context, sessionID, streamID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[sessionID]
	if ss == nil {
		ss = &storeSession{
			id:      sessionID,
			byID:    map[string]*storeStream{},
			streams: list[storeStream]{link: func(st *storeStream) *links[storeStream] { return &st.local }},
			events:  list[storeEvent]{link: func(e *storeEvent) *links[storeEvent] { return &e.local }},
		}
		s.sessions[sessionID] = ss
		s.lru.pushBack(ss)
		for s.lru.n > s.maxSessions {
			s.forgetSession(s.lru.front())
		}
	}
	st := ss.byID[streamID]
	if st == nil {
		st = &storeStream{id: streamID, session: ss}
		ss.byID[streamID] = st
		if !st.standalone() {
			ss.streams.pushBack(st)
			s.streams.pushBack(st)
			for ss.streams.n > s.maxSessionStreams {
				s.forgetStream(ss.streams.front())
			}
			for s.streams.n > s.maxStreams {
				old := s.streams.front()
				s.forgetStream(old)
				if len(old.session.byID) == 0 {
					s.forgetSession(old.session) // not ss: st is kept
				}
			}
		}
	}
	s.touch(st)
	return nil
}

// Append implements mcp.EventStore: it keeps data as the stream's next
// event, and drops the oldest events beyond the bounds of bytes, but for
// this one. A stream not kept takes no event (errNotKept): the index of
// its next event is lost with it.
func (s *eventStore) Append(_ context.Context, sessionID, streamID string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stream(sessionID, streamID)
	if st == nil {
		return fmt.Errorf("event store: appending to stream %q of session %q: %w", streamID, sessionID, errNotKept)
	}
	s.touch(st)
	ss := st.session
	e := &storeEvent{data: data, stream: st}
	st.events = append(st.events, e)
	ss.events.pushBack(e)
	s.events.pushBack(e)
	ss.nBytes += e.size()
	s.nBytes += e.size()
	for ss.nBytes > s.maxSessionBytes && ss.events.front() != e {
		s.drop(ss.events.front())
	}
	for s.nBytes > s.maxBytes && s.events.front() != e {
		s.drop(s.events.front())
	}
	return nil
}

// After implements mcp.EventStore: the data of the stream's events after
// index, or, if any of them was dropped or the stream is not kept, an
// error alone.
func (s *eventStore) After(_ context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		data, err := s.after(sessionID, streamID, index)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range data {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// after copies the data After yields, with s.mu held only for that.
func (s *eventStore) after(sessionID, streamID string, index int) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stream(sessionID, streamID)
	if st == nil {
		return nil, fmt.Errorf("event store: replaying stream %q of session %q: %w", streamID, sessionID, errNotKept)
	}
	s.touch(st)
	start := index + 1 - st.first
	if start < 0 {
		return nil, fmt.Errorf("event store: replaying stream %q of session %q after event %d: the events from %d on are kept: %w", streamID, sessionID, index, st.first, mcp.ErrEventsPurged)
	}
	if start >= len(st.events) {
		return nil, nil
	}
	data := make([][]byte, 0, len(st.events)-start)
	for _, e := range st.events[start:] {
		data = append(data, e.data)
	}
	return data, nil
}

// SessionClosed implements mcp.EventStore: it forgets the session.
func (s *eventStore) SessionClosed(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[sessionID]; ss != nil {
		s.forgetSession(ss)
	}
	return nil
}

// stream returns a stream kept, or nil. s.mu must be held.
func (s *eventStore) stream(sessionID, streamID string) *storeStream {
	if ss := s.sessions[sessionID]; ss != nil {
		return ss.byID[streamID]
	}
	return nil
}

// touch makes st, and its session, the most recently used. s.mu must be
// held.
func (s *eventStore) touch(st *storeStream) {
	s.lru.moveToBack(st.session)
	if !st.standalone() {
		st.session.streams.moveToBack(st)
		s.streams.moveToBack(st)
	}
}

// drop drops e, the oldest event of its stream. s.mu must be held.
func (s *eventStore) drop(e *storeEvent) {
	st := e.stream
	if len(st.events) == 0 || st.events[0] != e {
		panic("event store: dropping an event that is not its stream's oldest")
	}
	st.events[0] = nil
	st.events = st.events[1:]
	st.first++
	s.unlink(e)
}

// unlink takes e out of the lists and counts of bytes. s.mu must be held.
func (s *eventStore) unlink(e *storeEvent) {
	ss := e.stream.session
	ss.events.remove(e)
	s.events.remove(e)
	ss.nBytes -= e.size()
	s.nBytes -= e.size()
}

// forgetStream forgets st and its events. s.mu must be held.
func (s *eventStore) forgetStream(st *storeStream) {
	for _, e := range st.events {
		s.unlink(e)
	}
	st.events = nil
	ss := st.session
	delete(ss.byID, st.id)
	if !st.standalone() {
		ss.streams.remove(st)
		s.streams.remove(st)
	}
}

// forgetSession forgets ss, its streams and their events. s.mu must be
// held.
func (s *eventStore) forgetSession(ss *storeSession) {
	for _, st := range ss.byID {
		s.forgetStream(st)
	}
	s.lru.remove(ss)
	delete(s.sessions, ss.id)
}

// counts returns what the store keeps: sessions, streams (standalone ones
// too), events, and bytes as the bounds count them.
func (s *eventStore) counts() (sessions, streams, events, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		streams += len(ss.byID)
	}
	return len(s.sessions), streams, s.events.n, s.nBytes
}

// links are an element's links in an intrusive list.
type links[T any] struct{ prev, next *T }

// list is an intrusive doubly linked list: an element holds its links
// (link), so that it is taken out of the list, or moved to its back, in
// O(1), and may be in several lists at once.
type list[T any] struct {
	head, tail *T
	n          int
	link       func(*T) *links[T]
}

func (l *list[T]) front() *T { return l.head }

func (l *list[T]) pushBack(x *T) {
	lx := l.link(x)
	lx.prev, lx.next = l.tail, nil
	if l.tail != nil {
		l.link(l.tail).next = x
	} else {
		l.head = x
	}
	l.tail = x
	l.n++
}

func (l *list[T]) remove(x *T) {
	lx := l.link(x)
	if lx.prev != nil {
		l.link(lx.prev).next = lx.next
	} else {
		l.head = lx.next
	}
	if lx.next != nil {
		l.link(lx.next).prev = lx.prev
	} else {
		l.tail = lx.prev
	}
	lx.prev, lx.next = nil, nil
	l.n--
}

func (l *list[T]) moveToBack(x *T) {
	if l.tail != x {
		l.remove(x)
		l.pushBack(x)
	}
}

var _ mcp.EventStore = (*eventStore)(nil)
