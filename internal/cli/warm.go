package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

type warmFlags struct {
	runtimeFlags
	config  string
	offline bool
}

func (f *warmFlags) register(fs *flag.FlagSet) {
	f.runtimeFlags.register(fs)
	fs.StringVar(&f.config, "config", "", "configuration file (YAML or JSON)")
	fs.BoolVar(&f.offline, "offline", false, "use no network for plugin sources: https:// and oci:// plugins must be in the cache (oci:// also in hangar.lock)")
}

var warmCmd = &command{
	name:  "warm",
	args:  "[--config FILE] [--cache-dir DIR] [--offline] [PLUGIN.wasm ...]",
	short: "compile plugins into the cache, then exit",
	long: `Warm loads every plugin of the configuration file, and any .wasm files named
on the command line, as serve would (resolving remote sources through
hangar.lock, the cache or the network, and checking signatures), compiles
each into the compilation cache (--cache-dir), and exits.

Run it when building a container image, with the cache directory inside
the image: serve then finds every plugin compiled and starts at once, and
writes nothing to the cache, so the image's file system may be read-only.
The cache is only valid for the same hangar binary, CPU architecture and
CPU features; serve copies a cache it cannot write to TMPDIR, so that what
it lacks can still be compiled.`,
	flags: func(fs *flag.FlagSet) { new(warmFlags).register(fs) },
}

func init() { warmCmd.run = runWarm }

func runWarm(ctx context.Context, env *Env, args []string) error {
	var f warmFlags
	fs := warmCmd.flagSet(env.Stderr)
	f.register(fs)
	files, err := warmCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	log, err := logger(env.Stderr, f.logLevel)
	if err != nil {
		return err
	}
	var specs []config.Plugin
	if f.config != "" {
		cfg, err := config.Load(f.config)
		if err != nil {
			return err
		}
		specs = cfg.Plugins
	}
	for _, file := range files {
		specs = append(specs, config.Single(file))
	}
	if err := uniqueNames(specs); err != nil {
		return err
	}
	if len(specs) == 0 {
		fmt.Fprintln(env.Stderr, "hangar warm: no plugins: give --config FILE or PLUGIN.wasm files")
		return errUsage
	}
	if f.cacheDir == "" {
		fmt.Fprintln(env.Stderr, "hangar warm: --cache-dir is empty: there is no cache to warm")
		return errUsage
	}
	ctx = withOffline(ctx, f.offline)
	e, err := plugin.NewEngine(f.cacheDir)
	if err != nil {
		return err
	}
	defer e.Close(context.Background())
	start := time.Now()
	plugins, err := loadPlugins(ctx, e, specs, log)
	if err != nil {
		return err
	}
	closeAll(ctx, plugins)
	for _, p := range plugins {
		p.Wait(ctx)
	}
	fmt.Fprintf(env.Stdout, "compiled %d plugins into %s in %s\n", len(plugins), f.cacheDir, time.Since(start).Round(time.Millisecond))
	return nil
}
