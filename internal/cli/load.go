package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// runtimeFlags are the flags every command that runs plugins takes.
type runtimeFlags struct {
	cacheDir string
	logLevel string
}

func (f *runtimeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cacheDir, "cache-dir", plugin.DefaultCacheDir(), "directory for compiled plugins and the lists they offer (empty: no disk cache)")
	fs.StringVar(&f.logLevel, "log-level", "info", "diagnostics on stderr: debug, info, warn or error")
}

// setFlag collects repeated --set key=value plugin config values.
type setFlag map[string]string

func (s setFlag) String() string { return "" }

func (s setFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	s[k] = val
	return nil
}

// loadPlugins compiles and starts every configured plugin, in parallel.
// On error, the plugins already started are closed.
func loadPlugins(ctx context.Context, e *plugin.Engine, specs []config.Plugin, log *slog.Logger) ([]*plugin.Plugin, error) {
	migrateLocks(specs, log) // before the loads below read and write the lock files
	plugins := make([]*plugin.Plugin, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			wasm, err := readPlugin(ctx, spec, log)
			if err == nil {
				plugins[i], err = e.Load(ctx, wasm, pluginOptions(spec, log))
			}
			errs[i] = pluginError(spec.Name, err)
		})
	}
	wg.Wait()
	// Compiling leaves hundreds of megabytes of garbage behind; give it
	// back to the system now, once, rather than over the next minutes.
	defer debug.FreeOSMemory()
	if err := errors.Join(errs...); err != nil {
		closeAll(ctx, plugins)
		return nil, err
	}
	return plugins, nil
}

func closeAll(ctx context.Context, plugins []*plugin.Plugin) {
	for _, p := range plugins {
		if p != nil {
			p.Close(ctx)
		}
	}
}
