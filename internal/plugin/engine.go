package plugin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Engine compiles plugins. All plugins of an engine share one compilation
// cache; each plugin gets its own wazero runtime so that its memory limit and
// its failures stay its own.
type Engine struct {
	cache wazero.CompilationCache
	sums  *cacheSums // checks the on-disk cache's entries; nil in memory
	fuel  *fuelCache // modules rewritten with the guard (guard.go)
	tier  tier       // compiler or interpreter (tier.go)

	compiling moduleLocks // see guard.go
}

// NewEngine returns an engine that keeps compiled machine code in cacheDir,
// so that the second start of the same plugin skips compilation. An empty
// cacheDir keeps the cache in memory only.
func NewEngine(cacheDir string) (*Engine, error) {
	if cacheDir == "" {
		return &Engine{cache: wazero.NewCompilationCache(), fuel: newFuelCache("")}, nil
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating compilation cache: %w", err)
	}
	sums := checkCompiledCache(cacheDir) // see cachecheck.go
	c, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("opening compilation cache %s: %w", cacheDir, err)
	}
	return &Engine{cache: c, sums: sums, fuel: newFuelCache(cacheDir)}, nil
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

// Events receives what a plugin reports that concerns every session, not
// only the one whose call is running. The methods are called while the
// instance that reported it is held: they must not call the plugin, and
// should return quickly.
type Events interface {
	// ListsChanged delivers the lists a call reported changed, read again
	// on the call's instance after the call returned, before the instance
	// served any other call. A call's notifications of one kind of list,
	// however many, make one reading.
	ListsChanged(l *Lists)
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
	// MaxInstances 0 is chosen once the module is known: see instanceCount.
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

	fsConfig, grants, roots, err := mountGrants(opts.Name, opts.Logger, opts.Grants.AllowedPaths) // ungranted.go
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", opts.Name, err)
	}
	rc := e.tier.runtimeConfig().
		WithCompilationCache(e.cache).
		WithMemoryLimitPages(opts.Limits.MemoryPages)

	p := &Plugin{name: opts.Name, opts: opts, log: opts.Logger, roots: roots}
	p.vars.limit = maxVarBytes
	start := time.Now()
	// wazero compiles the functions of one module on this many goroutines;
	// the plugins of a configuration are also loaded in parallel, and the
	// Go scheduler shares the cores out between them.
	cctx := experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	compiled, err := e.compile(cctx, wasm, rc, p) // with the guard (guard.go)
	if err != nil {
		p.closeRoots()
		return nil, fmt.Errorf("compiling plugin %s: %w", opts.Name, err)
	}
	compiled.grants = grants
	p.compileTime = time.Since(start)
	p.log.Debug("compiled", "elapsed", p.compileTime)
	e.sums.record()

	// Each instance sleeps with a nanosleep of its own, which ends with
	// its call (clock.go).
	mc := wazero.NewModuleConfig().
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithStdout(newLogWriter(p.log, slog.LevelInfo, "stdout")).
		WithStderr(newLogWriter(p.log, slog.LevelWarn, "stderr")).
		WithFSConfig(fsConfig)
	for k, v := range opts.Grants.Env {
		mc = mc.WithEnv(k, v)
	}
	p.pool = newPool(compiled, mc, opts.Limits.MemoryPages, 1)

	inst, err := p.pool.get(ctx, 0)
	if err != nil {
		p.Close(ctx)
		return nil, fmt.Errorf("instantiating plugin %s: %w", opts.Name, err)
	}
	p.exports = detectExports(compiled)
	p.iface, err = detectInterface(p.exports)
	p.stateless = compiled.has(StatelessExport)
	p.asks = importsAsking(compiled.compiled)
	p.pool.put(inst, true)
	if err != nil {
		p.Close(ctx)
		return nil, fmt.Errorf("plugin %s: %w", opts.Name, err)
	}
	if p.opts.Limits.MaxInstances <= 0 {
		p.opts.Limits.MaxInstances = instanceCount(p.stateless)
	}
	// A stateless plugin's idle instances all go after a while; one that
	// keeps state keeps one, which holds its state.
	minIdle := 1
	if p.stateless {
		minIdle = 0
	}
	p.pool.setShape(p.opts.Limits.MaxInstances, minIdle)
	p.log.Debug("instances", "max", p.opts.Limits.MaxInstances, "stateless", p.stateless)
	return p, nil
}

// Warm compiles wasm into the engine's compilation cache, as Load would,
// and releases it: it keeps no machine code and starts no instance, so
// that a later Load of the same module (the first call of a plugin
// compiled on demand) reads its machine code from the cache instead of
// compiling it. It reports how long compiling took.
func (e *Engine) Warm(ctx context.Context, wasm []byte, opts Options) (time.Duration, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Logger = opts.Logger.With("plugin", opts.Name)
	opts.Limits = withDefaults(opts.Limits)
	rc := e.tier.runtimeConfig().
		WithCompilationCache(e.cache).
		WithMemoryLimitPages(opts.Limits.MemoryPages)
	// The host modules' functions refer to a plugin; this one never runs.
	p := &Plugin{name: opts.Name, opts: opts, log: opts.Logger}
	start := time.Now()
	cctx := experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	compiled, err := e.compile(cctx, wasm, rc, p)
	if err != nil {
		return 0, fmt.Errorf("compiling plugin %s: %w", opts.Name, err)
	}
	elapsed := time.Since(start)
	compiled.close(ctx)
	e.sums.record()
	return elapsed, nil
}

