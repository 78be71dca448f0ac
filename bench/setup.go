package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// env is what the benchmark built and found.
type env struct {
	o       *options
	root    string // repository root
	dir     string // temporary directory
	gobin   string
	self    string // this binary: the native server and the profiled Hangar
	hangar  string // the hangar command
	goEcho  string // Go-PDK echo plugin
	watEcho string // WAT echo plugin
	node    string // Node 22 binary of bench/node; "" when the Node peer is skipped
	peer    string // bench/node/server.mjs
	cache   string // compilation cache for the throughput runs, warmed once
	machine machine
}

func (e *env) cleanup() {
	if e.o.keep {
		logf("kept %s", e.dir)
		return
	}
	os.RemoveAll(e.dir)
}

// setup builds everything the benchmark runs.
func setup(ctx context.Context, o *options) (*env, error) {
	e := &env{o: o}
	var err error
	if e.root, err = repoRoot(); err != nil {
		return nil, err
	}
	if e.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if e.gobin, err = goBinary(); err != nil {
		return nil, err
	}
	if e.dir, err = os.MkdirTemp("", "hangar-bench-"); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.cleanup()
		}
	}()
	e.cache = filepath.Join(e.dir, "cache")

	start := time.Now()
	e.hangar = filepath.Join(e.dir, "hangar")
	if o.hangar != "" {
		if e.hangar, err = filepath.Abs(o.hangar); err != nil {
			return nil, err
		}
	} else if err := e.goBuild(ctx, nil, "-o", e.hangar, "./cmd/hangar"); err != nil {
		return nil, err
	}
	e.goEcho = filepath.Join(e.dir, "echo-go.wasm")
	if o.needGoPlugin() {
		if err := e.goBuild(ctx, []string{"GOOS=wasip1", "GOARCH=wasm"}, "-buildmode=c-shared", "-trimpath", "-o", e.goEcho, "./bench/plugins/echo"); err != nil {
			return nil, err
		}
	}
	e.watEcho = filepath.Join(e.dir, "echo-wat.wasm")
	if err := runCmd(ctx, e.root, nil, "wat2wasm", filepath.Join("internal", "testplugins", "wat", "echo.wat"), "-o", e.watEcho); err != nil {
		return nil, fmt.Errorf("%w (wat2wasm is in Debian's wabt package)", err)
	}
	if !o.noNode {
		if err := e.setupNode(ctx); err != nil {
			return nil, err
		}
	}
	logf("built hangar, plugins and the Node peer in %s", time.Since(start).Round(time.Millisecond))
	e.machine = describeMachine(ctx, e)
	ok = true
	return e, nil
}

// needGoPlugin reports whether anything to run uses the Go-PDK plugin.
func (o *options) needGoPlugin() bool {
	if o.profileDir != "" {
		return o.profileTarget == "go"
	}
	if o.sections["scaling"] || o.sections["coldstart"] || o.sections["rss"] || o.sections["instances"] || o.sections["guard"] || o.sections["instructions"] {
		return true
	}
	return len(o.only) == 0 || o.only["hangar-go"] || o.only["hangar-go-sdk"] || o.only["node-go"]
}

func (e *env) goBuild(ctx context.Context, extraEnv []string, args ...string) error {
	return runCmd(ctx, e.root, extraEnv, e.gobin, append([]string{"build"}, args...)...)
}

// setupNode installs bench/node's npm packages (Node 22 among them) when
// they are missing or older than package-lock.json.
func (e *env) setupNode(ctx context.Context) error {
	dir := filepath.Join(e.root, "bench", "node")
	e.peer = filepath.Join(dir, "server.mjs")
	e.node = filepath.Join(dir, "node_modules", "node", "bin", "node")
	stamp := filepath.Join(dir, "node_modules", ".installed")
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	if st, err := os.Stat(stamp); err == nil && !lock.ModTime().After(st.ModTime()) {
		if _, err := os.Stat(e.node); err == nil {
			return nil
		}
	}
	logf("installing the Node peer's npm packages (npm ci in bench/node)")
	if err := runCmd(ctx, dir, nil, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"); err != nil {
		return fmt.Errorf("installing bench/node: %w", err)
	}
	return os.WriteFile(stamp, nil, 0o644)
}

func runCmd(ctx context.Context, dir string, extraEnv []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// repoRoot is the directory of Hangar's go.mod at or above the working
// directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/hangar-mcp/hangar\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the benchmark inside the Hangar repository (go run ./bench)")
		}
		dir = parent
	}
}

func goBinary() (string, error) {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); runtime.GOROOT() != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("go")
}

// distinctCopy writes wasm with a custom section naming copy n appended, so
// that each copy is a different module to the compilation cache (as ten
// different plugins would be) while behaving identically.
func distinctCopy(wasm []byte, path string, n int) error {
	name := "hangar-bench"
	payload := fmt.Sprintf("copy %d", n)
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	out := append(bytes.Clone(wasm), 0) // custom section id
	out = binary.AppendUvarint(out, uint64(len(body)))
	out = append(out, body...)
	return os.WriteFile(path, out, 0o644)
}

// machine describes where the numbers were taken.
type machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	Memory  string `json:"memory"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	Node    string `json:"node"`
	Commit  string `json:"commit"`
	Started string `json:"started"`
	// Load averages (1 min) when the run started and ended: other work on
	// the machine skews the numbers.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end,omitempty"`
}

// loadAvg is the 1-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func describeMachine(ctx context.Context, e *env) machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Started: time.Now().UTC().Format(time.RFC3339), LoadStart: loadAvg()}
	var load float64
	if _, err := fmt.Sscan(m.LoadStart, &load); err == nil && load > 0.5 {
		logf("warning: load average %s before the run: other work on this machine will skew the numbers", m.LoadStart)
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "MemTotal" {
				var kb int64
				fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
				m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if e.node != "" {
		if out, err := exec.CommandContext(ctx, e.node, "--version").Output(); err == nil {
			m.Node = strings.TrimSpace(string(out))
		}
	}
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = e.root
	if out, err := cmd.Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}
