package workers_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/workers"
)

// Run never waits: functions that block all run at once, each on a
// worker; a worker that finished one runs the next.
func TestRun(t *testing.T) {
	p := workers.New()
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(8)
	done.Add(8)
	for range 8 {
		p.Run(func() {
			started.Done()
			<-release
			done.Done()
		})
	}
	started.Wait() // eight blocked functions: eight workers
	close(release)
	done.Wait()

	// The workers now idle take the next functions: no goroutine more.
	// (They may not be back at their select yet on a loaded machine: a
	// round that found none idle is tried again, for up to 10 s.)
	deadline := time.Now().Add(10 * time.Second)
	for {
		time.Sleep(10 * time.Millisecond)
		before := runtime.NumGoroutine()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			p.Run(wg.Done)
			wg.Wait()
		}
		after := runtime.NumGoroutine()
		if after <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after four functions on idle workers, %d before", after, before)
		}
	}
}

// A function run by a Pool runs on a worker of its own, and Run returns
// at once: wait for what it does as for any goroutine.
func ExamplePool() {
	p := workers.New()
	done := make(chan struct{})
	p.Run(func() { close(done) })
	<-done
	// Output:
}