const (
	// maxHTTPResponse bounds the body of one http_request response (Extism's
	// default), and so the host memory one such call can take; the
	// plugin's memory limit bounds it further.
	maxHTTPResponse = 50 << 20
	// maxVarBytes bounds the variables of a plugin (var_set), shared by
	// its instances (see sharedVars); Extism's default.
	maxVarBytes = 1 << 20
)

// Granted directories.
//
// Extism mounts allowed paths with wazero's DirFS, which resolves a
// guest path by joining it to the host directory and lets the host follow
// symbolic links: a plugin granted a writable directory can create a link
// to "../../anything" and read or write through it. Hangar mounts each
// granted directory itself, through os.Root, which refuses every path that
// resolves outside the directory, through ".." or through a symbolic link,
// whoever made it, with no window between check and use. Plugins may not
// create symbolic links at all, so that a link a plugin made cannot mislead
// other programs that use the directory. A read-only grant refuses every
// change with EROFS. Only regular files and directories can be opened: a
// FIFO, a socket or a device in a granted directory is refused with EPERM,
// since reading one can block beyond the call's end (clock.go).

// mountFS returns the file system configuration mounting each granted
// directory at its guest path, and the roots it opened, which the caller
// closes once the module is gone. No grants mean no file system at all.
func mountFS(mounts []config.Mount) (wazero.FSConfig, []*os.Root, error) {
	cfg := wazero.NewFSConfig()
	var roots []*os.Root
	for _, m := range mounts {
		root, err := os.OpenRoot(m.Host)
		if err != nil {
			for _, r := range roots {
				r.Close()
			}
			return nil, nil, fmt.Errorf("opening granted directory: %w", err)
		}
		roots = append(roots, root)
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(&confinedFS{root: root, readOnly: m.ReadOnly}, m.Guest)
	}
	return cfg, roots, nil
}

// confinedFS is one granted directory, as a wazero file system.
type confinedFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	readOnly bool
}

func (c *confinedFS) String() string { return c.root.Name() }

// rel turns a path as wazero passes it (relative to the mount, cleaned, ""
// or "/" for the mount itself) into a name for os.Root.
func rel(path string) string {
	path = strings.TrimLeft(path, "/")
	if path == "" {
		return "."
	}
	return path
}

// toErrno maps an error of os or os.Root to a WASI errno. os.Root's refusal
// of a path that leaves the directory is not a system error; it is EPERM,
// as wazero answers for a path with a leading "..".
func toErrno(err error) experimentalsys.Errno {
	errno := experimentalsys.UnwrapOSError(err)
	if errno == experimentalsys.EIO {
		var se syscall.Errno
		if !errors.As(err, &se) {
			return experimentalsys.EPERM
		}
	}
	return errno
}

const (
	accessMode = experimentalsys.O_RDWR | experimentalsys.O_WRONLY
	writeFlags = accessMode | experimentalsys.O_APPEND | experimentalsys.O_CREAT | experimentalsys.O_TRUNC
)

func osFlags(f experimentalsys.Oflag) int {
	var o int
	switch {
	case f&experimentalsys.O_RDWR != 0:
		o = os.O_RDWR
	case f&experimentalsys.O_WRONLY != 0:
		o = os.O_WRONLY
	default:
		o = os.O_RDONLY
	}
	if f&experimentalsys.O_APPEND != 0 {
		o |= os.O_APPEND
	}
	if f&experimentalsys.O_CREAT != 0 {
		o |= os.O_CREATE
	}
	if f&experimentalsys.O_EXCL != 0 {
		o |= os.O_EXCL
	}
	if f&experimentalsys.O_TRUNC != 0 {
		o |= os.O_TRUNC
	}
	if f&(experimentalsys.O_SYNC|experimentalsys.O_DSYNC|experimentalsys.O_RSYNC) != 0 {
		o |= os.O_SYNC
	}
	return o
}

