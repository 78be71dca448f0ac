package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// A is what an attack works with: its context, the suite's environment,
// and the record of its result, figures and errors. Fatalf ends the
// attack (from its own goroutine only).
type A struct {
	ctx     context.Context // ends at the attack's limit
	env     *env
	at      *attack
	verbose bool

	mu       sync.Mutex
	result   string
	figures  []figure
	errors   []string
	cleanups []func()
	procs    []*proc
}

// Figure records a measured value under name, in the order given.
func (a *A) Figure(name, format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.figures = append(a.figures, figure{name, fmt.Sprintf(format, args...)})
}

// Result sets the one-line summary of what happened.
func (a *A) Result(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.result = fmt.Sprintf(format, args...)
}

// Errorf records a failure; the attack goes on.
func (a *A) Errorf(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errors = append(a.errors, fmt.Sprintf(format, args...))
}

// Fatalf records a failure and ends the attack.
func (a *A) Fatalf(format string, args ...any) {
	a.Errorf(format, args...)
	runtime.Goexit()
}

// Logf prints a line of the attack's progress with -v.
func (a *A) Logf(format string, args ...any) {
	if a.verbose {
		logf("%s: "+format, append([]any{a.at.name}, args...)...)
	}
}

// Check records a failure unless ok.
func (a *A) Check(ok bool, format string, args ...any) bool {
	if !ok {
		a.Errorf(format, args...)
	}
	return ok
}

// Cleanup runs f when the attack ends, the last registered first.
func (a *A) Cleanup(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cleanups = append(a.cleanups, f)
}

func (a *A) runCleanups() {
	for {
		a.mu.Lock()
		n := len(a.cleanups)
		if n == 0 {
			a.mu.Unlock()
			return
		}
		f := a.cleanups[n-1]
		a.cleanups = a.cleanups[:n-1]
		a.mu.Unlock()
		f()
	}
}

// TempDir returns a new directory under the suite's, for this attack.
func (a *A) TempDir() string {
	d, err := os.MkdirTemp(a.env.dir, a.at.name+"-")
	if err != nil {
		a.Fatalf("%v", err)
	}
	return d
}

// killAll kills the attack's processes, for an attack past its limit.
func (a *A) killAll() {
	a.mu.Lock()
	procs := append([]*proc(nil), a.procs...)
	a.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
}

// Sleep waits d, or until the attack's limit.
func (a *A) Sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-a.ctx.Done():
		a.Fatalf("interrupted: %v", context.Cause(a.ctx))
	}
}

// Until polls cond every interval until it holds, failing the attack with
// what after limit.
func (a *A) Until(limit time.Duration, what string, cond func() bool) time.Duration {
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			a.Fatalf("%s: not within %v", what, limit)
		}
		a.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func (a *A) outcome(took time.Duration) *outcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := &outcome{
		ID: a.at.id, Name: a.at.name, Attempt: a.at.attempt,
		Passed: len(a.errors) == 0, Result: a.result, Figures: a.figures, Errors: a.errors,
		Seconds: took.Round(100 * time.Millisecond).Seconds(),
	}
	if r.Result == "" && !r.Passed {
		r.Result = "failed"
	}
	return r
}
