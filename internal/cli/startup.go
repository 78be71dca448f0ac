package cli

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hangar-mcp/hangar/internal/catalog"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/source"
)

// serve's start (docs/startup.md).
//
// Each plugin is resolved (read, or downloaded), then its lists are found
// the quickest way there is:
//
//  1. in the catalog cache, by the module's digest and the configuration's
//     hash (package catalog);
//  2. else, for a plugin that can do nothing outside Hangar (no hosts, no
//     writable directory), by running it in wazero's interpreter, which
//     prepares a module in a fraction of the compiler's time;
//  3. else by compiling it.
//
// Once every plugin has its lists the server starts, offering them. A
// plugin found in 1 or 2 is then compiled when its configuration says
// (config.Plugin.Compile):
//
//   - lazy (the default): on its first call, which waits for it (the
//     server's Loading is loaded on demand). Until then the plugin holds
//     no machine code and no instance, and counts as ready. One listed in
//     the interpreter (no catalog entry: most likely its machine code is
//     not in the compilation cache either) is compiled once in the
//     background, into the cache only, so that its first call finds it
//     there; its lists then go to the catalog.
//   - eager: in the background, after every interpreter run and once the
//     start has every plugin's lists (unless it waits for a compilation
//     in 3 anyway); calls wait for it.
//
// Each plugin compiled has its lists read and stored in the catalog, and
// the server tells clients if they differ from those it offered. A
// failure before a plugin has lists stops the start, as it always did; a
// failure after is reported by the plugin's calls and by the server's
// Readiness.
//
// No plugin's code holds the others: the start waits for a plugin's own
// listing (its code running, in the interpreter or compiled) for at most
// listWait. A plugin still running then (one that sleeps or loops as it
// starts) is served as loading with no lists, and joins when it has them
// (the server tells clients the lists changed); if it fails, its calls and
// Readiness say why, and the others serve on. The listing is itself
// bounded by the plugin's call timeout (plugin.ReadLists). The start still
// waits for what Hangar does (reading, fetching and compiling modules),
// with the health probes answered meanwhile (serve.go), and compilation
// stops waiting for the interpreter runs once one of them is that slow.

// starter loads the plugins of one start.
type starter struct {
	engine   func() (*plugin.Engine, error) // the compiler's, which may still be opening
	cacheDir string
	store    *catalog.Store
	log      *slog.Logger
	progress *progress

	interpMu sync.Mutex
	interp   *plugin.Engine // for step 2, created on first use

	listing      sync.WaitGroup // plugins whose lists are not found yet (steps 1 and 2)
	compileFirst atomic.Int32   // plugins that must be compiled to be listed

	// listWait bounds the start's wait for a plugin's code to list it; 0
	// means startListWait.
	listWait time.Duration
	results  chan listed   // what each plugin reports to the start
	listed   chan struct{} // closed once listing is zero
	slow     chan struct{} // closed once a plugin's listing took listWait
	slowOnce sync.Once

	mu      sync.Mutex
	pending map[string]bool // plugins whose lists the start waits for

	// warmTurn is held by the plugin whose machine code is being compiled
	// into the cache for its first call (onDemand).
	warmTurn chan struct{}
}

// startListWait is how long the start waits for a plugin's code to list
// it before it serves without that plugin.
var startListWait = 10 * time.Second

// notListed reports the plugins the start still waits for, for /readyz
// before the server is built.
func (st *starter) notListed() map[string]string {
	st.mu.Lock()
	defer st.mu.Unlock()
	m := map[string]string{}
	for name := range st.pending {
		m[name] = "listing"
	}
	return m
}

// waitListed waits until every plugin is listed (steps 1 and 2), or one
// of them has taken listWait to list, or ctx is done.
func (st *starter) waitListed(ctx context.Context) {
	select {
	case <-st.listed:
	case <-st.slow:
	case <-ctx.Done():
	}
}

