// Package workers runs functions on goroutines that outlive one call.
//
// A plugin call needs a deep stack (schema validation, the engine, the
// guest's host calls), which a new goroutine grows by copying, call after
// call: about a tenth of the CPU of a stdio tools/call, on the session
// fast path and on the edge of MCP 2026-07-28 alike. A worker that has
// run a function waits a while for the next one, its stack grown, and
// ends once it has been idle. There is no bound: a function never waits
// for a worker (it gets a new one when none is idle), so a function that
// blocks (a call parked for its client) holds its worker as it held its
// goroutine, and whatever bounds such functions bounds the workers.
package workers

import "time"

// Idle is how long an idle worker waits for another function before it
// ends, give or take one more Idle.
const Idle = 10 * time.Second

// A Pool runs functions on its workers. The zero Pool is not usable: make
// one with New.
type Pool struct {
	calls chan func() // to an idle worker
}

// New returns a Pool with no worker yet.
func New() *Pool { return &Pool{calls: make(chan func())} }

// Run runs f on an idle worker, or on a new one; it does not wait for f.
func (p *Pool) Run(f func()) {
	select {
	case p.calls <- f:
	default:
		go p.work(f)
	}
}

// work runs f and then the functions it is given, until it has been idle
// for a whole tick of Idle: between one and two of them. (A timer reset
// after every function would cost each its trip through the runtime's
// timers.)
func (p *Pool) work(f func()) {
	tick := time.NewTicker(Idle)
	defer tick.Stop()
	for ran := true; ; {
		if f != nil {
			f()
			ran = true
		}
		select {
		case f = <-p.calls:
		case <-tick.C:
			if !ran {
				return
			}
			ran, f = false, nil
		}
	}
}
