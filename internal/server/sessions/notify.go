package sessions

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session holds at most notifyQueue notifications, of notifyBytes in
// all, for its client; beyond that it drops log messages and merges
// progress notifications.
const (
	notifyQueue = 64
	notifyBytes = 4 << 20
)

// flushWait bounds how long a call's end waits for its notifications to be
// written before the answer. It holds no plugin instance.
const flushWait = 5 * time.Second

// notifier sends a session's notifications to its client from a goroutine
// of its own, so that a client that reads slowly, or not at all, never
// holds the plugin call that sent them. The queue is bounded: when it is
// full, a new progress notification replaces the queued one for the same
// token, and log messages and other progress notifications are dropped.
type notifier struct {
	ss *mcp.ServerSession

	mu      sync.Mutex
	queue   []*note
	seq     uint64        // of the last note queued
	written uint64        // notes up to this one have been sent or dropped
	moved   chan struct{} // closed and replaced when written advances
	wake    chan struct{} // signals the writer (buffered, 1)
	running bool          // the writer goroutine is started
	bytes   int           // the queue's size
	closed  bool
	dropped int
}

type note struct {
	seq   uint64
	ctx   context.Context // the call's: the SDK sends the note on its stream
	send  func(ctx context.Context) error
	token any // progress token, for progress notes
	size  int // about the size of its JSON
}

func (n *notifier) init(ss *mcp.ServerSession) {
	n.ss = ss
	n.moved = make(chan struct{})
	n.wake = make(chan struct{}, 1)
}

// push queues a note and returns its sequence number, or 0 if the note was
// dropped. Progress notes with a token replace a queued one for the same
// token when the queue is full. essential notes are kept beyond the bound,
// up to twice it.
func (n *notifier) push(nt *note, essential bool) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return 0
	}
	if len(n.queue) >= notifyQueue || n.bytes+nt.size > notifyBytes {
		if nt.token != nil {
			for _, q := range n.queue {
				if q.token != nil && reflect.DeepEqual(q.token, nt.token) && n.bytes-q.size+nt.size <= notifyBytes {
					n.bytes += nt.size - q.size
					q.send, q.ctx, q.size = nt.send, nt.ctx, nt.size
					return q.seq
				}
			}
		}
		if !essential || len(n.queue) >= 2*notifyQueue || n.bytes+nt.size > 2*notifyBytes {
			n.dropped++
			return 0
		}
	}
	n.seq++
	nt.seq = n.seq
	n.bytes += nt.size
	n.queue = append(n.queue, nt)
	if !n.running {
		n.running = true
		go n.run()
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return nt.seq
}

// sizeOf is about the size of v as JSON.
func sizeOf(v any) int {
	switch v := v.(type) {
	case nil:
		return 0
	case string:
		return len(v)
	case json.RawMessage:
		return len(v)
	}
	b, _ := json.Marshal(v)
	return len(b)
}

// run writes queued notes until the notifier is closed.
func (n *notifier) run() {
	for {
		n.mu.Lock()
		for len(n.queue) == 0 && !n.closed {
			n.mu.Unlock()
			<-n.wake
			n.mu.Lock()
		}
		if n.closed {
			n.mu.Unlock()
			return
		}
		nt := n.queue[0]
		n.queue[0] = nil
		n.queue = n.queue[1:]
		n.bytes -= nt.size
		if len(n.queue) == 0 {
			n.queue = nil
		}
		n.mu.Unlock()

		nt.send(nt.ctx) // failures are the client's loss, as for any notification

		n.mu.Lock()
		n.written = nt.seq
		close(n.moved)
		n.moved = make(chan struct{})
		n.mu.Unlock()
	}
}

// flush waits until the note numbered seq has been written or dropped, for
// at most flushWait.
func (n *notifier) flush(seq uint64) {
	if seq == 0 {
		return
	}
	timer := time.NewTimer(flushWait)
	defer timer.Stop()
	for {
		n.mu.Lock()
		done := n.written >= seq || n.closed
		moved := n.moved
		n.mu.Unlock()
		if done {
			return
		}
		select {
		case <-moved:
		case <-timer.C:
			return
		}
	}
}

// close drops the queued notes and stops the writer.
func (n *notifier) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	n.queue = nil
	n.bytes = 0
	close(n.moved)
	n.moved = make(chan struct{})
	if n.wake != nil {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
}
