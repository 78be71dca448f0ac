// Command attack runs Hangar's attack suite: every hostile client, bad
// input and fault of issue 9, against the hangar binary serving on
// 127.0.0.1, as an attacker would do it (raw HTTP, stalled readers,
// floods, tampered files, signals). Each attack is bounded in count and
// time, checks its result and records its figures; the suite ends with an
// "N passed, M failed" line and exits non-zero if any attack failed.
//
//	go run ./test/attack                       # builds hangar and the plugins, runs everything
//	go run ./test/attack -hangar ./hangar      # against a binary built elsewhere
//	go run ./test/attack -run 'reload|lock'    # the attacks whose name matches
//	go run ./test/attack -report docs/security.md
//
// -report writes the table of attempts, results and figures: into the
// file between the lines <!-- BEGIN attack-report --> and
// <!-- END attack-report --> when it has them (docs/security.md does), as
// JSON for a .json file, and as a Markdown table otherwise.
//
// The plugins are built from source with the internal/testutil builders,
// which share their output with the Go tests of the same run when
// HANGAR_TEST_RUN_DIR is set (scripts/test.sh sets it). The registry attack
// runs the OCI registry of $HANGAR_TEST_REGISTRY (scripts/deps.sh builds
// it into test/bin), or builds one.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	hangar string
	run    *regexp.Regexp
	report string
	keep   bool
	v      bool
}

func main() {
	var o options
	var run string
	flag.StringVar(&o.hangar, "hangar", "", "the hangar binary to attack (default: built from ./cmd/hangar)")
	flag.StringVar(&run, "run", "", "run only the attacks whose name matches this regular expression")
	flag.StringVar(&o.report, "report", "", "write the table of results to this file (see the package doc)")
	flag.BoolVar(&o.keep, "keep", false, "keep the working directory (binaries, configurations, logs)")
	flag.BoolVar(&o.v, "v", false, "print each attack's log as it runs")
	list := flag.Bool("list", false, "list the attacks and exit")
	flag.Parse()
	slices.SortStableFunc(attacks, func(x, y *attack) int { return compareIDs(x.id, y.id) })
	if *list {
		for _, at := range attacks {
			fmt.Printf("%-6s %-22s %s\n", at.id, at.name, at.attempt)
		}
		return
	}
	if run != "" {
		re, err := regexp.Compile(run)
		if err != nil {
			fmt.Fprintln(os.Stderr, "attack: -run:", err)
			os.Exit(2)
		}
		o.run = re
	}
	os.Exit(suite(&o))
}

// attack is one attempt of the suite.
type attack struct {
	id      string // its place in issue 9: "3.2"
	name    string // short, for -run
	attempt string // what the attacker does, for the report
	// limit bounds the attack's running time (default 3 minutes, for
	// attacks that take seconds on a quiet machine); an attack still
	// running then fails.
	limit time.Duration
	// background attacks wait on slow deadlines (a fetch's two minutes):
	// they start first and run beside the others, which they do not load.
	background bool
	run        func(a *A)
}

// attacks is every attack, in the order of issue 9. Each file a_*.go adds
// its section's.
var attacks []*attack

func register(at ...*attack) { attacks = append(attacks, at...) }

// compareIDs orders attack ids ("4.10" after "4.9") numerically, and a
// part's letters after its number ("15.2b" after "15.2").
func compareIDs(x, y string) int {
	xs, ys := strings.Split(x, "."), strings.Split(y, ".")
	for i := range min(len(xs), len(ys)) {
		xn, xl := splitNumber(xs[i])
		yn, yl := splitNumber(ys[i])
		if xn != yn {
			return xn - yn
		}
		if c := strings.Compare(xl, yl); c != 0 {
			return c
		}
	}
	return len(xs) - len(ys)
}

// splitNumber splits "2b" into 2 and "b".
func splitNumber(s string) (int, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(s[:i])
	return n, s[i:]
}