// listingRuns marks the start of the code of the plugin at index listing it;
// the returned function marks its end. If it runs for listWait, the start
// is told to serve without the plugin.
func (st *starter) listingRuns(index int) (end func()) {
	t := time.AfterFunc(st.listWait, func() {
		st.slowOnce.Do(func() { close(st.slow) })
		st.results <- listed{index: index, late: true}
	})
	return func() { t.Stop() }
}

// background is a plugin loading, or loaded, in the background.
type background struct {
	spec    config.Plugin
	loading *server.Loading
	cancel  context.CancelFunc
	done    chan struct{} // closed when its loading goroutine has ended
	// settled is closed once the start's work on the plugin is over: it is
	// loaded or failed, or, loaded on demand, listed and its machine code
	// in the cache. Nil means loading.Done().
	settled chan struct{}
}

// ready is closed once the start's work on the plugin is over.
func (b *background) ready() <-chan struct{} {
	if b.settled != nil {
		return b.settled
	}
	return b.loading.Done()
}

// close stops loading the plugin, and closes it once it is loaded; calls
// still waiting for it go to the plugin of the same name in the current
// set. It does not wait.
func (b *background) close(ctx context.Context) {
	b.cancel()
	go func() {
		<-b.done
		if p := b.loading.Plugin(); p != nil {
			p.Close(ctx)
		}
	}()
}

// openEngine opens the compiler's engine in the background: it checks every
// entry of the compilation cache, which takes a while with many plugins
// cached, and only compilation needs it.
func openEngine(cacheDir string) func() (*plugin.Engine, error) {
	var (
		e    *plugin.Engine
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		e, err = plugin.NewEngine(cacheDir)
	}()
	return func() (*plugin.Engine, error) {
		<-done
		return e, err
	}
}

// backgroundDone waits, for at most d, until the loading goroutines of bgs
// have ended, and reports whether they have.
func backgroundDone(bgs []*background, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, b := range bgs {
		select {
		case <-b.done:
		case <-t.C:
			return false
		}
	}
	return true
}

// listed is the result of the first part of a plugin's load.
type listed struct {
	index  int  // of the plugin in the start's list
	late   bool // not a result: the plugin's code took listWait to list it
	lists  *plugin.Lists
	plugin *plugin.Plugin // when it had to be compiled to be listed
	err    error
}

// start resolves and lists every plugin, returning once all are listed
// (or one failed), except those whose code took listWait to list them;
// compilation goes on in the background.
func (st *starter) start(ctx context.Context, specs []config.Plugin) ([]*background, error) {
	if st.listWait <= 0 {
		st.listWait = startListWait
	}
	// Each plugin reports its lists or failure once, and "late" at most
	// once for each of its two listings (interpreter, compiled).
	st.results = make(chan listed, 3*len(specs))
	st.warmTurn = make(chan struct{}, 1)
	st.listed = make(chan struct{})
	st.slow = make(chan struct{})
	st.mu.Lock()
	st.pending = map[string]bool{}
	for _, spec := range specs {
		st.pending[spec.Name] = true
	}
	st.mu.Unlock()
	bgs := make([]*background, len(specs))
	handover := make([]chan *server.Loading, len(specs))
	st.listing.Add(len(specs))
	go func() {
		st.listing.Wait()
		close(st.listed)
	}()
	for i, spec := range specs {
		lctx, cancel := context.WithCancel(ctx)
		bgs[i] = &background{spec: spec, cancel: cancel, done: make(chan struct{}), settled: make(chan struct{})}
		handover[i] = make(chan *server.Loading, 1)
		go func() {
			defer close(bgs[i].done)
			st.load(lctx, i, spec, handover[i], bgs[i].settled)
		}()
	}
	var errs []error
	lists := make([]listed, len(specs))
	got := make([]bool, len(specs))
	late := st.collect(lists, got, specs)
	for i := range specs {
		if got[i] && lists[i].err != nil {
			errs = append(errs, pluginError(specs[i].Name, lists[i].err))
		}
	}
	if len(late) > 0 && len(errs) == 0 {
		st.log.Warn("serving before every plugin is listed: the others join when they are", "listing", late, "waited", st.listWait)
	}
	if len(late) == 0 {
		st.closeInterpreter()
	} else {
		// A plugin still in the interpreter uses it: close it once the
		// interpreter runs are over.
		go func() {
			<-st.listed
			st.closeInterpreter()
		}()
	}
	if err := errors.Join(errs...); err != nil {
		for i, b := range bgs {
			b.cancel()
			close(handover[i])
			<-b.done
			if p := lists[i].plugin; p != nil {
				p.Close(context.Background())
			}
		}
		// And those of plugins listed after the start stopped waiting.
		for len(st.results) > 0 {
			if p := (<-st.results).plugin; p != nil {
				p.Close(context.Background())
			}
		}
		st.progress.close()
		return nil, err
	}
	for i, b := range bgs {
		limits := b.spec.Limits
		if limits.CallTimeout <= 0 {
			limits.CallTimeout = config.DefaultCallTimeout
		}
		offered := lists[i].lists
		if !got[i] {
			// Not listed yet: it offers nothing until it is loaded.
			offered = &plugin.Lists{Read: plugin.AllLists}
		}
		b.loading = server.NewLoading(b.spec.Name, offered, limits.CallTimeout)
		if got[i] && lists[i].plugin == nil && b.spec.Lazy() {
			// Listed without compiling it, in time: compiled on its first
			// call.
			b.loading.SetOnDemand()
		}
		handover[i] <- b.loading
	}
	return bgs, nil
}

