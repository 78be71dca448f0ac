package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/tasks"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// ErrConflict reports a tool or prompt name, a resource URI or a URI
// template (by its shape) that two plugins offer, or one that carries the
// prefix of another plugin than the one offering it.
var ErrConflict = errors.New("offered by two plugins")

// Mount is a plugin as the core presents it.
type Mount struct {
	// Plugin is the plugin, or nil when Loading is set.
	Plugin *plugin.Plugin
	// Loading, if set, is the plugin while it is still loading, and
	// after (see loading.go).
	Loading *Loading
	// Prefix, if set, is put before the plugin's names ("prefix_name") and
	// URIs ("prefix+uri", or "ui://prefix+rest" for a view's ui://rest) to
	// keep them apart from other plugins'.
	Prefix string
	// TaskModes, if set, override when the calls of the plugin's tools
	// become tasks, by the tool's name in the plugin: the value replaces
	// the one of the tool's _meta under wire.MetaTask ("auto" removes it).
	TaskModes map[string]string
}

// Options configure a Core. A nil *Options means defaults.
type Options struct {
	// Logger receives the core's diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// Metrics, if set, records requests and plugin calls.
	Metrics *metrics.Metrics
	// TracerProvider, if set, gets a span for each request and each plugin
	// call. Nil means no tracing.
	TracerProvider trace.TracerProvider

	// Manager holds the calls of MCP 2026-07-28 that ask the client for
	// input, between its requests (ServeHeld). Nil: ServeHeld fails
	// (ErrNoManager).
	Manager *mrtr.Manager
	// Tasks, if set, holds the tasks of the tasks extension: a tools/call
	// whose request declares it goes through the table (ServeHeld). Nil:
	// no call becomes a task.
	Tasks *tasks.Table
	// TaskAfter is the threshold after which a call still running becomes
	// a task (mrtr.TaskAuto); zero means tasks.DefaultAfter, and a
	// negative one is taken as zero (package server refuses it first).
	TaskAfter time.Duration
}

// Core serves a set of plugins to the edges: it keeps what they offer,
// resolves each request to the plugin that serves it, and runs it there.
type Core struct {
	log     *slog.Logger
	calls   *tracker // calls in progress
	metrics *metrics.Metrics
	// tracer is nil when no TracerProvider was given: spans are then not
	// started at all, rather than started on a no-op tracer, whose names
	// and attributes were built for nothing on every call.
	tracer    trace.Tracer
	listeners []Listener // set before the first Reload

	installMu sync.Mutex // serializes installing plugin sets

	mu        sync.Mutex
	mounts    []*mount
	tools     map[string]*mount // exposed name -> owner
	prompts   map[string]*mount
	resources map[string]*mount // exposed URI -> owner
	templates map[string]*mount // exposed URI template -> owner

	templateOrder []compiledTemplate // templates, sorted; nil: to be made again

	held held // what holds the calls of 2026-07-28 (held.go)

	roots  rootsRuns // on_roots_list_changed calls in progress (roots.go)
	claims claims    // who owns what, besides the maps above (claims.go); guarded by mu
}

// A Kind is a kind of item the core offers.
type Kind int

// The kinds of item, and their types in Listener.Offer.
const (
	Tools     Kind = iota // *mcp.Tool
	Prompts               // *mcp.Prompt
	Resources             // *mcp.Resource
	Templates             // *mcp.ResourceTemplate
)

