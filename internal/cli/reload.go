package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
)

// running is a plugin as loaded from its configuration, at the start (in
// the background) or by a reload (loaded and listed before the swap).
type running struct {
	spec   config.Plugin
	digest [sha256.Size]byte // of the module's bytes
	bg     *background
}

// mount is the plugin as the server presents it.
func (r running) mount() server.Mount {
	return server.Mount{Loading: r.bg.loading, Prefix: r.spec.Prefix, TaskModes: r.spec.Tasks}
}

// close closes the plugin; calls in flight finish first.
func (r running) close(ctx context.Context) { r.bg.close(ctx) }

// reloader keeps the server's plugins in step with the configuration file:
// on SIGHUP, or when the file changes, it loads the new configuration beside
// the old one and swaps it in; if anything is wrong, the old set goes on
// serving and the log says why.
type reloader struct {
	path    string          // configuration file
	extra   []config.Plugin // plugins named on the command line
	http    config.HTTP     // as served; not changed by a reload
	service [4]any          // the metrics, tracing, deployment and mrtr sections, as served
	engine  func() (*plugin.Engine, error)
	srv     *server.Server
	log     *slog.Logger
	metrics *metrics.Metrics // counts reloads

	mu      sync.Mutex
	current []running
}

// pollInterval is how often the configuration file is checked for changes.
const pollInterval = time.Second

// run reloads on SIGHUP and on changes to the file until ctx is done.
func (r *reloader) run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	var w fileWatch
	w.changed(r.path)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.log.Info("SIGHUP: reloading", "config", r.path)
			w.changed(r.path)
			r.reload(ctx)
		case <-t.C:
			if w.changed(r.path) {
				r.log.Info("configuration changed: reloading", "config", r.path)
				r.reload(ctx)
			}
		}
	}
}

// fileWatch notices changes to a file's content. It reads and hashes the
// file only when its size, modification time or identity (device and inode)
// differ from what it last saw, so that an unchanged file, however large,
// costs one stat per check.
type fileWatch struct {
	info   os.FileInfo // nil if the file could not be stat'ed
	hash   []byte
	hashes int // how many times the file was read
}

// changed reports whether the file's content differs from the last call's
// (the first call records it and reports true).
func (w *fileWatch) changed(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		fi = nil
	}
	if w.hashes > 0 && sameStat(fi, w.info) {
		return false
	}
	w.info = fi
	h := fileHash(path)
	w.hashes++
	if w.hashes > 1 && bytes.Equal(h, w.hash) {
		return false
	}
	w.hash = h
	return true
}

// sameStat reports whether a and b describe the same file, unchanged.
func sameStat(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode() && os.SameFile(a, b)
}

// ignoreHangup keeps SIGHUP from ending a server that has no configuration
// file to reload, until ctx is done.
func ignoreHangup(ctx context.Context, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Warn("SIGHUP ignored: there is no --config to reload")
		}
	}
}

// fileHash returns the SHA-256 of the file's content, or nil if it cannot
// be opened. Only a regular file of at most config.MaxFileSize bytes is
// read: the file is opened without blocking and checked on the open
// descriptor, so that a configuration replaced by a link to /dev/zero
// cannot exhaust memory, nor a FIFO stop the watch. Anything else hashes to
// a digest of its type and size, which no content has: the change is
// noticed, and the reload says why the file is refused.
func fileHash(path string) []byte {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	h := sha256.New()
	if !fi.Mode().IsRegular() || fi.Size() > config.MaxFileSize {
		fmt.Fprintf(h, "not read: %v, %d bytes", fi.Mode().Type(), fi.Size())
		return h.Sum(nil)
	}
	if _, err := io.Copy(h, io.LimitReader(f, config.MaxFileSize+1)); err != nil {
		return nil
	}
	return h.Sum(nil)
}

// reload builds the plugin set of the configuration file and swaps it in.
// Plugins whose configuration and module are unchanged are kept as they
// are, with their instances and state.
func (r *reloader) reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.swap(ctx)
	if err != nil {
		logErrorLines(r.log, "reload failed; the previous plugins go on serving", err)
	}
	r.metrics.Reloaded(err == nil)
	return err
}

