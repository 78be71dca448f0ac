package plugin

import (
	"time"
)

// Parked calls.
//
// A call that waits for its client (sampling, elicitation, roots, or a
// 2026-07-28 call parked until the client's retry) keeps its instance: the
// guest is in the middle of its call. The pool counts such calls (parked)
// beside the calls waiting for an instance (queue), and ends a parked
// call's wait, oldest first, so that neither can hold the other back:
//
//   - once a call has waited holdGrace for an instance, one parked call
//     is ended for it: every waiting call that waited its grace is owed
//     one, and a call that parks while such calls wait is ended at once;
//   - while the parked calls' instances hold more than the budget (their
//     Extism memory grew before they parked), the oldest are ended until
//     the others fit.
//
// Ending a wait makes the host import fail with ErrHeld (hold.go); the
// guest goes on and returns, and its instance goes back to the pool, to
// the first waiting call, or closed if it does not fit the budget.

// parking is a call waiting for its client on an instance it holds. Its
// fields but inst and end are guarded by the pool's mu.
type parking struct {
	inst  *instance // nil: not known
	end   func()    // ends the wait with ErrHeld
	ended bool
	// until is when the pool will end the wait, if a waiting call reaches
	// its grace then (zero: not planned), for busy errors.
	until time.Time
}

// park counts a call that begins to wait for its client on the instance h
// holds, which the pool measures again (the call is stopped in a host
// import, on its own goroutine: its memories hold still); end ends the
// wait. grace is how long a call waiting for an instance lets a parked
// call keep one. The wait may be ended at once.
func (p *pool) park(h *holding, grace time.Duration, end func()) *parking {
	pk := &parking{end: end}
	p.mu.Lock()
	p.holdGrace = grace
	for inst := range p.busy {
		if inst.hold.Load() == h {
			size := instanceSize(inst)
			p.held = p.held - inst.size + size
			inst.size = size
			pk.inst = inst
			break
		}
	}
	p.parked = append(p.parked, pk)
	p.contend()
	p.mu.Unlock()
	return pk
}

// unpark ends the count of a parked call: its wait is over.
func (p *pool) unpark(pk *parking) {
	p.mu.Lock()
	for i, x := range p.parked {
		if x == pk {
			p.parked = append(p.parked[:i], p.parked[i+1:]...)
			break
		}
	}
	p.contend()
	p.mu.Unlock()
}

// contend ends the parked calls owed to the waiting calls and to the
// budget (see above), and arms the timer for the next. p.mu must be held.
func (p *pool) contend() {
	if len(p.parked) == 0 {
		if p.grace != nil {
			p.grace.Stop()
		}
		return
	}
	now := time.Now()
	due := 0 // the waiting calls that waited their grace: first in the queue
	for _, w := range p.queue {
		if now.Sub(w.since) < p.holdGrace {
			break
		}
		due++
	}
	ending, leaving := 0, uint64(0) // ended, not yet returned
	for _, pk := range p.parked {
		if pk.ended {
			ending++
			if pk.inst != nil {
				leaving += pk.inst.size
			}
		}
	}
	var next *parking // the oldest parked call left
	for _, pk := range p.parked {
		if pk.ended {
			continue
		}
		pk.until = time.Time{}
		if ending >= due && p.held-leaving <= p.budget {
			if next == nil {
				next = pk
			}
			continue
		}
		pk.ended = true
		pk.end()
		ending++
		if pk.inst != nil {
			leaving += pk.inst.size
		}
	}
	if next == nil || due >= len(p.queue) {
		if p.grace != nil {
			p.grace.Stop()
		}
		return
	}
	// The next waiting call to reach its grace ends the oldest parked call.
	next.until = p.queue[due].since.Add(p.holdGrace)
	if p.grace == nil {
		p.grace = time.AfterFunc(next.until.Sub(now), p.graceDue)
	} else {
		p.grace.Reset(next.until.Sub(now))
	}
}

// graceDue runs when a waiting call reaches its grace.
func (p *pool) graceDue() {
	p.mu.Lock()
	p.contend()
	p.mu.Unlock()
}
