package mrtr

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// direct serves the call of a request without requestState whose plugin
// cannot ask the client for input (Request.Direct): it can never park,
// so it needs none of what a Call is for (a goroutine apart from the
// request, a place in the table, an id). It runs on the caller's
// goroutine with the request's context, as a call over a session does,
// and ends with it. Its notifications still never wait for the client: the
// plugin queues them, and a goroutine started at the first one hands them
// to the Sink while the call runs; Serve returns once they are handed
// over, so they come before the answer.
func (m *Manager) direct(ctx context.Context, req Request, run Run) (out *Outcome, err error) {
	if m.isClosed() {
		return nil, ErrClosed
	}
	h := &directHost{m: m, ctx: ctx, sink: req.Sink}
	var res any
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error in the call: %v", r)
			}
		}()
		res, err = run(ctx, h)
	}()
	h.end()
	if ctx.Err() != nil {
		if err != nil {
			// The run's own account of the end (the core's names a drain
			// timeout or a scope that ended, for instance).
			return nil, fmt.Errorf("%w: %w", ErrRequestEnded, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrRequestEnded, context.Cause(ctx))
	}
	if err != nil {
		return nil, err
	}
	h.out.Result = res // h is on the heap already: one allocation less
	return &h.out, nil
}

// errCannotAsk is what a direct call's host answers a request for the
// client: its plugin imports no function that asks, so it never comes.
var errCannotAsk = errors.New("mrtr: this call was started as one that cannot ask the client (its plugin imported no host function that does; a reload may have changed that): make the request again")

// directHost is the plugin.Host of a direct call.
type directHost struct {
	m    *Manager
	ctx  context.Context // the request's
	sink Sink

	// At the first notification, once makes the queue and starts the
	// goroutine that delivers; at end, it makes sure none starts.
	once sync.Once
	a    *attachment   // the queue; nil until then
	stop chan struct{} // closed at end: deliver what is left and return
	done chan struct{} // closed when that goroutine returned

	out Outcome // what direct returns
}

var _ plugin.Host = (*directHost)(nil)

func (h *directHost) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, errCannotAsk
}

func (h *directHost) Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, errCannotAsk
}

func (h *directHost) ListRoots(context.Context) (*mcp.ListRootsResult, error) {
	return nil, errCannotAsk
}

func (h *directHost) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return ErrNoElicitationComplete
}

func (h *directHost) Log(_ context.Context, params *mcp.LoggingMessageParams) error {
	h.push(note{log: params})
	return nil
}

// NotifyProgress sends the plugin's progress as it is: the request that
// waits is the one that started the call, so there is no token to
// replace (what a parked call's host does for a retry, progressFor).
func (h *directHost) NotifyProgress(_ context.Context, params *mcp.ProgressNotificationParams) error {
	p := *params
	h.push(note{progress: &p})
	return nil
}

// push queues n, making the queue and starting the goroutine that
// delivers at the first note: most calls send none, and pay for neither.
func (h *directHost) push(n note) {
	if h.sink == nil {
		return // the request takes no notifications
	}
	h.once.Do(func() {
		h.a = newAttachment(h.ctx, h.sink, nil) // its token is read only by a parked call's host
		h.stop, h.done = make(chan struct{}), make(chan struct{})
		go h.deliver()
	})
	if h.a == nil { // pushed after end
		h.m.stats.dropped.Add(1)
		return
	}
	h.m.stats.queue(h.a, n)
}

func (h *directHost) deliver() {
	defer close(h.done)
	defer func() {
		// A Sink that panics loses the call's other notifications, not the
		// process (a parked call's are handed over on the request's
		// goroutine, where the edge recovers).
		if recover() != nil {
			h.m.stats.dropped.Add(1)
		}
	}()
	for {
		select {
		case <-h.a.ready:
			h.a.deliver(&h.m.stats.dropped)
		case <-h.stop:
			h.a.deliver(&h.m.stats.dropped)
			return
		}
	}
}

// end closes the queue, if there is one (a note pushed later is dropped
// and counted), and waits until what was queued is handed to the Sink.
func (h *directHost) end() {
	h.once.Do(func() {}) // no queue is made after this
	if h.a != nil {
		h.a.close()
		close(h.stop)
		<-h.done
	}
}