// logErrorLines logs err at error level as one record per line of its
// message, so that several problems (a configuration's list, errors.Join)
// read one per line rather than as a single record with escaped newlines.
func logErrorLines(log *slog.Logger, msg string, err error) {
	for line := range strings.SplitSeq(err.Error(), "\n") {
		if strings.TrimSpace(line) != "" {
			log.Error(msg, "error", line)
		}
	}
}

func (r *reloader) swap(ctx context.Context) error {
	cfg, err := loadConfig(r.path)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(cfg.HTTP, r.http) {
		r.log.Warn("the http section changed; it takes effect at the next start")
	}
	if !reflect.DeepEqual([4]any{cfg.Metrics, cfg.Tracing, cfg.Deployment, cfg.MRTR}, r.service) {
		r.log.Warn("the metrics, tracing, deployment or mrtr section changed; it takes effect at the next start")
	}
	specs := append(cfg.Plugins, r.extra...)
	if err := uniqueNames(specs); err != nil {
		return err
	}

	next := make([]running, len(specs))
	var load []config.Plugin
	var loadAt []int
	for i, spec := range specs {
		next[i] = running{spec: spec, digest: moduleDigest(spec)}
		if old, ok := r.find(next[i]); ok {
			next[i].bg = old.bg
			continue
		}
		load = append(load, spec)
		loadAt = append(loadAt, i)
	}
	e, err := r.engine()
	if err != nil {
		return err
	}
	loaded, err := loadPlugins(ctx, e, load, r.log)
	if err != nil {
		return err
	}
	bgs, err := listLoaded(ctx, load, loaded)
	if err != nil {
		closeAll(ctx, loaded)
		return err
	}
	for j, b := range bgs {
		next[loadAt[j]].bg = b
	}
	ms := make([]server.Mount, len(next))
	for i, n := range next {
		ms[i] = n.mount()
	}
	if err := r.srv.Reload(ctx, ms); err != nil {
		closeAll(ctx, loaded)
		return err
	}

	kept := map[*background]bool{}
	for _, n := range next {
		kept[n.bg] = true
	}
	for _, old := range r.current {
		if !kept[old.bg] {
			old.close(ctx) // calls in flight finish first
		}
	}
	r.current = next
	setMemoryLimit(specs, r.log) // memlimit.go
	r.log.Info("reloaded", "plugins", len(next), "loaded", len(loaded), "kept", len(next)-len(loaded))
	return nil
}

// listLoaded reads the lists of the plugins a reload loaded, all at once,
// each within its call timeout (plugin.ReadLists): a plugin that sleeps or
// loops as it starts holds the reload for that long at most, not once per
// plugin. The plugins are handed to the server loaded, with their lists,
// which it then does not read again.
func listLoaded(ctx context.Context, specs []config.Plugin, plugins []*plugin.Plugin) ([]*background, error) {
	bgs := make([]*background, len(plugins))
	errs := make([]error, len(plugins))
	var wg sync.WaitGroup
	for i, p := range plugins {
		wg.Go(func() {
			live, err := p.ReadLists(ctx, plugin.AllLists)
			if err != nil {
				errs[i] = fmt.Errorf("plugin %s: %w", specs[i].Name, err)
				return
			}
			l := server.NewLoading(specs[i].Name, live, specs[i].Limits.CallTimeout)
			l.Loaded(p, live)
			done := make(chan struct{})
			close(done)
			bgs[i] = &background{spec: specs[i], loading: l, cancel: func() {}, done: done}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return bgs, nil
}

// find returns the running plugin with the same configuration and module.
// A plugin that failed to load in the background is not kept: the reload
// tries it again.
func (r *reloader) find(n running) (running, bool) {
	for _, old := range r.current {
		if old.bg.loading.Err() != nil {
			continue
		}
		if old.digest == n.digest && reflect.DeepEqual(old.spec, n.spec) {
			return old, true
		}
	}
	return running{}, false
}

// moduleDigest hashes a file plugin's module, so that replacing the file
// counts as a change; an unreadable file hashes as zero, and loading it
// reports the error. Remote plugins hash as zero: what they resolve to is
// pinned by their sha256 or by the lock file, both part of the spec.
func moduleDigest(spec config.Plugin) [sha256.Size]byte {
	if spec.Path == "" {
		return [sha256.Size]byte{}
	}
	b, err := os.ReadFile(spec.Path)
	if err != nil {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(b)
}

// closeCurrent closes the plugins being served, at shutdown.
func (r *reloader) closeCurrent(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.current {
		n.close(ctx)
	}
}
