package core

import (
	"sync"
	"time"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// RootsInterval is the least time between the starts of two
// on_roots_list_changed calls of one plugin for one client.
const RootsInterval = 500 * time.Millisecond

// rootsRuns are the on_roots_list_changed calls in progress, one at most
// per plugin and client (the Scope of the notification's Request), with
// the notification that came last while each ran.
type rootsRuns struct {
	mu   sync.Mutex
	runs map[rootsKey]*plugin.Call // nil value: running, nothing more to run
}

type rootsKey struct {
	m     *mount
	scope *Scope
}

// start reports whether call is to run now: false if a call for the same
// plugin and client runs, which will run call (the last one given) next.
func (r *rootsRuns) start(m *mount, scope *Scope, call *plugin.Call) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := rootsKey{m, scope}
	if _, running := r.runs[k]; running {
		r.runs[k] = call
		return false
	}
	if r.runs == nil {
		r.runs = map[rootsKey]*plugin.Call{}
	}
	r.runs[k] = nil
	return true
}

// waiting reports whether a call for the plugin and client waits for the
// one running.
func (r *rootsRuns) waiting(m *mount, scope *Scope) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[rootsKey{m, scope}] != nil
}

// next returns the call to run after one for the plugin and client ended,
// or nil, when the run is over (nothing waits, or the client is gone).
func (r *rootsRuns) next(m *mount, scope *Scope) *plugin.Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := rootsKey{m, scope}
	call := r.runs[k]
	if scope != nil && scope.over() {
		call = nil
	}
	if call == nil {
		delete(r.runs, k)
		return nil
	}
	r.runs[k] = nil
	return call
}
