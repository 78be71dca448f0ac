package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	catalogcache "github.com/hangar-mcp/hangar/internal/catalog"
	"github.com/hangar-mcp/hangar/internal/plugin"
)

// Plugins that are still loading.
//
// A Mount may hold a Loading instead of a Plugin: a plugin whose module is
// still being compiled, with the lists it is expected to offer (read from
// the catalog cache, or from the plugin run in wazero's interpreter). The
// core offers those lists at once. Calls wait for the plugin, for at most
// its call timeout. When the plugin is loaded, the lists read from it
// replace those that differ, and listeners are told (Listener.ListChanged);
// a tool call that waited is checked again against the tool's live input
// schema. When loading fails, calls fail with the reason.
//
// A plugin loaded on demand (SetOnDemand) is loaded only once a call wants
// it: its loader waits for Wanted, which the first call that waits for the
// plugin closes. Until then it is ready: listed, and callable.

// ErrNotLoaded reports a call to a plugin that is still loading after the
// call's wait, or that failed to load.
var ErrNotLoaded = errors.New("plugin not loaded")

// Loading is a plugin being loaded in the background. Its loader calls
// Loaded or Failed once. It is safe for concurrent use.
type Loading struct {
	name    string
	timeout time.Duration // how long a call waits for the plugin
	offered *plugin.Lists // the lists expected, offered until loaded

	done chan struct{} // closed by Loaded or Failed

	onDemand bool          // loaded once a call wants it; set before it is mounted
	wanted   chan struct{} // closed when a call first waits for the plugin
	wantOnce sync.Once

	mu     sync.Mutex
	plugin *plugin.Plugin
	live   *plugin.Lists         // read from the plugin when it loaded
	differ plugin.ListSet        // kinds of list where live and offered differ
	tools  map[string]liveSchema // input schemas of the live tools
	err    error
	mounts []*mount // serving it, one per installed plugin set
}

// NewLoading returns a plugin named name being loaded, expected to offer
// lists (all kinds; see catalog.Store). Calls wait for it for at most
// callTimeout.
func NewLoading(name string, lists *plugin.Lists, callTimeout time.Duration) *Loading {
	return &Loading{name: name, timeout: callTimeout, offered: lists, done: make(chan struct{}), wanted: make(chan struct{})}
}

// SetOnDemand marks the plugin as loaded on demand: its loader waits for
// Wanted before it loads it, and until it fails it counts as ready (see
// Readiness). Call it before the Loading is mounted.
func (l *Loading) SetOnDemand() { l.onDemand = true }

// OnDemand reports whether the plugin is loaded on demand.
func (l *Loading) OnDemand() bool { return l.onDemand }

// Wanted is closed once a call waits for the plugin: the first call of a
// plugin loaded on demand.
func (l *Loading) Wanted() <-chan struct{} { return l.wanted }

// Name returns the plugin's name.
func (l *Loading) Name() string { return l.name }

// Done is closed once the plugin is loaded or failed.
func (l *Loading) Done() <-chan struct{} { return l.done }

// Plugin returns the plugin, or nil while it is loading or if it failed.
func (l *Loading) Plugin() *plugin.Plugin {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.plugin
}

// Err returns why loading failed, or nil.
func (l *Loading) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Differ reports the kinds of list where the plugin, once loaded, offered
// other lists than expected.
func (l *Loading) Differ() plugin.ListSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.differ
}

// Loaded hands over the loaded plugin, which stays owned by the caller, and
// the lists just read from it (all kinds). Cores offering the plugin
// replace the lists that differ from those expected, telling their
// listeners, and calls waiting for the plugin go on.
func (l *Loading) Loaded(p *plugin.Plugin, live *plugin.Lists) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.plugin != nil || l.err != nil {
		panic("core: Loading settled twice")
	}
	l.plugin, l.live = p, live
	l.differ = catalogcache.Differ(l.offered, live)
	l.tools = map[string]liveSchema{}
	for _, t := range live.Tools {
		if s, err := compileSchema(t.InputSchema); err == nil {
			l.tools[t.Name] = liveSchema{s, simplify(t.InputSchema)}
		}
	}
	for _, m := range l.mounts {
		m.loaded(p, live)
	}
	close(l.done)
}

// Failed reports that the plugin could not be loaded: calls fail with err.
// An error wrapping plugin.ErrClosed (the plugin was replaced before it
// loaded) sends calls to the plugin of the same name in the current set.
func (l *Loading) Failed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.plugin != nil || l.err != nil {
		panic("core: Loading settled twice")
	}
	l.err = err
	close(l.done)
}

// lists returns the lists the plugin offers: read from it once loaded,
// else those expected.
func (l *Loading) lists() *plugin.Lists {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live != nil {
		return l.live
	}
	return l.offered
}

