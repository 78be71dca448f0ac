package plugin

import (
	"context"
	"time"
)

// Where a guest can wait, and how the wait ends with its call.
//
// A guest stops only where it runs Hangar's code: at its fuel checks
// (guard.go) and in the host functions it calls. The fuel checks are in
// its loops and calls, so a guest that computes is stopped within a few
// tenths of a millisecond of its call's end; a guest that waits inside a
// host function is stopped only if that host function returns. Each one
// that can block does so on the call's context:
//
//   - WASI's poll_oneoff on a clock (Go's time.Sleep, Rust's
//     thread::sleep, a Go guest's scheduler when every goroutine sleeps)
//     calls the module's nanosleep, which wazero's default makes a plain
//     time.Sleep. Each instance has its own (callClock below): it sleeps
//     until the time asked for or the end of the running call, whichever
//     comes first, and in the second case stops the guest as the fuel
//     guard does. poll_oneoff on a file descriptor never blocks: the only
//     one it waits on is standard input, which is empty.
//   - fd_read and the other file functions reach only the directories a
//     plugin is granted (engine.go), where only regular files and
//     directories can be opened: a FIFO or a device, which could block
//     forever on open or read, is refused. Standard input is empty;
//     standard output and error go to the log, rate-limited (logwriter.go).
//   - http_request sends its request with the call's context (env.go), so
//     the connection, the request and the reading of the response all end
//     with the call.
//   - Hangar's imports that wait for the client (host.go) wait with the
//     call's context, bounded by the host timeout and the client hold
//     (hold.go); its notifications are sent with the call's context too.
//
// Once the call has ended, a guest that goes on running meets its next
// fuel check, which stops it.

// callClock is an instance's nanosleep. ctx is the context of the call
// the instance is running, set for the call's duration; an instance runs
// one call at a time, on one goroutine, and nanosleep is called on that
// goroutine, so no lock is needed.
type callClock struct {
	ctx context.Context
}

// sleep is the instance's sys.Nanosleep: it waits ns nanoseconds, or until
// the running call ends, and then stops the guest (wazero unwinds it, as
// for the fuel guard's stop). Outside a call it does not wait.
func (c *callClock) sleep(ns int64) {
	ctx := c.ctx
	if ctx == nil {
		return
	}
	if ctx.Err() != nil {
		panic(errStopped)
	}
	if ns <= 0 {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		panic(errStopped)
	}
}
