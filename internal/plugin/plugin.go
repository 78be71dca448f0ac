package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Plugin is a compiled plugin with its pool of instances. It is safe for
// concurrent use.
type Plugin struct {
	name    string
	opts    Options
	log     *slog.Logger
	pool    *pool
	iface   Interface
	exports map[string]bool
	events  atomic.Pointer[Events]

	stateless bool          // the module exports StatelessExport
	asks      bool          // the module imports one of askingImports (AsksClient)
	vars      sharedVars    // Extism variables, shared by all instances
	listSeq   atomic.Uint64 // numbers the readings of the lists

	progressDropped atomic.Uint64 // see ProgressDropped (host.go)

	roots     []*os.Root // the granted directories, closed after the module
	closeOnce sync.Once

	compileTime time.Duration // how long Load spent compiling (see stats.go)
}

// SetEvents directs the plugin's lists, read again after it reported a
// change, and its resource-updated notifications to ev. Until it is called
// they are dropped.
func (p *Plugin) SetEvents(ev Events) { p.events.Store(&ev) }

func (p *Plugin) emit(fn func(Events)) {
	if ev := p.events.Load(); ev != nil && *ev != nil {
		fn(*ev)
	}
}

// Name returns the plugin's configured name.
func (p *Plugin) Name() string { return p.name }

// Interface returns the interface the module speaks.
func (p *Plugin) Interface() Interface { return p.iface }

// Has reports whether the module exports the named function.
func (p *Plugin) Has(export string) bool { return p.exports[export] }

// Close stops the plugin: new calls fail with ErrClosed, calls in progress
// finish on their instances, and the module is released after the last one.
func (p *Plugin) Close(ctx context.Context) {
	p.pool.close(ctx)
	p.closeOnce.Do(func() {
		if len(p.roots) == 0 {
			return
		}
		go func() {
			p.pool.wait(context.Background())
			p.closeRoots()
		}()
	})
}

func (p *Plugin) closeRoots() {
	for _, r := range p.roots {
		r.Close()
	}
}

// Wait blocks until a closed plugin has released its module, or ctx is done.
func (p *Plugin) Wait(ctx context.Context) error { return p.pool.wait(ctx) }

// Stats reports the number of instances in use and idle.
func (p *Plugin) Stats() (inUse, idle int) { return p.pool.stats() }

// Call describes the MCP request a plugin call serves.
type Call struct {
	// Host reaches the MCP client of the session that made the request. Nil
	// means there is none: host imports that need a client fail.
	Host Host
	// ID is the JSON-RPC id of the request, as a string; empty if none.
	ID string
	// Meta is the request's _meta, passed through to v1 plugins.
	Meta map[string]any
	// MetaJSON, if set, is the request's _meta as v1 plugins get it,
	// already encoded: a JSON object the edge checked, which plugins get
	// as it is instead of Meta (then nil). An edge sets it for a _meta it
	// read without decoding it (a 2026-07-28 request's usual one), and
	// only when it holds nothing the host reads (no progressToken).
	MetaJSON json.RawMessage
	// Holder names the request for the busy errors of other callers, who
	// are told who holds the plugin ("request 7 of session 3f2a..."). It
	// must hold no secret: no token, no whole session ID. Empty means
	// "request ID".
	Holder string
}

// callState is what the host imports of a running call can see.
//
// The state is also the context the export runs under, whose Value gives
// it to the host imports (stateFrom), and holds the call's budget and its
// holding: a call allocates one of them instead of five.
type callState struct {
	plugin *Plugin
	call   *Call
	budget budget
	hold   holding // the instance's holding, while the call holds it
	held   Call    // call, with its Host told of the holding (heldHost)
	// caller is the caller's context, without the budget: notifications
	// are sent under it. A session queues them (so a client that reads
	// nothing holds no call) and writes them after the plugin's run
	// returned, until the caller's call ends, which waits for them
	// briefly; the budget's context has ended by then.
	caller context.Context
	// changed holds the lists the plugin reported changed during the call.
	changed ListSet
	// refresh marks a call that re-reads the lists after a change: its
	// own notifications of changes are ignored.
	refresh bool
	// denied is what Hangar refused the call (ungranted.go).
	denied []string
}

type stateKey struct{}

// The call's context is its budget's: the caller's, ended also when the
// budget runs out. The budget's clock stops while an import waits for the
// client, so it never ends such a wait; it ends a notification that blocks
// (a client that reads nothing), like every other blocking path of the
// call (clock.go).

func (s *callState) Deadline() (time.Time, bool) { return s.budget.Deadline() }
func (s *callState) Done() <-chan struct{}       { return s.budget.Done() }
func (s *callState) Err() error                  { return s.budget.Err() }
func (s *callState) Value(k any) any {
	if _, ok := k.(stateKey); ok {
		return s
	}
	return s.budget.Value(k)
}

func stateFrom(ctx context.Context) *callState {
	s, _ := ctx.Value(stateKey{}).(*callState)
	return s
}