// attach makes m one of the mounts serving the plugin; if it is loaded, m
// catches up at once.
func (l *Loading) attach(m *mount) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.mounts[:0]
	for _, o := range l.mounts {
		if !o.isRetired() {
			kept = append(kept, o)
		}
	}
	l.mounts = append(kept, m)
	if l.plugin != nil {
		m.loaded(l.plugin, l.live)
	}
}

// wait returns the plugin once it is loaded, waiting for at most the call
// timeout (or until ctx is done).
func (l *Loading) wait(ctx context.Context) (*plugin.Plugin, error) {
	select {
	case <-l.done:
	default:
		l.wantOnce.Do(func() { close(l.wanted) })
		t := time.NewTimer(l.timeout)
		defer t.Stop()
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("plugin %s: waiting for it to load: %w", l.name, context.Cause(ctx))
		case <-t.C:
			return nil, fmt.Errorf("plugin %s: %w: still loading after %s, its call timeout", l.name, ErrNotLoaded, l.timeout)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		if errors.Is(l.err, plugin.ErrClosed) {
			return nil, l.err
		}
		return nil, fmt.Errorf("plugin %s: %w: %w", l.name, ErrNotLoaded, l.err)
	}
	return l.plugin, nil
}

// state describes the plugin for Readiness: "" once loaded, or, loaded
// on demand, until it fails.
func (l *Loading) state() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return "failed to load: " + l.err.Error()
	case l.plugin == nil && !l.onDemand:
		return "loading"
	}
	return ""
}

// liveSchema is the input schema a loaded plugin gives a tool: resolved,
// and in its simple form if it has one (args.go).
type liveSchema struct {
	schema *jsonschema.Resolved
	simple *simpleSchema
}

// liveSchema returns the input schema the loaded plugin gives the tool
// name, for a call checked against the expected one while it loaded.
func (l *Loading) liveSchema(name string) (liveSchema, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.tools[name]
	return s, ok
}

// Readiness reports whether every plugin is ready: loaded, or listed and
// loaded on demand (its first call waits for it). If not, notReady names
// each plugin that is not, with what it is doing ("loading") or why it
// failed ("failed to load: ...").
func (c *Core) Readiness() (ready bool, notReady map[string]string) {
	c.mu.Lock()
	ms := c.mounts
	c.mu.Unlock()
	notReady = map[string]string{}
	for _, m := range ms {
		if m.Loading == nil {
			continue
		}
		if st := m.Loading.state(); st != "" {
			notReady[m.name] = st
		}
	}
	return len(notReady) == 0, notReady
}

// plugin returns the mount's plugin, waiting for it while it loads.
func (m *mount) plugin(ctx context.Context) (*plugin.Plugin, error) {
	if m.Loading == nil {
		return m.Plugin, nil
	}
	return m.Loading.wait(ctx)
}

// loadedPlugin returns the mount's plugin without waiting: nil while it is
// still loading, or if it failed to load.
func (m *mount) loadedPlugin() *plugin.Plugin {
	if m.Loading == nil {
		return m.Plugin
	}
	return m.Loading.Plugin()
}

// isRetired reports whether a reload replaced m.
func (m *mount) isRetired() bool {
	m.core.mu.Lock()
	defer m.core.mu.Unlock()
	return m.retired
}

// loaded switches m to its plugin, loaded, and offers the lists read from
// it where they differ from what m offers. The caller holds its Loading's
// lock.
func (m *mount) loaded(p *plugin.Plugin, live *plugin.Lists) {
	if m.isRetired() {
		return
	}
	p.SetEvents(m)
	if m.from == live {
		return
	}
	if d := catalogcache.Differ(m.from, live); d != 0 {
		m.core.log.Info("the plugin lists other items than its catalog said; telling clients", "plugin", m.name, "lists", d)
		m.core.changed(m.apply(m.catalogOf(live), d))
	}
}

// checkLoaded, for a tool call checked against a tool's expected input
// schema while its plugin loaded, waits for the plugin and returns the
// schema the plugin gives the tool, with its simple form (nil if it has
// none), or what went wrong for the client. A tool whose expected schema
// the plugin confirmed keeps the one-pass check of its simple form.
func (m *mount) checkLoaded(ctx context.Context, t *toolEntry) (*jsonschema.Resolved, *simpleSchema, string) {
	if _, err := m.Loading.wait(ctx); errors.Is(err, plugin.ErrClosed) {
		return t.schema, t.simple, "" // replaced by a reload: the call goes to the current plugin
	} else if err != nil {
		return nil, nil, err.Error()
	}
	if !m.Loading.Differ().Has(plugin.ToolList) {
		return t.schema, t.simple, ""
	}
	s, ok := m.Loading.liveSchema(t.tool.Name)
	if !ok {
		return nil, nil, fmt.Sprintf("plugin %s no longer offers tool %q", m.name, t.tool.Name)
	}
	return s.schema, s.simple, ""
}
