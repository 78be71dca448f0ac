package plugin

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Plugin state.
//
// An instance's memory is the plugin's state: what init functions set up,
// what tools registered at run time, counters. Hangar keeps that state
// whole by default, and never re-reads a plugin's lists anywhere but on the
// instance that said they changed:
//
//   - A plugin gets one instance unless its module exports StatelessExport
//     or its configuration sets limits.max_instances (see instanceCount).
//   - The list-changed imports only record the kind of list in the running
//     call (a set of bits, so a flood of them is one refresh). When the
//     call returns, the changed lists are read again on the same instance,
//     before it serves any other call, and handed to the Events receiver
//     (see refresh).
//   - Extism variables are shared by all instances of a plugin (vars.go).

// StatelessExport is the name of the function a module exports to declare
// that it keeps no state between calls, so that Hangar may run several
// instances of it at once. Hangar never calls it; its signature is not
// checked (the natural one takes and returns nothing). The Go PDK exports
// it when the plugin imports the package pdk/stateless.
const StatelessExport = "hangar_stateless"

// instanceCount is the number of instances a plugin gets when its
// configuration does not say: one for a plugin that may keep state in its
// memory, so that every call sees the same state; for a stateless one, as
// many as cores, since more would only take turns on the same cores, which
// makes no call faster and some much slower (docs/performance.md,
// "Instances per plugin"). Plugins that wait, on the network or on the
// client, want a higher max_instances.
func instanceCount(stateless bool) int {
	if !stateless {
		return 1
	}
	return max(2, runtime.GOMAXPROCS(0))
}

// Stateless reports whether the module declares that it keeps no state
// between calls (it exports StatelessExport).
func (p *Plugin) Stateless() bool { return p.stateless }

// MaxInstances reports the most instances the plugin runs at once: its
// limits.max_instances, or the number Hangar chose.
func (p *Plugin) MaxInstances() int { return p.opts.Limits.MaxInstances }

// ListSet is a set of list kinds.
type ListSet uint8

// AllLists holds every list kind.
const AllLists = ListSet(1<<ToolList | 1<<ResourceList | 1<<PromptList)

// Set returns the set holding only k.
func (k ListKind) Set() ListSet { return ListSet(1) << k }

// Has reports whether k is in s.
func (s ListSet) Has(k ListKind) bool { return s&k.Set() != 0 }

func (s ListSet) String() string {
	str := ""
	for _, k := range []ListKind{ToolList, ResourceList, PromptList} {
		if s.Has(k) {
			if str != "" {
				str += "+"
			}
			str += k.String()
		}
	}
	if str == "" {
		return "none"
	}
	return str
}

// Lists holds lists read from a plugin: those in Read; the others are nil.
type Lists struct {
	// Read says which lists were read. Resources covers both resources and
	// resource templates.
	Read      ListSet
	Tools     []*mcp.Tool
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	Prompts   []*mcp.Prompt
	// Seq orders the readings of one plugin: a reading with a higher Seq
	// began later. A receiver that gets readings from several instances at
	// once keeps the latest.
	Seq uint64
}

// ReadLists reads the lists in which from the plugin, within one call
// timeout in all.
func (p *Plugin) ReadLists(ctx context.Context, which ListSet) (*Lists, error) {
	// However many exports it takes, a reading of the lists (with the
	// instance's initialization, when it is the first call) gets one call
	// timeout in all: a plugin that waits or loops while it is listed, at
	// start, at a reload or after a change, holds nobody for longer.
	limit := p.opts.Limits.CallTimeout
	ctx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("%w: reading the plugin's lists took longer than its call timeout (%s)", ErrTimeout, limit))
	defer cancel()
	l := &Lists{Read: which, Seq: p.listSeq.Add(1)}
	var err error
	if which.Has(ToolList) {
		if l.Tools, err = p.ListTools(ctx, nil); err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
	}
	if which.Has(ResourceList) {
		if l.Resources, err = p.ListResources(ctx, nil); err != nil {
			return nil, fmt.Errorf("listing resources: %w", err)
		}
		if l.Templates, err = p.ListResourceTemplates(ctx, nil); err != nil {
			return nil, fmt.Errorf("listing resource templates: %w", err)
		}
	}
	if which.Has(PromptList) {
		if l.Prompts, err = p.ListPrompts(ctx, nil); err != nil {
			return nil, fmt.Errorf("listing prompts: %w", err)
		}
	}
	return l, nil
}

// refreshing marks the context of the calls that re-read a plugin's lists
// after a change. Their own list-changed notifications are ignored, so that
// a refresh never starts another. With inst set, the calls run on that
// instance, which the call that reported the change still holds; failed is
// then set if one of them left the instance unusable.
type refreshing struct {
	inst   *instance
	failed bool
}

type refreshKey struct{}

func refreshingFrom(ctx context.Context) *refreshing {
	r, _ := ctx.Value(refreshKey{}).(*refreshing)
	return r
}

// refresh reads the lists in which again and hands them to the Events
// receiver. With inst, it reads them on that instance, which the caller
// holds (the instance that reported the change, after its call returned);
// without, on any instance of the pool. It is bounded by the call timeout,
// and reports whether inst is still usable.
func (p *Plugin) refresh(ctx context.Context, inst *instance, which ListSet) (healthy bool) {
	ev := p.events.Load()
	if ev == nil || *ev == nil {
		return true // nobody listens: nothing to read
	}
	r := &refreshing{inst: inst}
	ctx, cancel := context.WithTimeout(context.WithValue(context.WithoutCancel(ctx), refreshKey{}, r), p.opts.Limits.CallTimeout)
	defer cancel()
	start := time.Now()
	l, err := p.ReadLists(ctx, which)
	switch {
	case errors.Is(err, ErrClosed):
		return !r.failed // replaced by a reload: nobody offers its lists
	case err != nil:
		p.log.Error("re-reading lists after a change", "lists", which, "error", err)
		return !r.failed
	}
	p.log.Debug("re-read lists after a change", "lists", which, "elapsed", time.Since(start))
	p.deliver(*ev, l)
	return !r.failed
}

// deliver hands l to ev. A panic there must not keep the instance the
// caller holds from going back to the pool.
func (p *Plugin) deliver(ev Events, l *Lists) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("applying lists read after a change", "lists", l.Read, "panic", r)
		}
	}()
	ev.ListsChanged(l)
}
