package mrtr

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// This file holds what the tasks extension (internal/tasks) needs of a
// call beyond Serve: a request whose call may become a task (Begin), a
// way to follow a call's changes without polling (Next), and answers
// given through tasks/update rather than through a retry (Answer).

// Begin serves a request as Serve does, except that a call still running
// after within is left running rather than waited for: the call becomes a
// task. Begin starts the call (run, on a goroutine of its own, as Serve)
// and waits, with ctx, for its first event for at most within:
//
//   - if the call completes, fails or asks for input first, Begin returns
//     what Serve would (an Outcome, or an error) and a nil Call: the
//     request is answered directly, with input_required for input, since
//     input asked before a task exists is resolved over MRTR;
//   - if within passes while the call runs, Begin calls keep with the
//     call. If keep returns false (no room for a task), Begin waits on as
//     Serve would. If it returns true, the call is detached from the
//     request (its later notifications are dropped and counted, as for
//     any call no request waits for) and returned, running: the caller
//     holds it, follows it with Next, answers its input with Answer and
//     ends it with Cancel. keep is called with no lock held.
//
// With within zero or less, keep is called at once, and a kept call is a
// task whatever it does first (for a tool that says it runs long).
//
// A request with requestState is a retry: Begin serves it as Serve does
// (it never becomes a task) and returns a nil Call. If ctx ends while the
// call is running and not yet returned, the call is cancelled, as in
// Serve; once returned, the call no longer depends on ctx.
func (m *Manager) Begin(ctx context.Context, req Request, run Run, within time.Duration, keep func(*Call) bool) (*Call, *Outcome, error) {
	switch req.Method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return nil, nil, fmt.Errorf("%w: %s", ErrMethod, req.Method)
	}
	p, err := parseParams(req.Params)
	if err != nil {
		return nil, nil, err
	}
	if p.state != "" {
		out, err := m.resume(ctx, req, p)
		return nil, out, err
	}
	if p.responses != nil {
		return nil, nil, ErrResponsesWithoutState
	}
	if run == nil {
		return nil, nil, errors.New("mrtr: Begin of a request without requestState needs a Run")
	}
	if keep == nil {
		return nil, nil, errors.New("mrtr: Begin needs a keep function")
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	c := &Call{
		m:         m,
		id:        rand.Text(),
		principal: req.Principal,
		method:    req.Method,
		created:   m.now(),
		token0:    p.token,
		ctx:       cctx,
		cancel:    cancel,
		status:    Working,
		changed:   make(chan struct{}),
	}
	c.params = bytes.Clone(req.Params)
	a := newAttachment(ctx, req.Sink, p.token)
	c.attachLocked(a, req.Capabilities)
	go func() {
		var res any
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("internal error in the call: %v", r)
				}
			}()
			res, err = run(cctx, c.Host())
		}()
		c.finish(res, err)
	}()

	// detach hands the call to the caller, if keep takes it.
	detach := func() (*Call, *Outcome, error) {
		if !keep(c) {
			out, err := m.serve(ctx, c, a)
			return nil, out, err
		}
		c.mu.Lock()
		c.detachLocked(a)
		if c.status.Final() && c.use == "" {
			// It ended between the check and keep, while the request was
			// still attached: nothing else releases it.
			c.releaseLocked()
		}
		c.mu.Unlock()
		a.deliver(&m.stats.dropped)
		return c, nil, nil
	}
	if within <= 0 {
		// A call that runs long by its tool's word is a task at once,
		// whatever it does first.
		return detach()
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		c.mu.Lock()
		status, ch := c.status, c.changed
		c.mu.Unlock()
		if status != Working {
			out, err := m.serve(ctx, c, a)
			return nil, out, err
		}
		select {
		case <-ch:
		case <-a.ready:
			a.deliver(&m.stats.dropped)
		case <-ctx.Done():
			out, err := m.serve(ctx, c, a) // cancels the running call
			return nil, out, err
		case <-timer.C:
			return detach()
		}
	}
}

// Next returns the call's state now and a channel that is closed at its
// next change of status: what a follower of a task waits on, with no
// polling and no goroutine of the call's.
func (c *Call) Next() (Snapshot, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked(), c.changed
}

// Answer gives a call that a request no longer waits for (a task) the
// answers to its pending input requests, as tasks/update does. It checks
// them as Deliver does: keys that name no pending request are ignored, an
// answer of the wrong shape is a *ResponseError and delivers nothing, and
// a pending key without an answer delivers nothing (false). When every
// pending request has its answer, they are delivered, the call is Working
// again, and the round is over: its park timeout no longer runs (a later
// request for input starts a new round with its own). Answer reports
// false, with no error, for a call that does not wait for input.
func (c *Call) Answer(responses map[string]json.RawMessage) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != InputRequired {
		return false, nil
	}
	answers, complete, err := c.checkLocked(responses)
	if err != nil || !complete {
		return false, err
	}
	c.use = ""
	if c.timer != nil {
		c.timer.Stop()
	}
	c.deliverLocked(answers)
	c.m.stats.resumed.Add(1)
	return true, nil
}

// Release takes a final call out of the Manager's table at once. A call
// held as a task has no requestState out for a retry to claim, so its
// outcome need not wait there until the state of its last round expires
// (the park timeout). It does nothing to a call still running.
func (c *Call) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.status.Final() {
		return
	}
	c.use = ""
	c.releaseLocked()
}
