package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A target is one server under test.
type target struct {
	Key   string `json:"key"`   // native, hangar-go, hangar-wat, hangar-go-2026, hangar-wat-2026, hangar-go-sdk, hangar-wat-sdk, node-go, node-wat
	Label string `json:"label"` // for tables and the plot
	Class string `json:"class"` // a, b or c, as in the issue
}

var (
	tNative    = target{"native", "(a) go-sdk server, tool in Go", "a"}
	tHangarGo  = target{"hangar-go", "(b) Hangar, Go-PDK plugin", "b"}
	tHangarWAT = target{"hangar-wat", "(b) Hangar, WAT plugin", "b"}
	// Hangar with --no-fast-path: every request through the go-sdk, as
	// before the fast path (the "before" of the same run).
	tHangarGoSDK  = target{"hangar-go-sdk", "(b') Hangar, go-sdk only, Go-PDK plugin", "b"}
	tHangarWATSDK = target{"hangar-wat-sdk", "(b') Hangar, go-sdk only, WAT plugin", "b"}
	tNodeGo       = target{"node-go", "(c) Node peer, Go-PDK plugin", "c"}
	tNodeWAT      = target{"node-wat", "(c) Node peer, WAT plugin", "c"}
	// Hangar at MCP 2026-07-28, stateless: the server of hangar-go or
	// hangar-wat, called without a session (HTTP only). Neither (a), whose
	// go-sdk handler keeps sessions, nor the Node peer, whose TypeScript
	// SDK stops at 2025-11-25, speaks 2026-07-28.
	tHangarGo2026  = target{"hangar-go-2026", "(b) Hangar, Go-PDK plugin, 2026-07-28 stateless", "b"}
	tHangarWAT2026 = target{"hangar-wat-2026", "(b) Hangar, WAT plugin, 2026-07-28 stateless", "b"}
)

var allTargets = []target{tNative, tHangarGo, tHangarWAT, tHangarGo2026, tHangarWAT2026, tHangarGoSDK, tHangarWATSDK, tNodeGo, tNodeWAT}

func (e *env) targets() []target {
	ts := []target{tNative, tHangarGo, tHangarWAT, tHangarGo2026, tHangarWAT2026, tHangarGoSDK, tHangarWATSDK}
	if e.node != "" {
		ts = append(ts, tNodeGo, tNodeWAT)
	}
	if len(e.o.only) == 0 {
		return ts
	}
	var out []target
	for _, t := range ts {
		if e.o.only[t.Key] {
			out = append(out, t)
		}
	}
	return out
}

// mounted is a plugin file as a server is told to load it.
type mounted struct {
	path   string
	name   string // plugin name (Hangar); "" for the file name
	prefix string // tools become prefix_name; "" for none
	// maxInstances is Hangar's limits.max_instances; 0 for the default.
	maxInstances int
}

// argv is the command line that serves t with the given plugins (nil: the
// target's own single plugin) over HTTP (httpAddr != "") or stdio.
func (e *env) argv(t target, plugins []mounted, cacheDir, httpAddr string) []string {
	if plugins == nil {
		switch t.Key {
		case "hangar-go", "hangar-go-sdk", "node-go":
			plugins = []mounted{{path: e.goEcho}}
		case "hangar-wat", "hangar-wat-sdk", "node-wat":
			plugins = []mounted{{path: e.watEcho}}
		}
	}
	switch t.Class {
	case "a":
		a := []string{e.self, "-serve", "native"}
		if httpAddr != "" {
			a = append(a, "-http", httpAddr)
		}
		return a
	case "b":
		a := []string{e.hangar, "serve", "--cache-dir", cacheDir}
		if strings.HasSuffix(t.Key, "-sdk") {
			a = append(a, "--no-fast-path")
		}
		if httpAddr != "" {
			a = append(a, "--http", httpAddr)
		}
		if len(plugins) > 1 || plugins[0].prefix != "" || plugins[0].maxInstances > 0 {
			return append(a, "--config", e.hangarConfig(plugins))
		}
		return append(a, plugins[0].path)
	default:
		a := []string{e.node, e.peer}
		if httpAddr != "" {
			a = append(a, "--http", httpAddr)
		}
		for _, p := range plugins {
			if p.prefix != "" {
				a = append(a, p.prefix+"="+p.path)
			} else {
				a = append(a, p.path)
			}
		}
		return a
	}
}

var configSeq int