func (c *confinedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	name := rel(path)
	if c.readOnly && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && flag&accessMode != 0 {
		return nil, experimentalsys.EISDIR
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		if fi, err := c.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	// Opened without waiting (a FIFO would wait for its other end), then
	// refused unless it is a regular file or a directory: reading a FIFO or
	// a device can block for good, where the call's end cannot reach it
	// (clock.go).
	f, err := c.root.OpenFile(name, osFlags(flag)|oNonblock, perm)
	if err != nil {
		return nil, toErrno(err)
	}
	if fi, err := f.Stat(); err != nil || !(fi.Mode().IsRegular() || fi.IsDir()) {
		f.Close()
		if err != nil {
			return nil, toErrno(err)
		}
		return nil, experimentalsys.EPERM
	}
	// wazero's adapter for fs.FS files does reading, seeking, writing and
	// directory listing on f; it reopens a directory to rewind it, through
	// the root.
	inner, errno := (&sysfs.AdaptFS{FS: &openedFS{root: c.root, first: f}}).OpenFile(name, experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		f.Close()
		return nil, errno
	}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		if isDir, errno := inner.IsDir(); errno != 0 || !isDir {
			inner.Close()
			if errno == 0 {
				errno = experimentalsys.ENOTDIR
			}
			return nil, errno
		}
	}
	return &confinedFile{File: inner, fs: c, name: name, flag: flag, file: f}, 0
}

// openedFS hands out a file already opened, then opens through the root.
type openedFS struct {
	root  *os.Root
	first *os.File
}

func (o *openedFS) Open(name string) (fs.File, error) {
	if f := o.first; f != nil {
		o.first = nil
		return f, nil
	}
	return o.root.Open(name)
}

func (c *confinedFS) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := c.root.Lstat(rel(path))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (c *confinedFS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := c.root.Stat(rel(path))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (c *confinedFS) Readlink(path string) (string, experimentalsys.Errno) {
	dst, err := c.root.Readlink(rel(path))
	if err != nil {
		return "", toErrno(err)
	}
	return filepath.ToSlash(dst), 0
}

func (c *confinedFS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if c.readOnly {
		return experimentalsys.EROFS
	}
	errno := toErrno(c.root.Mkdir(rel(path), perm))
	if errno == experimentalsys.ENOTDIR {
		errno = experimentalsys.ENOENT
	}
	return errno
}

func (c *confinedFS) Chmod(path string, perm fs.FileMode) experimentalsys.Errno {
	if c.readOnly {
		return experimentalsys.EROFS
	}
	return toErrno(c.root.Chmod(rel(path), perm))
}

func (c *confinedFS) Rename(from, to string) experimentalsys.Errno {
	if c.readOnly {
		return experimentalsys.EROFS
	}
	return toErrno(c.root.Rename(rel(from), rel(to)))
}

func (c *confinedFS) Rmdir(path string) experimentalsys.Errno { return c.remove(path, true) }

func (c *confinedFS) Unlink(path string) experimentalsys.Errno { return c.remove(path, false) }

// remove removes the directory (dir) or the other file at path, and fails
// with ENOTDIR or EISDIR when path is the other kind.
func (c *confinedFS) remove(path string, dir bool) experimentalsys.Errno {
	if c.readOnly {
		return experimentalsys.EROFS
	}
	name := rel(path)
	fi, err := c.root.Lstat(name)
	switch {
	case err != nil:
		return toErrno(err)
	case dir && !fi.IsDir():
		return experimentalsys.ENOTDIR
	case !dir && fi.IsDir():
		return experimentalsys.EISDIR
	}
	return toErrno(c.root.Remove(name))
}

func (c *confinedFS) Link(oldName, newName string) experimentalsys.Errno {
	if c.readOnly {
		return experimentalsys.EROFS
	}
	// A hard link to a symbolic link is a new symbolic link.
	if fi, err := c.root.Lstat(rel(oldName)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return experimentalsys.EPERM
	}
	return toErrno(c.root.Link(rel(oldName), rel(newName)))
}

// Symlink is refused: see the comment above mountFS.
func (c *confinedFS) Symlink(_, _ string) experimentalsys.Errno {
	if c.readOnly {
		return experimentalsys.EROFS
	}
	return experimentalsys.EPERM
}

func (c *confinedFS) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	if c.readOnly {
		return experimentalsys.EROFS
	}
	return toErrno(c.root.Chtimes(rel(path), utime(atim), utime(mtim)))
}

// utime converts a WASI timestamp; the zero time leaves the file's unchanged.
func utime(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// confinedFile is a file or directory opened in a confinedFS: wazero's
// adapter, plus what the adapter leaves unimplemented.
type confinedFile struct {
	experimentalsys.File
	fs   *confinedFS
	name string
	flag experimentalsys.Oflag
	file *os.File // as opened; a directory the adapter rewound was reopened
}

func (f *confinedFile) IsAppend() bool { return f.flag&experimentalsys.O_APPEND != 0 }

func (f *confinedFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	if f.fs.readOnly {
		return experimentalsys.EROFS
	}
	return toErrno(f.file.Truncate(size))
}

func (f *confinedFile) Sync() experimentalsys.Errno { return toErrno(f.file.Sync()) }

func (f *confinedFile) Datasync() experimentalsys.Errno { return f.Sync() }

func (f *confinedFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.fs.readOnly {
		return experimentalsys.EROFS
	}
	return toErrno(f.fs.root.Chtimes(f.name, utime(atim), utime(mtim)))
}
