// Package servertest holds what the tests of the core and its edges share:
// real plugins, built from source in the run and loaded on one engine, and
// a quiet logger. Test packages that use it call testutil.Cleanup from
// their TestMain.
package servertest

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

var (
	engineOnce sync.Once
	engine     *plugin.Engine
	engineErr  error
)

// Logger drops diagnostics unless the test runs with -v.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Load builds the Go package pkg (relative to the repository's root) into
// a plugin and loads it, named name, on the engine the process's tests
// share. The plugin is closed at the end of the test.
func Load(t testing.TB, name, pkg string, limits config.Limits) *plugin.Plugin {
	t.Helper()
	return LoadWith(t, pkg, plugin.Options{Name: name, Limits: limits})
}

// LoadWith is Load with the plugin's options (its Logger, if nil, is
// Logger()).
func LoadWith(t testing.TB, pkg string, opts plugin.Options) *plugin.Plugin {
	t.Helper()
	engineOnce.Do(func() { engine, engineErr = plugin.NewEngine(testutil.CacheDir()) })
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = Logger()
	}
	p, err := engine.Load(context.Background(), wasm, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}