// collect receives the plugins' lists until every plugin has reported,
// or has taken listWait to list, and returns the names of those that have
// not reported.
func (st *starter) collect(lists []listed, got []bool, specs []config.Plugin) (late []string) {
	gaveUp := make([]bool, len(specs))
	waiting := len(specs)
	for waiting > 0 {
		l := <-st.results
		switch {
		case got[l.index]:
			continue
		case l.late:
			if !gaveUp[l.index] {
				gaveUp[l.index] = true
				waiting--
			}
			continue
		case !gaveUp[l.index]:
			waiting--
		case l.err != nil:
			// A plugin the start stopped waiting for never stops it: it
			// fails through its Loading.
			continue
		}
		lists[l.index], got[l.index] = l, true
		st.mu.Lock()
		delete(st.pending, specs[l.index].Name)
		st.mu.Unlock()
	}
	for i, ok := range got {
		if !ok {
			late = append(late, specs[i].Name)
		}
	}
	return late
}

// load loads one plugin: it reports the plugin's lists on listed, then,
// once handed its Loading, finishes the load there, at once or on demand.
// It closes settled once the start's work on the plugin is over.
func (st *starter) load(ctx context.Context, index int, spec config.Plugin, handover <-chan *server.Loading, settled chan struct{}) {
	settle := sync.OnceFunc(func() { close(settled) })
	defer settle()
	result := func(l listed) {
		l.index = index
		st.results <- l
	}
	notListed := true
	doneListing := func() {
		if notListed {
			notListed = false
			st.listing.Done()
		}
	}
	defer doneListing()
	log := st.log.With("plugin", spec.Name)
	// failed reports a failure before the plugin had lists: to the start,
	// which stops, or, when the start served without waiting for this
	// plugin, through its Loading.
	failed := func(err error) {
		result(listed{err: err})
		if l, ok := <-handover; ok {
			err = fmt.Errorf("plugin %s: %w", spec.Name, err) // as the start says it
			st.progress.pluginDone()
			log.Error("plugin failed to load; its calls fail until a reload loads it", "error", err)
			l.Failed(err)
		}
	}

	wasm, err := readPlugin(source.WithProgress(ctx, st.progress.download(spec.Name)), spec, st.log)
	if err != nil {
		doneListing()
		failed(err)
		return
	}
	key := catalog.KeyOf(wasm, spec)
	lists, err := st.store.Get(key)
	cataloged := err == nil && lists != nil
	switch {
	case errors.Is(err, catalog.ErrCorrupt):
		log.Warn("catalog entry ignored and removed; listing the plugin again", "error", err)
	case err != nil:
		log.Warn("catalog cache unreadable; listing the plugin again", "error", err)
	case lists != nil:
		log.Debug("lists from the catalog cache")
	}
	if lists == nil && interpretable(spec) {
		start := time.Now()
		if lists, err = st.interpret(ctx, index, wasm, spec); err != nil {
			// The compiler will say what is wrong, in its own words.
			log.Debug("listing in the interpreter failed; compiling first", "error", err)
		} else {
			log.Debug("listed in the interpreter", "elapsed", time.Since(start).Round(time.Millisecond))
		}
	}
	if lists != nil {
		result(listed{lists: lists})
	} else {
		st.compileFirst.Add(1)
	}
	doneListing()

	// Interpreter runs come first: compiling would take the cores from
	// them. A plugin that is slow to list holds nobody past the start's
	// deadline.
	st.waitListed(ctx)
	var l *server.Loading
	if lists != nil && (spec.Lazy() || st.compileFirst.Load() == 0) {
		// And the start itself: serving begins before this plugin takes
		// the cores to compile. (When some plugin must be compiled to be
		// listed, the start waits for that anyway: all compile at once.)
		// A plugin compiled on demand learns here that it is.
		var ok bool
		if l, ok = <-handover; !ok {
			return // the start failed
		}
		if l.OnDemand() {
			st.onDemand(ctx, spec, wasm, key, lists, cataloged, l, settle)
			return
		}
	}
	var (
		p    *plugin.Plugin
		live *plugin.Lists
	)
	if err = ctx.Err(); err == nil {
		p, live, err = st.compile(ctx, index, wasm, spec)
	}
	if err == nil {
		if perr := st.store.Put(key, live); perr != nil {
			log.Warn("catalog entry not written", "error", perr)
		}
	}
	if lists == nil {
		if err != nil {
			failed(err)
			return
		}
		result(listed{lists: live, plugin: p})
	}
	if l == nil {
		var ok bool
		if l, ok = <-handover; !ok {
			// The start failed; st.start closes p if it listed it.
			if p != nil && lists != nil {
				p.Close(context.Background())
			}
			return
		}
	}
	st.progress.pluginDone()
	switch {
	case ctx.Err() != nil:
		if p != nil {
			p.Close(context.Background())
		}
		l.Failed(fmt.Errorf("plugin %s: %w: replaced or stopped while loading", spec.Name, plugin.ErrClosed))
	case err != nil:
		log.Error("plugin failed to load; its calls fail until a reload loads it", "error", err)
		l.Failed(err)
	default:
		l.Loaded(p, live)
	}
}

