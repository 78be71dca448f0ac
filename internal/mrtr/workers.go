package mrtr

import "time"

// workers run the calls: a call runs on a goroutine of its own, apart
// from the request that started it, since it may outlive it (parked), and
// each call's goroutine used to be a new one. A plugin call needs a deep
// stack (the engine, the guest), which a new goroutine grows by copying,
// call after call: about a tenth of the CPU of a 2026-07-28 tools/call
// over stdio. A worker that finished a call waits for another, with its
// stack grown, before it ends. A parked call holds its worker, as it held
// its goroutine: there are as many workers as calls run at once.
type workers struct {
	calls chan func() // to an idle worker
}

// workerIdle is how long an idle worker waits for another call, give or
// take one more (work).
const workerIdle = 10 * time.Second

// run runs f on an idle worker, or on a new one.
func (w *workers) run(f func()) {
	select {
	case w.calls <- f:
	default:
		go w.work(f)
	}
}

// work runs f and then the calls it is given, until it has been idle for
// a whole tick of workerIdle: between one and two of them. (A ticker,
// not a timer reset after every call, which would cost each call a trip
// through the runtime's timers.)
func (w *workers) work(f func()) {
	tick := time.NewTicker(workerIdle)
	defer tick.Stop()
	for ran := true; ; {
		if f != nil {
			f()
			ran = true
		}
		select {
		case f = <-w.calls:
		case <-tick.C:
			if !ran {
				return
			}
			ran, f = false, nil
		}
	}
}
