package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/hangar-mcp/hangar/internal/catalog"
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
	fs.BoolVar(&f.offline, "offline", false, "use no network for plugin sources: https:// and oci:// plugins must be in the cache (oci:// also in the lock file)")
}

var warmCmd = &command{
	name:  "warm",
	args:  "[--config FILE] [--cache-dir DIR] [--offline] [PLUGIN.wasm ...]",
	short: "compile plugins into the cache, then exit",
	long: `Warm loads every plugin of the configuration file, and any .wasm files named
on the command line, as serve would (resolving remote sources through
hangar.lock, the cache or the network, and checking signatures), compiles
each into the compilation cache (--cache-dir), stores its lists in the
catalog cache beside it (so that serve offers them before it has opened a
single plugin), and exits.

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
		cfg, err := loadConfig(f.config)
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
	store := catalog.Open(f.cacheDir)
	for _, spec := range specs {
		if err := warmOne(ctx, e, store, spec, log); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.Stdout, "compiled %d plugins into %s in %s\n", len(specs), f.cacheDir, time.Since(start).Round(time.Millisecond))
	return nil
}

// warmOne compiles one plugin into e's cache and stores its lists in the
// catalog, under the key serve looks them up by.
func warmOne(ctx context.Context, e *plugin.Engine, store *catalog.Store, spec config.Plugin, log *slog.Logger) error {
	wasm, err := readPlugin(ctx, spec, log)
	if err != nil {
		return err
	}
	p, err := e.Load(ctx, wasm, pluginOptions(spec, log))
	if err != nil {
		return err
	}
	defer func() {
		p.Close(context.Background())
		p.Wait(context.Background())
	}()
	lists, err := p.ReadLists(ctx, plugin.AllLists)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", spec.Name, err)
	}
	if err := store.Put(catalog.KeyOf(wasm, spec), lists); err != nil {
		return fmt.Errorf("plugin %s: storing its lists in the catalog cache: %w", spec.Name, err)
	}
	return nil
}