// onDemand finishes the load of a plugin compiled on its first call, whose
// Loading l is served: it warms the compilation cache with the plugin if
// its lists did not come from the catalog, settles, then waits for the
// plugin's first call and loads it. A local module is not kept meanwhile:
// the first call reads it again, and loads it only if its digest is the
// one listed.
func (st *starter) onDemand(ctx context.Context, spec config.Plugin, wasm []byte, key catalog.Key, lists *plugin.Lists, cataloged bool, l *server.Loading, settle func()) {
	log := st.log.With("plugin", spec.Name)
	// A local file is read again on the first call; a remote source's
	// module is kept (a few megabytes), so that the first call neither
	// fetches it again nor finds a tag moved meanwhile.
	var kept []byte
	if spec.Kind != config.SourceFile && spec.Kind != "" {
		kept = wasm
	}
	if !cataloged {
		// Listed in the interpreter: most likely its machine code is not
		// in the cache either. Compile it there now, keeping none of it,
		// so that the first call reads it instead of compiling it. One
		// plugin at a time (each compiles on every core), so that the
		// first are in the cache soonest; a plugin called before its turn
		// is compiled by its call instead, at once.
		err := error(nil)
		select {
		case st.warmTurn <- struct{}{}:
			err = st.warm(ctx, wasm, spec)
			<-st.warmTurn
		case <-l.Wanted():
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			st.progress.pluginDone()
			if ctx.Err() != nil {
				l.Failed(fmt.Errorf("plugin %s: %w: replaced or stopped while loading", spec.Name, plugin.ErrClosed))
				return
			}
			log.Error("plugin failed to load; its calls fail until a reload loads it", "error", err)
			l.Failed(err)
			return
		}
		if err := st.store.Put(key, lists); err != nil {
			log.Warn("catalog entry not written", "error", err)
		}
	}
	st.progress.pluginDone()
	settle()
	select {
	case <-l.Wanted():
	case <-ctx.Done():
		l.Failed(fmt.Errorf("plugin %s: %w: replaced or stopped before its first call", spec.Name, plugin.ErrClosed))
		return
	}
	start := time.Now()
	p, live, err := st.compileOnDemand(ctx, spec, key, kept)
	if err == nil {
		if perr := st.store.Put(key, live); perr != nil {
			log.Warn("catalog entry not written", "error", perr)
		}
	}
	switch {
	case ctx.Err() != nil:
		if p != nil {
			p.Close(context.Background())
		}
		l.Failed(fmt.Errorf("plugin %s: %w: replaced or stopped while loading", spec.Name, plugin.ErrClosed))
	case err != nil:
		log.Error("plugin failed to load on its first call; its calls fail until a reload loads it", "error", err)
		l.Failed(err)
	default:
		log.Log(ctx, quietUnder(time.Since(start)), "compiled on its first call", "elapsed", time.Since(start).Round(time.Millisecond), "compile", p.CompileTime().Round(time.Millisecond))
		l.Loaded(p, live)
	}
}

