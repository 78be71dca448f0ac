package plugin

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Engine compiles plugins. All plugins of an engine share one compilation
// cache; each plugin gets its own wazero runtime so that its memory limit and
// its failures stay its own.
type Engine struct {
	cache wazero.CompilationCache
}

// NewEngine returns an engine that keeps compiled machine code in cacheDir,
// so that the second start of the same plugin skips compilation. An empty
// cacheDir keeps the cache in memory only.
func NewEngine(cacheDir string) (*Engine, error) {
	if cacheDir == "" {
		return &Engine{cache: wazero.NewCompilationCache()}, nil
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating compilation cache: %w", err)
	}
	c, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("opening compilation cache %s: %w", cacheDir, err)
	}
	return &Engine{cache: c}, nil
}

// DefaultCacheDir is the compilation cache under the user cache directory
// ($XDG_CACHE_HOME/hangar/compiled or its platform equivalent).
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "hangar", "compiled")
}

// Close releases the compilation cache. Plugins must be closed first.
func (e *Engine) Close(ctx context.Context) error { return e.cache.Close(ctx) }

// Options configure one plugin. The zero value of every limit means its
// default (see package config).
type Options struct {
	// Name identifies the plugin in errors and logs.
	Name string
	// Config is readable by the plugin through Extism's config_get.
	Config map[string]string
	Limits config.Limits
	Grants config.Grants
	// Logger receives the plugin's own log output and Hangar's diagnostics
	// about it. Nil means slog.Default().
	Logger *slog.Logger
}

// Events receives notifications a plugin sends that concern every session,
// not only the one whose call is running. The methods are called from
// within a plugin call and must not block on calls to the same plugin.
type Events interface {
	// ListChanged reports that the plugin's list of kind changed.
	ListChanged(kind ListKind)
	// ResourceUpdated reports that the resource at uri changed.
	ResourceUpdated(uri string)
}

// ListKind names one of the lists a plugin can change.
type ListKind int

const (
	ToolList ListKind = iota + 1
	ResourceList
	PromptList
)

func (k ListKind) String() string {
	switch k {
	case ToolList:
		return "tools"
	case ResourceList:
		return "resources"
	case PromptList:
		return "prompts"
	}
	return fmt.Sprintf("ListKind(%d)", int(k))
}

func withDefaults(l config.Limits) config.Limits {
	if l.MemoryPages == 0 {
		l.MemoryPages = uint32(config.DefaultMemory / 65536)
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = config.DefaultCallTimeout
	}
	if l.HostTimeout <= 0 {
		l.HostTimeout = config.DefaultHostTimeout
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = config.DefaultMaxOutput
	}
	if l.MaxInstances <= 0 {
		l.MaxInstances = max(2, 2*runtime.GOMAXPROCS(0))
	}
	return l
}

// Load compiles wasm and prepares its first instance, which also tells
// which interface the module speaks. The returned plugin is safe for
// concurrent use.
func (e *Engine) Load(ctx context.Context, wasm []byte, opts Options) (*Plugin, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Logger = opts.Logger.With("plugin", opts.Name)
	opts.Limits = withDefaults(opts.Limits)

	manifest := extism.Manifest{
		Wasm:         []extism.Wasm{extism.WasmData{Data: wasm}},
		Config:       opts.Config,
		AllowedHosts: opts.Grants.AllowedHosts,
		Memory:       &extism.ManifestMemory{MaxPages: opts.Limits.MemoryPages},
	}
	if len(opts.Grants.AllowedPaths) > 0 {
		manifest.AllowedPaths = make(map[string]string, len(opts.Grants.AllowedPaths))
		for _, m := range opts.Grants.AllowedPaths {
			host := m.Host
			if m.ReadOnly {
				host = "ro:" + host
			}
			manifest.AllowedPaths[host] = m.Guest
		}
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithCompilationCache(e.cache).
		WithMemoryLimitPages(opts.Limits.MemoryPages)

	p := &Plugin{name: opts.Name, opts: opts, log: opts.Logger}
	start := time.Now()
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig: rc,
		EnableWasi:    true,
	}, p.hostFunctions())
	if err != nil {
		return nil, fmt.Errorf("compiling plugin %s: %w", opts.Name, err)
	}
	p.log.Debug("compiled", "elapsed", time.Since(start))

	mc := wazero.NewModuleConfig().
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStdout(newLogWriter(p.log, slog.LevelInfo, "stdout")).
		WithStderr(newLogWriter(p.log, slog.LevelWarn, "stderr"))
	for k, v := range opts.Grants.Env {
		mc = mc.WithEnv(k, v)
	}
	p.pool = newPool(compiled, extism.PluginInstanceConfig{ModuleConfig: mc}, opts.Limits.MaxInstances, p.log)

	inst, err := p.pool.get(ctx)
	if err != nil {
		p.pool.close(ctx)
		return nil, fmt.Errorf("instantiating plugin %s: %w", opts.Name, err)
	}
	p.exports = detectExports(inst.p)
	p.iface, err = detectInterface(p.exports)
	p.pool.put(inst, true)
	if err != nil {
		p.pool.close(ctx)
		return nil, fmt.Errorf("plugin %s: %w", opts.Name, err)
	}
	return p, nil
}