func (k Kind) String() string {
	switch k {
	case Tools:
		return "tool"
	case Prompts:
		return "prompt"
	case Resources:
		return "resource"
	case Templates:
		return "resource template"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// A Listener is told what the core offers, as it changes: an edge that
// keeps registrations of its own (the go-sdk's server) mirrors them there,
// and an edge that tells clients of changes fans them out.
type Listener interface {
	// Offer offers an item (see Kind) under its exposed name or URI,
	// replacing the one of that name or URI. An error refuses it: the core
	// then offers it on no edge, and logs why. Offer and Withdraw are
	// called with the core's lock held: they must not call the core.
	Offer(item any) error
	// Withdraw withdraws the items of a kind with these exposed names or
	// URIs.
	Withdraw(kind Kind, keys ...string)
	// ListChanged tells that the items of a list may have changed, once
	// they are offered.
	ListChanged(k plugin.ListKind)
	// ResourceUpdated tells that the resource at the exposed URI changed
	// (a plugin said so); an error is logged.
	ResourceUpdated(uri string) error
}

// mount is a Mount plus what the core has registered for it.
type mount struct {
	Mount
	name string
	core *Core

	seq     [4]uint64       // by plugin.ListKind, the Seq of the lists offered; guarded by core.mu
	updates resourceUpdates // resource-updated notifications not yet sent
	retired bool            // replaced by a reload; guarded by core.mu
	from    *plugin.Lists   // with Loading: the lists the mount was installed with

	// What the core offers of the plugin, by exposed name or URI (or URI
	// template), for the requests that reach it; guarded by core.mu.
	toolEntries map[string]*toolEntry
	mimeTypes   map[string]string // of resources and templates

	reports reports // what was refused or warned of, logged once (claims.go)
}

// New returns a core that serves no plugin yet: Reload gives it its
// first set.
func New(opts *Options) *Core {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TaskAfter <= 0 {
		o.TaskAfter = tasks.DefaultAfter
	}
	return &Core{
		log: o.Logger, calls: newTracker(), metrics: o.Metrics, tracer: tracerOf(o.TracerProvider),
		held: held{m: o.Manager, tasks: o.Tasks, after: o.TaskAfter},
	}
}

// Listen adds l to the listeners told what the core offers. Call it before
// the first Reload: a listener is not told what was offered before.
func (c *Core) Listen(l Listener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners = append(c.listeners, l)
}

// Reload replaces the core's plugins with mounts (the first call gives
// the first set). The new set is listed and checked first: if that fails,
// the old set goes on serving and Reload returns why. Otherwise the new
// registrations replace the old at once, listeners are told what lists
// changed, and calls already running finish on the old plugins, which stay
// owned by the caller.
func (c *Core) Reload(ctx context.Context, mounts []Mount) error {
	ms, catalogs, err := c.prepare(ctx, mounts)
	if err != nil {
		return err
	}
	c.install(ms, catalogs)
	return nil
}

// prepare lists every plugin of a new set and checks it for conflicts.
func (c *Core) prepare(ctx context.Context, mounts []Mount) ([]*mount, []*catalog, error) {
	ms := make([]*mount, len(mounts))
	for i, m := range mounts {
		ms[i] = &mount{Mount: m, core: c, toolEntries: map[string]*toolEntry{}, mimeTypes: map[string]string{}}
		if m.Loading != nil {
			ms[i].name = m.Loading.Name()
		} else {
			ms[i].name = m.Plugin.Name()
		}
	}
	catalogs := make([]*catalog, len(ms))
	var errs []error
	for i, m := range ms {
		if m.Loading != nil {
			m.from = m.Loading.lists()
			catalogs[i] = m.catalogOf(m.from)
			continue
		}
		cat, err := m.list(ctx, allLists)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		catalogs[i] = cat
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if err := checkConflicts(ms, catalogs); err != nil {
		return nil, nil, err
	}
	return ms, catalogs, nil
}

// cloneOwners copies a map of owners (never nil).
func cloneOwners(m map[string]*mount) map[string]*mount {
	c := make(map[string]*mount, len(m))
	maps.Copy(c, m)
	return c
}

// install makes ms the core's plugins. Names the old set offered and the
// new one does not are withdrawn last, so that a name both offer never
// disappears in between.
func (c *Core) install(ms []*mount, catalogs []*catalog) {
	c.installMu.Lock()
	defer c.installMu.Unlock()

	c.mu.Lock()
	for _, m := range c.mounts {
		m.retired = true
	}
	// The old set's names stay served, by its retired mounts, until the
	// new set claims them (claim lets a new mount take a retired one's
	// name): a call arriving while the new set is applied finds its tool,
	// on the old plugin or the new, never none.
	c.tools, c.prompts = cloneOwners(c.tools), cloneOwners(c.prompts)
	c.resources, c.templates = cloneOwners(c.resources), cloneOwners(c.templates)
	c.templateOrder = nil
	c.mounts = ms
	c.claims.reset(ms)
	c.claims.initial = true
	c.mu.Unlock()

	for i, m := range ms {
		m.apply(catalogs[i], allLists)
	}
	c.mu.Lock()
	c.claims.initial = false
	c.mu.Unlock()
	for _, m := range ms {
		if m.Loading != nil {
			m.Loading.attach(m)
		} else {
			m.Plugin.SetEvents(m)
		}
	}

	c.mu.Lock()
	now := [4]map[string]*mount{c.tools, c.prompts, c.resources, c.templates}
	for k := range now {
		var gone []string
		for key, owner := range now[k] {
			if owner.retired {
				gone = append(gone, key)
				delete(now[k], key)
			}
		}
		if len(gone) > 0 && Kind(k) == Templates {
			c.templateOrder = nil
		}
		if len(gone) > 0 {
			for _, l := range c.listeners {
				l.Withdraw(Kind(k), gone...)
			}
		}
	}
	c.mu.Unlock()
	c.changed(allLists)
}

// changed tells the listeners that the lists in which may have changed.
// c.mu must not be held.
func (c *Core) changed(which plugin.ListSet) {
	c.mu.Lock()
	listeners := c.listeners
	c.mu.Unlock()
	for _, k := range []plugin.ListKind{plugin.ToolList, plugin.ResourceList, plugin.PromptList} {
		if which.Has(k) {
			for _, l := range listeners {
				l.ListChanged(k)
			}
		}
	}
}

// Capabilities are every feature a plugin may offer, whether or not the
// current plugins do, since a reload or a list change may add them. A
// client of an older protocol version is sent only those its version
// defines (see CapabilitiesFor).
func Capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Logging:     &mcp.LoggingCapabilities{},
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Completions: &mcp.CompletionCapabilities{},
		// MCP Apps has no server settings: {} says Hangar serves views
		// (apps.go), at every version, as the extension negotiates.
		Extensions: map[string]any{wire.ExtensionUI: map[string]any{}},
	}
}

// exposedName is a tool or prompt name as clients see it.
func (m *mount) exposedName(name string) string {
	if m.Prefix == "" {
		return name
	}
	return m.Prefix + "_" + name
}

// exposedURI is a resource URI or URI template as clients see it: the
// prefix and "+" before it, or, for a view's ui:// URI, after "ui://",
// since hosts load views only from URIs that start with ui:// (apps.go).
func (m *mount) exposedURI(uri string) string {
	if m.Prefix == "" {
		return uri
	}
	if rest, ok := strings.CutPrefix(uri, uiScheme); ok {
		return uiScheme + m.Prefix + "+" + rest
	}
	return m.Prefix + "+" + uri
}

// pluginURI undoes exposedURI.
func (m *mount) pluginURI(uri string) string {
	if m.Prefix == "" {
		return uri
	}
	if rest, ok := strings.CutPrefix(uri, uiScheme+m.Prefix+"+"); ok {
		return uiScheme + rest
	}
	return strings.TrimPrefix(uri, m.Prefix+"+")
}

// pluginName undoes exposedName.
func (m *mount) pluginName(name string) string {
	return strings.TrimPrefix(name, m.exposedName(""))
}

// checkConflicts reports every exposed name, URI or URI template shape
// claimed by two plugins, and every one that carries the prefix of a
// plugin other than the one offering it (claims.go).
func checkConflicts(mounts []*mount, catalogs []*catalog) error {
	type claim struct{ kind, key string }
	owner := map[claim]string{}
	prefixes := map[string]string{}
	for _, m := range mounts {
		if m.Prefix != "" {
			prefixes[m.Prefix] = m.name
		}
	}
	var errs []error
	add := func(m *mount, kind Kind, key string) {
		if p := carriedPrefix(kind, key); p != m.Prefix && prefixes[p] != "" {
			errs = append(errs, fmt.Errorf("%s %q of plugin %q carries the prefix of plugin %q, whose names and URIs are its own (%w); rename it, or give plugin %q a prefix", kind, key, m.name, prefixes[p], ErrConflict, m.name))
			return
		}
		c := claim{kind.String(), key}
		if prev, ok := owner[c]; ok && prev != m.name {
			errs = append(errs, fmt.Errorf("%s %q is %w %q and %q; give one of them a prefix", kind, key, ErrConflict, prev, m.name))
			return
		}
		owner[c] = m.name
		if kind == Templates {
			c = claim{"shape", templateShape(key)}
			if prev, ok := owner[c]; ok && prev != m.name {
				errs = append(errs, fmt.Errorf("resource template %q of plugin %q has the shape of a template of plugin %q (%w); give one of them a prefix", key, m.name, prev, ErrConflict))
				return
			}
			owner[c] = m.name
		}
	}
	for i, m := range mounts {
		c := catalogs[i]
		for _, t := range c.tools {
			add(m, Tools, m.exposedName(t.tool.Name))
		}
		for _, p := range c.prompts {
			add(m, Prompts, m.exposedName(p.Name))
		}
		for _, r := range c.resources {
			add(m, Resources, m.exposedURI(r.URI))
		}
		for _, t := range c.templates {
			add(m, Templates, m.exposedURI(t.URITemplate))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}