// quietUnder is the level of a log record about work that took elapsed:
// INFO if it took long enough to be noticed, DEBUG otherwise.
func quietUnder(elapsed time.Duration) slog.Level {
	if elapsed >= progressQuiet {
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// warm compiles the plugin into the compilation cache, keeping none of it.
func (st *starter) warm(ctx context.Context, wasm []byte, spec config.Plugin) error {
	e, err := st.engine()
	if err != nil {
		return fmt.Errorf("compiling plugin %s: %w", spec.Name, err)
	}
	st.progress.compileStarted(spec.Name)
	_, err = e.Warm(ctx, wasm, pluginOptions(spec, st.log))
	st.progress.compileEnded(spec.Name, err, "compiled into the cache", "starts", "on its first call")
	return err
}

// compileOnDemand loads a plugin compiled on demand and reads its lists.
// Its module is wasm, or, if that is nil, read again and checked to be the
// one listed under key.
func (st *starter) compileOnDemand(ctx context.Context, spec config.Plugin, key catalog.Key, wasm []byte) (*plugin.Plugin, *plugin.Lists, error) {
	if wasm == nil {
		var err error
		if wasm, err = readPlugin(ctx, spec, st.log); err != nil {
			return nil, nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
		}
	}
	if sha256.Sum256(wasm) != key.Module {
		return nil, nil, fmt.Errorf("plugin %s: its module changed since the server started; reload the configuration (SIGHUP) to serve the new one", spec.Name)
	}
	e, err := st.engine()
	if err != nil {
		return nil, nil, fmt.Errorf("compiling plugin %s: %w", spec.Name, err)
	}
	p, err := e.Load(ctx, wasm, pluginOptions(spec, st.log))
	if err != nil {
		return nil, nil, err
	}
	live, err := p.ReadLists(ctx, plugin.AllLists)
	if err != nil {
		p.Close(context.Background())
		return nil, nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
	}
	return p, live, nil
}

// compile loads the plugin with the compiler and reads its lists.
func (st *starter) compile(ctx context.Context, index int, wasm []byte, spec config.Plugin) (*plugin.Plugin, *plugin.Lists, error) {
	e, err := st.engine()
	if err != nil {
		return nil, nil, fmt.Errorf("compiling plugin %s: %w", spec.Name, err)
	}
	st.progress.compileStarted(spec.Name)
	p, err := e.Load(ctx, wasm, pluginOptions(spec, st.log))
	st.progress.compileEnded(spec.Name, err, "compiled")
	if err != nil {
		return nil, nil, err
	}
	end := st.listingRuns(index)
	live, err := p.ReadLists(ctx, plugin.AllLists)
	end()
	if err != nil {
		p.Close(context.Background())
		return nil, nil, pluginError(spec.Name, err)
	}
	return p, live, nil
}

// interpretable reports whether a plugin may run in the interpreter to be
// listed before it is compiled: running a plugin twice must do nothing the
// world can see, so it may neither reach the network nor write a file.
func interpretable(spec config.Plugin) bool {
	if len(spec.Grants.AllowedHosts) > 0 {
		return false
	}
	for _, m := range spec.Grants.AllowedPaths {
		if !m.ReadOnly {
			return false
		}
	}
	return true
}

// interpret loads the plugin in the interpreter, reads its lists and
// closes it.
func (st *starter) interpret(ctx context.Context, index int, wasm []byte, spec config.Plugin) (*plugin.Lists, error) {
	st.interpMu.Lock()
	if st.interp == nil {
		st.interp = plugin.NewInterpreterEngine(st.cacheDir)
	}
	e := st.interp
	st.interpMu.Unlock()
	p, err := e.Load(ctx, wasm, pluginOptions(spec, st.log.With("tier", "interpreter")))
	if err != nil {
		return nil, err
	}
	defer p.Close(context.Background())
	end := st.listingRuns(index)
	l, err := p.ReadLists(ctx, plugin.AllLists)
	end()
	if err != nil {
		return nil, err
	}
	l.Seq = 0 // expected lists, not the plugin's own
	return l, nil
}

// closeInterpreter releases the interpreter, once every plugin is listed.
func (st *starter) closeInterpreter() {
	st.interpMu.Lock()
	defer st.interpMu.Unlock()
	if st.interp != nil {
		st.interp.Close(context.Background())
		st.interp = nil
	}
}

// pluginOptions are the options plugins are loaded with.
func pluginOptions(spec config.Plugin, log *slog.Logger) plugin.Options {
	return plugin.Options{
		Name:   spec.Name,
		Config: spec.Config,
		Limits: spec.Limits,
		Grants: spec.Grants,
		Logger: log,
	}
}

// whenLoaded logs "ready" once every plugin has loaded or failed, or,
// compiled on demand, is listed (and its machine code in the cache), with
// the time since start, and then gives the compilers' garbage back.
func whenLoaded(ctx context.Context, bgs []*background, start time.Time, p *progress, log *slog.Logger) {
	for _, b := range bgs {
		select {
		case <-b.ready():
		case <-ctx.Done():
			p.close()
			return
		}
	}
	p.close()
	failed := map[string]string{}
	var stopped []string
	started, onDemand := 0, 0
	for _, b := range bgs {
		switch err := b.loading.Err(); {
		case errors.Is(err, plugin.ErrClosed):
			// Hangar is stopping (a stdio client closed its end early)
			// or a reload replaced the plugin: not a failure.
			stopped = append(stopped, b.spec.Name)
		case err != nil:
			failed[b.spec.Name] = err.Error()
		case b.loading.Plugin() == nil:
			onDemand++ // started (compiled, or read from the cache) on its first call
		default:
			started++
		}
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	switch {
	case len(stopped) > 0 && len(failed) == 0:
		log.Debug("loading stopped: hangar is stopping, or a reload replaced plugins", "plugins", stopped, "elapsed", elapsed)
		return
	case len(failed) > 0:
		log.Warn("ready, but some plugins failed to load", "plugins", len(bgs), "failed", failed, "started", started, "on_first_call", onDemand, "elapsed", elapsed)
	default:
		log.Info("ready", "plugins", len(bgs), "started", started, "on_first_call", onDemand, "elapsed", elapsed)
	}
	// Compiling leaves hundreds of megabytes of garbage behind; give it
	// back to the system now, once, rather than over the next minutes.
	debug.FreeOSMemory()
}
