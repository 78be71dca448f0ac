package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Who holds an instance, and for how long a call may hold one while it
// waits for its client.
//
// A call that waits for its client (sampling, elicitation, roots) keeps its
// instance: the guest is in the middle of its call. A plugin with one
// instance, the default, is then busy for every other session, for up to
// the host timeout. Two bounds keep that short:
//
//   - host_timeout bounds every wait for the client (2 minutes by default);
//   - once another call has waited holdFor for an instance of the plugin
//     (holdGrace, 2 seconds, or less with a short call timeout), the
//     oldest call waiting for its client loses its instance: its import
//     fails with ErrHeld, as it would at its host timeout, and the guest
//     goes on and returns, so that the waiting call gets the instance
//     within its own wait, which is the call timeout. A call that begins
//     to wait for its client while such a call waits loses it at once
//     (pool_park.go).
//
// A call that finds no free instance in time fails with ErrBusy, and the
// error says who holds each instance (Call.Holder, which names the request
// without a secret) and until when.

// ErrHeld reports a wait for the client ended because another call waited
// for the plugin's instance, or for its memory; the host import answers
// it as an error.
var ErrHeld = errors.New("another request is waiting for this plugin")

// holdGrace is how long a call waiting for an instance lets a call that
// waits for its client keep one: long enough for a client that answers at
// once (a program, a cached answer), short enough that a few parked calls
// in turn keep a plugin's other callers waiting seconds, not minutes.
const holdGrace = 2 * time.Second

// holding describes the call an instance serves, for the busy errors of
// others.
type holding struct {
	holder, id string // Call.Holder and Call.ID, for who
	refresh    bool
	export     string
	budget     *budget

	mu        sync.Mutex
	waitUntil time.Time // while the call waits for its client: how long it may
	park      *parking  // while the call waits for its client
}

// init readies a zero holding (one a callState holds) for the call c.
func (h *holding) init(c *Call, export string, b *budget, refresh bool) {
	h.holder, h.id, h.refresh, h.export, h.budget = c.Holder, c.ID, refresh, export, b
}

// who names the holder, for the callers it keeps waiting. It is made when
// it is read, which few calls are.
func (h *holding) who() string {
	switch {
	case h.refresh:
		return "Hangar, reading the lists the plugin said changed"
	case h.holder != "":
		return h.holder
	case h.id != "":
		return "request " + h.id
	}
	return "a call with no request id"
}

// describe says who holds the instance and until when, as of now. The
// pool's mu must be held (it guards the parking's plan).
func (h *holding) describe(now time.Time) string {
	h.mu.Lock()
	waitUntil, pk := h.waitUntil, h.park
	h.mu.Unlock()
	if pk != nil {
		if until := pk.until; !until.IsZero() && (waitUntil.IsZero() || until.Before(waitUntil)) {
			waitUntil = until
		}
		if waitUntil.IsZero() || pk.ended {
			waitUntil = now
		}
		return fmt.Sprintf("%s (%s), waiting for its client's answer until %s (%s from now)", h.who(), h.export, stamp(waitUntil), waitUntil.Sub(now).Round(time.Second))
	}
	until := now.Add(h.budget.left())
	return fmt.Sprintf("%s (%s), running until %s at the latest (%s from now)", h.who(), h.export, stamp(until), until.Sub(now).Round(time.Second))
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05Z") }

// holdFor is how long a call waiting for an instance lets a call waiting
// for its client keep one: holdGrace, or less, so that the waiting call
// gets it within its own wait (the call timeout).
func (p *Plugin) holdFor() time.Duration {
	return min(holdGrace, p.opts.Limits.HostTimeout, p.opts.Limits.CallTimeout/2)
}

// heldHost is the Host of a running call: the session's, with each request
// to the client counted as parked in the pool (see above) and recorded for
// busy errors.
type heldHost struct {
	Host
	p *Plugin
	h *holding
}

func (hh heldHost) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ctx, done := hh.hold(ctx)
	if ctx.Err() != nil { // ended as it parked: the client is not asked
		return nil, done(context.Cause(ctx))
	}
	res, err := hh.Host.CreateMessage(ctx, params)
	return res, done(err)
}

func (hh heldHost) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ctx, done := hh.hold(ctx)
	if ctx.Err() != nil { // ended as it parked: the client is not asked
		return nil, done(context.Cause(ctx))
	}
	res, err := hh.Host.Elicit(ctx, params)
	return res, done(err)
}

func (hh heldHost) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	ctx, done := hh.hold(ctx)
	if ctx.Err() != nil { // ended as it parked: the client is not asked
		return nil, done(context.Cause(ctx))
	}
	res, err := hh.Host.ListRoots(ctx)
	return res, done(err)
}

// hold returns the context of one wait for the client, which the pool ends
// when a waiting call or the budget needs the instance (pool_park.go).
// done ends the wait and returns the error to report: err, or ErrHeld with
// the time held when the pool ended it.
func (hh heldHost) hold(ctx context.Context) (context.Context, func(error) error) {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	until, _ := ctx.Deadline()
	hh.h.mu.Lock()
	hh.h.waitUntil = until
	hh.h.mu.Unlock()
	pk := hh.p.pool.park(hh.h, hh.p.holdFor(), func() { cancel(ErrHeld) })
	hh.h.mu.Lock()
	hh.h.park = pk
	hh.h.mu.Unlock()
	return ctx, func(err error) error {
		hh.p.pool.unpark(pk)
		hh.h.mu.Lock()
		hh.h.waitUntil, hh.h.park = time.Time{}, nil
		hh.h.mu.Unlock()
		held := errors.Is(context.Cause(ctx), ErrHeld)
		cancel(nil)
		if err != nil && held {
			hh.p.log.Info("a wait for the client ended early: another request waits for the plugin", "holder", hh.h.who(), "held", time.Since(start).Round(time.Millisecond))
			return fmt.Errorf("no answer from the client within %s while %w (plugin %s has no free instance or memory; a call may wait for its client %s while another call waits for the plugin): answer sooner, or call again", time.Since(start).Round(time.Millisecond), ErrHeld, hh.p.name, hh.p.holdFor())
		}
		return err
	}
}

// busyError is the ErrBusy of a call that found no free instance within
// wait: who holds each instance, and until when. p.mu must be held.
func (p *pool) busyError(wait time.Duration) error {
	now := time.Now()
	var holders []string
	for inst := range p.busy {
		if h := inst.hold.Load(); h != nil {
			holders = append(holders, h.describe(now))
		} else {
			holders = append(holders, "a call starting or ending")
		}
	}
	n, live := p.max, p.live()
	what := fmt.Sprintf("all %d instances", n)
	switch {
	case live < n:
		// Fewer than max_instances: the memory budget held the others back
		// (pool.go).
		what = fmt.Sprintf("all %d instances that fit its memory budget (%d MiB)", live, p.budget>>20)
	case n == 1:
		what = "its only instance"
	}
	msg := fmt.Sprintf("%s stayed busy for %s", what, wait)
	if len(holders) > 0 {
		msg += ", held by " + strings.Join(holders, "; ")
	}
	return fmt.Errorf("%w: %s", ErrBusy, msg)
}
