package mrtr

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// This file holds what the tasks extension (internal/tasks) needs of a
// call beyond Serve: a request whose call may become a task (Begin, with
// its TaskPolicy), a way to follow a call's changes without polling
// (Next), answers given through tasks/update rather than through a retry
// (Answer), and the end of a task's call (Stop, Release).

// ErrTaskMethod: Begin was given a request of a method that cannot
// become a task. The tasks extension makes tasks of tools/call only; the
// edge serves any other request with Serve.
var ErrTaskMethod = errors.New("mrtr: only tools/call may become a task")

// TaskMode says when Begin makes a call a task. Its zero value is
// TaskNever: a call becomes a task only when its policy says so.
type TaskMode uint8

// The modes of a TaskPolicy.
const (
	// TaskNever: the request is served as by Serve.
	TaskNever TaskMode = iota
	// TaskAuto: a call still working After its request (the first or a
	// retry) began to wait becomes a task; one that ends or asks for
	// input first is answered directly (input over MRTR, as the
	// extension wants input resolved before a task exists).
	TaskAuto
	// TaskAfterInput: as TaskAuto on the first request; a retry whose
	// answers leave the call working makes it a task at once (a tool that
	// gathers its input over MRTR and then runs long: the extension's
	// MRTR to tasks composition).
	TaskAfterInput
	// TaskAlways: the call is a task at once, whatever it does first (a
	// tool that says it runs long: its input, if any, goes through
	// tasks/get and tasks/update).
	TaskAlways
)

// TaskPolicy is the edge's choice for one request: its Mode, and for
// TaskAuto and TaskAfterInput the threshold After (more than zero).
type TaskPolicy struct {
	Mode  TaskMode
	After time.Duration
}

func (p TaskPolicy) check() error {
	switch p.Mode {
	case TaskNever, TaskAlways:
		return nil
	case TaskAuto, TaskAfterInput:
		if p.After <= 0 {
			return fmt.Errorf("mrtr: a task policy with a threshold needs After > 0, not %s", p.After)
		}
		return nil
	}
	return fmt.Errorf("mrtr: unknown task mode %d", p.Mode)
}

// Begin serves a request as Serve does, except that, as policy says, a
// call may be left running rather than waited for: the call becomes a
// task. Begin waits, with ctx, for the call's next event:
//
//   - if the call completes, fails, or (unless policy says a task at
//     once) asks for input first, Begin returns what Serve would (an
//     Outcome, or an error) and a nil Call: the request is answered
//     directly, with input_required over MRTR for input;
//   - when policy says the call is to be a task (after the threshold, or
//     at once), Begin calls keep with the call. If keep returns false (no
//     room for a task), Begin waits on as Serve would. If it returns
//     true, the call is detached from the request (its later
//     notifications are dropped and counted, as for any call no request
//     waits for) and returned, running: the caller holds it, follows it
//     with Next, answers its input with Answer and ends it with Stop and
//     Release. keep is called with no lock held, at most once; it may
//     start the caller's follower of the call.
//
// A request with requestState is a retry: its answers are checked and
// delivered as by Serve, and the wait for the call's next event is the
// same, so that a retry may become a task too. Only tools/call may
// become a task (ErrTaskMethod). A request whose ctx is done never makes
// a task. If ctx ends while the call is running and not yet returned,
// the call is cancelled, as in Serve; once returned, the call no longer
// depends on ctx.
func (m *Manager) Begin(ctx context.Context, req Request, run Run, policy TaskPolicy, keep func(*Call) bool) (*Call, *Outcome, error) {
	if req.Method != "tools/call" {
		return nil, nil, fmt.Errorf("%w, not %s", ErrTaskMethod, req.Method)
	}
	if err := policy.check(); err != nil {
		return nil, nil, err
	}
	if keep == nil {
		return nil, nil, errors.New("mrtr: Begin needs a keep function")
	}
	if policy.Mode == TaskNever {
		out, err := m.Serve(ctx, req, run)
		return nil, out, err
	}
	p, err := parseParams(req.Params)
	if err != nil {
		return nil, nil, err
	}
	if p.state != "" {
		now := policy.Mode == TaskAfterInput || policy.Mode == TaskAlways
		var kept *Call
		out, err := m.accept(ctx, req, p, func(c *Call, a *attachment) (*Outcome, error) {
			var out *Outcome
			var err error
			kept, out, err = m.await(ctx, c, a, now, policy.After, keep)
			return out, err
		})
		return kept, out, err
	}
	if p.responses != nil {
		return nil, nil, ErrResponsesWithoutState
	}
	if run == nil {
		return nil, nil, errors.New("mrtr: Begin of a request without requestState needs a Run")
	}
	c, a, err := m.launch(ctx, req, p, run)
	if err != nil {
		return nil, nil, err
	}
	return m.await(ctx, c, a, policy.Mode == TaskAlways, policy.After, keep)
}

