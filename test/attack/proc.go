package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// proc is a hangar process started by an attack, with its log (stderr).
type proc struct {
	a       *A
	cmd     *exec.Cmd
	log     *testutil.SyncBuffer
	started time.Time
	done    chan struct{} // closed when it has exited
	state   *os.ProcessState
	url     string // the MCP endpoint, for a server over HTTP
}

// procOpts are the ways of starting hangar.
type procOpts struct {
	env    []string  // added to the suite's environment
	nofile int       // the open-file limit (soft and hard); 0 leaves it
	stdin  io.Reader // nil: an empty stdin
	stdout io.Writer // nil: discarded
	xdg    string    // XDG_CACHE_HOME; "" means a new directory
}

// start runs hangar with args.
func (a *A) start(o *procOpts, args ...string) *proc {
	if o == nil {
		o = &procOpts{}
	}
	argv := append([]string{a.env.hangar}, args...)
	if o.nofile > 0 {
		// The shell lowers the limit, then becomes hangar (same pid).
		argv = append([]string{"/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, o.nofile)}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	xdg := o.xdg
	if xdg == "" {
		xdg = filepath.Join(a.TempDir(), "xdg")
	}
	cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+xdg), o.env...)
	cmd.Stdin, cmd.Stdout = o.stdin, o.stdout
	p := &proc{a: a, cmd: cmd, log: &testutil.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		a.Fatalf("starting hangar: %v", err)
	}
	p.started = time.Now()
	go func() {
		cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	a.mu.Lock()
	a.procs = append(a.procs, p)
	a.mu.Unlock()
	go p.guard()
	a.Cleanup(func() {
		p.kill()
		if a.verbose {
			logf("%s: log of hangar %s:\n%s", a.at.name, strings.Join(args, " "), p.log.String())
		}
	})
	return p
}

// maxRSS bounds the memory of every hangar the suite starts: one past it
// is killed and its attack fails, so that a defect that exhausts memory
// fails the suite instead of the machine.
const maxRSS = 2048 // MiB

func (p *proc) guard() {
	for {
		select {
		case <-p.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if rss := p.rss(); rss > maxRSS {
			p.a.Errorf("hangar (pid %d) took %.0f MiB of memory: killed", p.pid(), rss)
			p.kill()
			return
		}
	}
}

var urlRE = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/mcp)`)

// serve starts hangar serve with args over HTTP and waits for its URL.
func (a *A) serve(o *procOpts, args ...string) *proc {
	p := a.start(o, append([]string{"serve", "--cache-dir", a.env.compiled}, args...)...)
	limit := 90 * time.Second
	deadline := time.Now().Add(limit)
	for {
		if m := urlRE.FindStringSubmatch(p.log.String()); m != nil {
			p.url = m[1]
			return p
		}
		select {
		case <-p.done:
			a.Fatalf("hangar serve exited on start (%v):\n%s", p.state, p.log.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			a.Fatalf("hangar serve did not serve within %v:\n%s", limit, p.log.String())
		}
	}
}

// addr is the host:port the server listens on.
func (p *proc) addr() string {
	return strings.TrimSuffix(strings.TrimPrefix(p.url, "http://"), "/mcp")
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) signal(sig os.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.a.Fatalf("signal %v: %v", sig, err)
	}
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to limit for the process to exit and returns its exit
// code; the attack fails if it is still running then.
func (p *proc) wait(limit time.Duration) int {
	select {
	case <-p.done:
		return p.state.ExitCode()
	case <-time.After(limit):
		p.a.Fatalf("hangar still running %v later; log:\n%s", limit, tail(p.log.String(), 20))
	case <-p.a.ctx.Done():
		p.a.Fatalf("interrupted while waiting for hangar to exit")
	}
	return -1
}

// maxRSS is the peak resident set of an exited process, in MiB, as the
// kernel reports it: an upper bound, since it counts the memory of this
// process when it started the child too (Go starts children with vfork).
func (p *proc) maxRSS() float64 {
	if ru, ok := p.state.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return 0
}

// status reads a field of /proc/PID/status in KiB (VmRSS, VmHWM).
func (p *proc) status(field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// rss is the process's resident set now, in MiB.
func (p *proc) rss() float64 { return float64(p.status("VmRSS")) / 1024 }

// cpu is the processor time the process has used (user and system).
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// fds is the number of open file descriptors of the process.
func (p *proc) fds() int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid()))
	if err != nil {
		return -1
	}
	return len(entries)
}

// count is how many lines of the log contain s.
func (p *proc) count(s string) int {
	n := 0
	for line := range strings.Lines(p.log.String()) {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// waitLog waits until the log has at least n lines containing s.
func (p *proc) waitLog(s string, n int, limit time.Duration) {
	p.a.Until(limit, fmt.Sprintf("%d log lines with %q (log:\n%s)", n, s, tail(p.log.String(), 10)), func() bool {
		return p.count(s) >= n
	})
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// lines splits a log into its lines.
func lines(s string) []string {
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out []string
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