// hangarConfig writes a configuration file serving plugins and returns its
// path.
func (e *env) hangarConfig(plugins []mounted) string {
	var b strings.Builder
	b.WriteString("plugins:\n")
	for i, p := range plugins {
		name := p.name
		if name == "" {
			name = fmt.Sprintf("plugin%d", i)
		}
		fmt.Fprintf(&b, "  - name: %s\n    path: %s\n", name, strconv.Quote(p.path))
		if p.prefix != "" {
			fmt.Fprintf(&b, "    prefix: %s\n", p.prefix)
		}
		if p.maxInstances > 0 {
			fmt.Fprintf(&b, "    limits:\n      max_instances: %d\n", p.maxInstances)
		}
	}
	configSeq++
	path := filepath.Join(e.dir, fmt.Sprintf("hangar-%d.yaml", configSeq))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		panic(err)
	}
	return path
}

// logFile opens a fresh file for a server's stderr.
func (e *env) logFile(name string) (*os.File, error) {
	dir := filepath.Join(e.dir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.CreateTemp(dir, name+"-*.log")
}

// proc is a server process serving HTTP.
type proc struct {
	cmd  *exec.Cmd
	url  string
	log  string
	done chan struct{}
}

var urlRE = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`)

// startHTTP starts argv (which must serve HTTP on 127.0.0.1:0 and log its
// URL on stderr) and waits until it logs where it listens.
func (e *env) startHTTP(ctx context.Context, name string, argv []string) (*proc, error) {
	f, err := e.logFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = f
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, log: f.Name(), done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(p.log)
		if m := urlRE.Find(b); m != nil {
			p.url = string(m)
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before serving:\n%s", name, tail(b))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not start serving:\n%s", name, tail(b))
		}
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// waitReady waits until Hangar serving HTTP at p reports every plugin
// loaded: /readyz answers 200 or, from a binary without /readyz, its log
// says "ready".
// waitCompiled waits for Hangar to log readyLine: every plugin compiled, or
// compiled into the cache and waiting for its first call. /readyz answers
// before that (once every plugin is listed), so a section that runs without
// the cache coldstart warms would otherwise measure the compilation too.
func (p *proc) waitCompiled(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		if b, _ := os.ReadFile(p.log); readyLine.Match(b) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: never logged that it was ready (%s)", p.url, p.log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (p *proc) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	readyz := strings.TrimSuffix(p.url, "/mcp") + "/readyz"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return err
		}
		if resp, err := httpClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if b, _ := os.ReadFile(p.log); readyLine.Match(b) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready after 3 minutes (%s)", p.url, readyz)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitLogReady waits until Hangar's log (at level info) says that every
// plugin is loaded, for at most limit.
func waitLogReady(ctx context.Context, log string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		if b, _ := os.ReadFile(log); readyLine.Match(b) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no line saying every plugin is loaded after %s", log, limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the server with SIGTERM, then SIGKILL.
func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// The client side: go-sdk clients, one session per concurrent HTTP caller.

var httpClient = &http.Client{Transport: &http.Transport{
	MaxIdleConns:        4096,
	MaxIdleConnsPerHost: 4096,
	IdleConnTimeout:     time.Minute,
}}

// protocolVersion is what the go-sdk sessions of the bench ask for: the
// newest version with sessions, which every server here speaks. The
// stateless targets speak modernVersion without the go-sdk client
// (modernCallers).
const protocolVersion = "2025-11-25"

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "hangar-bench", Version: "1"}, nil)
}

func connectHTTP(ctx context.Context, url string) (*mcp.ClientSession, error) {
	return newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// openSessions connects n HTTP sessions.
func openSessions(ctx context.Context, url string, n int) ([]*mcp.ClientSession, error) {
	out := make([]*mcp.ClientSession, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = connectHTTP(ctx, url)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeSessions(out)
		return nil, err
	}
	return out, nil
}

func closeSessions(ss []*mcp.ClientSession) {
	var wg sync.WaitGroup
	for _, s := range ss {
		if s != nil {
			wg.Go(func() { s.Close() })
		}
	}
	wg.Wait()
}

// stdioServer is a server process spoken to over its stdin and stdout.
type stdioServer struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
	log     string
}

// startStdio starts argv and connects one session to it over stdio (the
// initialize handshake done).
func (e *env) startStdio(ctx context.Context, name string, argv []string) (*stdioServer, error) {
	f, err := e.logFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = f
	cs, err := newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		b, _ := os.ReadFile(f.Name())
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		return nil, fmt.Errorf("%s: %w\n%s", name, err, tail(b))
	}
	return &stdioServer{cmd: cmd, session: cs, log: f.Name()}, nil
}

func (s *stdioServer) pid() int { return s.cmd.Process.Pid }

// stop closes the session: the server sees the end of its input and exits.
func (s *stdioServer) stop() { s.session.Close() }

// memStatus reads the resident set size and its peak (VmRSS, VmHWM) of a
// process, in bytes.
func memStatus(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb int64
		fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// rssSampler tracks the largest VmRSS of a process until stopped.
type rssSampler struct {
	max  int64
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _ := memStatus(pid); rss > s.max {
				s.max = rss
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) finish() int64 {
	close(s.stop)
	<-s.done
	return s.max
}