// await waits for the next event of c for the request a, as serve does,
// and makes the call a task if keep takes it: at once if now (whatever
// the call does, unless it ended), else once it has been working for
// within. It is the wait of a first request and of a retry alike.
func (m *Manager) await(ctx context.Context, c *Call, a *attachment, now bool, within time.Duration, keep func(*Call) bool) (*Call, *Outcome, error) {
	var timeout <-chan time.Time
	if !now {
		timer := time.NewTimer(within)
		defer timer.Stop()
		timeout = timer.C
	}
	late := false // within has passed
	for {
		c.mu.Lock()
		status, ch := c.status, c.changed
		c.mu.Unlock()
		switch {
		case ctx.Err() != nil, status.Final(), status == InputRequired && !now:
			// Answered directly; serve cancels a running call whose
			// request is gone.
			out, err := m.serve(ctx, c, a)
			return nil, out, err
		case now || late:
			if !keep(c) {
				out, err := m.serve(ctx, c, a)
				return nil, out, err
			}
			c.mu.Lock()
			c.detachLocked(a)
			if c.status.Final() && c.use == "" {
				// It ended between the check and keep, while the request
				// was still attached: nothing else releases it.
				c.releaseLocked()
			}
			c.mu.Unlock()
			a.deliver(&m.stats.dropped) // what the call sent before it became a task
			return c, nil, nil
		}
		select {
		case <-ch:
		case <-a.ready:
			a.deliver(&m.stats.dropped)
		case <-ctx.Done():
		case <-timeout:
			late = true
		}
	}
}

// Next returns the call's state now and a channel that is closed at its
// next change: of status, or of its pending input requests. It is what a
// follower of a task waits on, with no polling and no goroutine of the
// call's.
func (c *Call) Next() (Snapshot, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked(), c.changed
}

// Answer gives a call that a request no longer waits for (a task) the
// answers to some or all of its pending input requests, as tasks/update
// does, and returns how many it delivered. Keys that name no pending
// request are ignored; an answer of the wrong shape is a *ResponseError
// and nothing of the set is delivered. Each valid answer goes to the
// host import waiting for it at once, and its key is no longer pending;
// the call stays InputRequired while other keys are. When none is left,
// the call is Working and its round is over: the park timeout no longer
// runs, and the call no longer counts against max_parked and
// max_parked_per_principal (it waits for nobody; the caller's own caps
// bound its tasks), until it asks again. Answer reports 0 for a call
// that does not wait for input.
func (c *Call) Answer(responses map[string]json.RawMessage) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != InputRequired {
		return 0, nil
	}
	answers := make(map[*input]json.RawMessage, len(c.pending))
	for key, in := range c.pending {
		raw, ok := responses[key]
		if !ok {
			continue
		}
		a, err := in.check(raw)
		if err != nil {
			return 0, err
		}
		answers[in] = a
	}
	if len(answers) == 0 {
		return 0, nil
	}
	for in, a := range answers {
		in.answer <- a // buffered; each input is answered once
		delete(c.pending, in.key)
	}
	if len(c.pending) > 0 {
		c.setLocked(InputRequired) // the same status, fewer keys: wakes Next's waiters
		return len(answers), nil
	}
	c.use = ""
	c.releaseLocked() // stops the park timer, frees the parked slot, leaves the table
	c.setLocked(Working)
	c.m.stats.resumed.Add(1)
	return len(answers), nil
}

// Stop ends the call with status Cancelled and cause, and reports
// whether it was still running (false: it had already ended, and nothing
// changed): the plugin's host imports return, the plugin's call is
// interrupted and its instance goes back to its pool.
func (c *Call) Stop(cause error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status.Final() {
		return false
	}
	c.endLocked(Cancelled, nil, cause)
	return true
}

// Release is for a final call held as a task: it takes the call out of
// the Manager's table at once (no requestState is out for a retry to
// claim its outcome), and ends the plugin's execution if it is still
// running: a call that failed while its plugin was not waiting for
// input (an input request refused) would otherwise run on until its
// plugin returns, held by nobody. It does nothing to a call still
// running.
func (c *Call) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.status.Final() {
		return
	}
	c.use = ""
	c.releaseLocked()
	if !c.finished {
		cause := c.err
		if cause == nil {
			cause = ErrCallEnded
		}
		c.cancel(cause)
	}
}

// DeriveKeys returns keys for another use of the Manager's state keys
// (Options.Key, then Options.PreviousKeys), each HMAC-SHA256(key, label):
// the label keeps them apart from the state keys and from each other's
// uses, and they rotate with the state keys.
func (m *Manager) DeriveKeys(label string) [][]byte {
	out := make([][]byte, 0, len(m.sealer.keys))
	for _, k := range m.sealer.keys {
		h := hmac.New(sha256.New, k)
		h.Write([]byte(label))
		out = append(out, h.Sum(nil))
	}
	return out
}
