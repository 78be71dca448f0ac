package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hangar-mcp/hangar/internal/source/registrytest"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// env is what the suite built once for every attack.
type env struct {
	o        *options
	root     string // repository root
	dir      string // the suite's temporary directory
	hangar   string // the binary under attack
	compiled string // a compilation cache the attacks share (--cache-dir)

	// The plugins, built from source.
	flood    string // internal/testplugins/flood: notification floods, busy calls, echo
	hello    string // examples/hello
	register string // internal/testplugins/register: notify_tool_list_changed floods
	egress   string // internal/testplugins/egress: stdout and stderr floods
	hostile  string // internal/testplugins/hostile: sandbox escapes
	mrtr     string // internal/testplugins/mrtr: tools, a prompt and a resource that elicit, sample, list roots

	regOnce sync.Once
	reg     string // the OCI registry binary
	regErr  error
}

// registryBinary returns the OCI registry the registry attacks run:
// $HANGAR_TEST_REGISTRY, test/bin/registry (scripts/deps.sh builds it), or
// one built now as scripts/deps.sh would.
func (e *env) registryBinary() (string, error) {
	e.regOnce.Do(func() {
		for _, p := range []string{os.Getenv("HANGAR_TEST_REGISTRY"), filepath.Join(e.root, "test", "bin", "registry")} {
			if fi, err := os.Stat(p); p != "" && err == nil && !fi.IsDir() {
				e.reg = p
				return
			}
		}
		gobin := filepath.Join(e.dir, "bin")
		cmd := exec.Command("go", "install", "-ldflags=-s -w", registrytest.Package+"@"+registrytest.Version)
		cmd.Dir = e.dir
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			e.regErr = fmt.Errorf("building the OCI registry: %v\n%s", err, out)
			return
		}
		e.reg = filepath.Join(gobin, "registry")
	})
	return e.reg, e.regErr
}

func setup(ctx context.Context, o *options) (*env, error) {
	e := &env{o: o, root: testutil.Root()}
	var err error
	if e.dir, err = os.MkdirTemp("", "hangar-attack-"); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.cleanup()
		}
	}()
	e.compiled = filepath.Join(e.dir, "compiled")

	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	if o.hangar != "" {
		if e.hangar, err = filepath.Abs(o.hangar); err != nil {
			return nil, err
		}
		if _, err := os.Stat(e.hangar); err != nil {
			return nil, err
		}
	} else {
		e.hangar = filepath.Join(e.dir, "hangar")
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", e.hangar, "./cmd/hangar")
			cmd.Dir = e.root
			if out, err := cmd.CombinedOutput(); err != nil {
				fail(fmt.Errorf("go build ./cmd/hangar: %v\n%s", err, out))
			}
		})
	}
	for pkg, dst := range map[string]*string{
		"./internal/testplugins/flood":    &e.flood,
		"./examples/hello":                &e.hello,
		"./internal/testplugins/register": &e.register,
		"./internal/testplugins/egress":   &e.egress,
		"./internal/testplugins/hostile":  &e.hostile,
		"./internal/testplugins/mrtr":     &e.mrtr,
	} {
		wg.Go(func() {
			p, err := testutil.Build(pkg)
			if err != nil {
				fail(err)
				return
			}
			*dst = p
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	// One start compiles the plugins into the shared cache, so that the
	// attacks' start-ups are quick and alike.
	warm := exec.CommandContext(ctx, e.hangar, "call", "--cache-dir", e.compiled, e.flood, "echo", `{"text":"warm"}`)
	warm.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(e.dir, "xdg"))
	if out, err := warm.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("warming the compilation cache: %v\n%s", err, out)
	}
	ok = true
	return e, nil
}

func (e *env) cleanup() {
	if e.o.keep {
		logf("kept %s", e.dir)
		return
	}
	// Files made read-only (cache entries) must not stop the removal.
	filepath.Walk(e.dir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			os.Chmod(path, 0o755)
		}
		return nil
	})
	os.RemoveAll(e.dir)
}

// since is a duration rounded for figures.
func since(t time.Time) time.Duration { return round(time.Since(t)) }

func round(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	default:
		return d.Round(10 * time.Millisecond)
	}
}