// outcome is what an attack did, for the summary and the report.
type outcome struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Attempt string   `json:"attempt"`
	Passed  bool     `json:"passed"`
	Result  string   `json:"result"`
	Figures []figure `json:"figures"`
	Errors  []string `json:"errors,omitempty"`
	Seconds float64  `json:"seconds"`
}

type figure struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func suite(o *options) int {
	// A signal ends the run, and the children with it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	e, err := setup(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack: setup:", err)
		return 2
	}
	defer e.cleanup()
	logf("set up in %v (%s, GOMAXPROCS %d)", time.Since(start).Round(time.Millisecond), e.hangar, runtime.GOMAXPROCS(0))

	var selected []*attack
	for _, at := range attacks {
		if o.run == nil || o.run.MatchString(at.name) || o.run.MatchString(at.id) {
			selected = append(selected, at)
		}
	}
	if len(selected) == 0 {
		fmt.Fprintln(os.Stderr, "attack: no attack matches -run")
		return 2
	}
	results := make([]*outcome, len(selected))
	var bg sync.WaitGroup
	for i, at := range selected {
		if at.background {
			bg.Add(1)
			go func() {
				defer bg.Done()
				results[i] = runAttack(ctx, e, at, o)
			}()
		}
	}
	for i, at := range selected {
		if !at.background && ctx.Err() == nil {
			results[i] = runAttack(ctx, e, at, o)
		}
	}
	bg.Wait()

	passed, failed := 0, 0
	var done []*outcome
	for i, r := range results {
		if r == nil { // interrupted before it ran
			r = &outcome{ID: selected[i].id, Name: selected[i].name, Attempt: selected[i].attempt, Errors: []string{"not run: interrupted"}}
		}
		if r.Passed {
			passed++
		} else {
			failed++
		}
		done = append(done, r)
	}
	if o.report != "" {
		if err := writeReport(o.report, done, time.Since(start)); err != nil {
			fmt.Fprintln(os.Stderr, "attack: -report:", err)
			failed++
		} else {
			logf("report written to %s", o.report)
		}
	}
	for _, r := range done {
		if !r.Passed {
			fmt.Printf("FAIL %s %s: %s\n", r.ID, r.Name, strings.Join(r.Errors, "; "))
		}
	}
	fmt.Printf("attack suite: %d passed, %d failed (%v)\n", passed, failed, time.Since(start).Round(time.Second))
	if failed > 0 {
		return 1
	}
	return 0
}

// runAttack runs one attack in its own goroutine, bounded by its limit.
func runAttack(ctx context.Context, e *env, at *attack, o *options) *outcome {
	limit := at.limit
	if limit == 0 {
		limit = 3 * time.Minute
	}
	actx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	a := &A{ctx: actx, env: e, at: at, verbose: o.v}
	start := time.Now()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer func() {
			if v := recover(); v != nil {
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				a.Errorf("panic: %v\n%s", v, buf)
			}
		}()
		defer a.runCleanups()
		at.run(a)
	}()
	select {
	case <-finished:
	case <-actx.Done():
		a.Errorf("still running after %v (%v)", limit, context.Cause(actx))
		a.killAll() // its processes; the goroutine then ends on its own
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			a.Errorf("did not end after its processes were killed")
		}
	}
	r := a.outcome(time.Since(start))
	status := "ok  "
	if !r.Passed {
		status = "FAIL"
	}
	fmt.Printf("%s %-6s %-22s %6.1fs  %s\n", status, at.id, at.name, r.Seconds, r.Result)
	for _, f := range r.Figures {
		fmt.Printf("       %s: %s\n", f.Name, f.Value)
	}
	for _, err := range r.Errors {
		fmt.Printf("       error: %s\n", indent(err))
	}
	return r
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n              ")
}

// progress receives the suite's own messages.
var progress io.Writer = os.Stderr

func logf(format string, args ...any) {
	fmt.Fprintf(progress, "attack: "+format+"\n", args...)
}