// invoke runs one export on a borrowed instance and returns its output.
func (p *Plugin) invoke(ctx context.Context, c *Call, export string, input []byte) ([]byte, error) {
	out, _, err := p.invokeWithin(ctx, c, export, input, p.opts.Limits.CallTimeout)
	return out, err
}

// invokeWithin is invoke with limit of running time instead of the call
// timeout. It also reports the running time the export spent (by the call
// budget's clock, so without its waits for the client), so that several
// exports can share one allowance.
func (p *Plugin) invokeWithin(ctx context.Context, c *Call, export string, input []byte, limit time.Duration) (out []byte, spent time.Duration, err error) {
	if c == nil {
		c = &Call{}
	}
	if limit <= 0 {
		return nil, 0, p.timeoutError(export)
	}
	if r := refreshingFrom(ctx); r != nil && r.inst != nil {
		// Re-reading the lists on the instance that reported the change,
		// which the call that did so still holds.
		out, spent, healthy, _, err := p.runOn(ctx, r.inst, c, export, input, limit, true)
		if !healthy {
			r.failed = true
		}
		return out, spent, err
	}
	// Waiting for a free instance is bounded too: a plugin whose instances
	// are all stuck must not hold calls forever.
	inst, err := p.pool.get(ctx, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("plugin %s: %w", p.name, err)
	}
	p.vars.load(inst)
	refresh := refreshingFrom(ctx) != nil
	out, spent, healthy, changed, err := p.runOn(ctx, inst, c, export, input, limit, refresh)
	if err != nil {
		err = p.pool.refusedError(inst, err) // pool_memory.go
	}
	if changed != 0 {
		inst.changed |= changed
		if healthy {
			// Read the changed lists on this instance, before any other
			// call can change them again.
			healthy = p.refresh(ctx, inst, changed)
		}
	}
	if healthy {
		if verr := p.vars.save(inst); verr != nil {
			p.log.Warn("plugin variables not saved", "export", export, "error", verr)
			if err == nil {
				out, err = nil, fmt.Errorf("plugin %s: %s: %w", p.name, export, verr)
			}
		}
	}
	lost := !healthy && inst.changed != 0
	lists := inst.changed
	p.pool.put(inst, healthy)
	if lost && !refresh {
		// The instance whose lists the server knows is gone: read them from
		// the one that replaces it.
		p.refresh(ctx, nil, lists)
	}
	return out, spent, err
}

// runOn runs one export on inst and returns its output, the running time it
// spent, whether inst is still usable, and the lists it reported changed.
func (p *Plugin) runOn(ctx context.Context, inst *instance, c *Call, export string, input []byte, limit time.Duration, refresh bool) (out []byte, spent time.Duration, healthy bool, changed ListSet, err error) {
	s := &callState{plugin: p, call: c, caller: ctx, refresh: refresh}
	b := &s.budget
	b.start(ctx, limit)
	if inst.hold.Load() == nil { // a refresh on a held instance keeps its holder
		h := &s.hold
		h.init(c, export, b, refresh)
		inst.hold.Store(h)
		defer inst.hold.Store(nil)
		if c.Host != nil {
			s.held = *c
			s.held.Host = heldHost{Host: c.Host, p: p, h: h}
			s.call = &s.held
		}
	}
	res, err := safeCall(s, inst, export, input)
	expired, spent := b.stop()
	changed = s.changed

	switch {
	case expired:
		return nil, spent, false, changed, p.timeoutError(export)
	case err != nil && ctx.Err() != nil:
		return nil, spent, false, changed, fmt.Errorf("plugin %s: %s: %w", p.name, export, context.Cause(ctx))
	case err != nil:
		if denied := p.hostDenied(export, err); denied != nil {
			return nil, spent, false, changed, denied
		}
		return nil, spent, false, changed, p.crashError(s, export, err) // errors.go
	}
	// A module that exited with code 0 succeeded, but is closed.
	healthy = !inst.mod.IsClosed()
	switch {
	case res.err != "":
		return nil, spent, healthy, changed, p.pluginError(s, export, res.err) // errors.go
	case res.rc != 0:
		return nil, spent, healthy, changed, p.pluginError(s, export, fmt.Sprintf("%s returned status %d", export, res.rc))
	case int64(len(res.out)) > p.opts.Limits.MaxOutput:
		// The instance is sound, but holds a large output buffer: drop it
		// to give the memory back.
		return nil, spent, false, changed, fmt.Errorf("plugin %s: %s: %w (%d > %d bytes)", p.name, export, ErrOutputTooLarge, len(res.out), p.opts.Limits.MaxOutput)
	case s.denied != nil:
		return p.deniedResult(s, export, res.out), spent, healthy, changed, nil // ungranted.go
	}
	return res.out, spent, healthy, changed, nil
}

// timeoutError reports that export ran out of the call timeout.
func (p *Plugin) timeoutError(export string) error {
	return fmt.Errorf("plugin %s: %s: %w (%s)", p.name, export, ErrTimeout, p.opts.Limits.CallTimeout)
}

// safeCall calls the export, turning a panic anywhere below into an error.
func safeCall(ctx context.Context, inst *instance, export string, input []byte) (res result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic during call: %v", r)
		}
	}()
	return inst.call(ctx, export, input)
}
