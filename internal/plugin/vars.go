package plugin

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
)

// Shared variables.
//
// Extism keeps the variables of var_get and var_set in each instance, and
// so do Hangar's var_get and var_set (env.go), in instance.vars. Hangar
// makes them the plugin's, by syncing at call boundaries:
//
//   - When a call starts, its instance gets a copy of the plugin's
//     variables if they changed since the instance last saw them.
//   - When the call returns and its instance is kept, the variables the
//     call set or deleted are written to the plugin's, key by key, under a
//     lock. Keys the call did not touch keep whatever value other calls
//     gave them meanwhile.
//
// So a call sees the variables as they were when it started, plus its own
// changes; of two calls that run at once and set the same key, the one that
// returns last wins; and a call whose instance is discarded (it crashed or
// ran out of time) changes nothing. With one instance this is exactly
// Extism's behaviour.

// ErrVarsFull reports a call whose variable changes would take the plugin's
// variables over their size limit. None of its changes are kept.
var ErrVarsFull = errors.New("plugin variables exceed their size limit")

// varEntryOverhead is what Extism counts for each variable besides its name
// and value (the headers of a string and a slice), so that the shared limit
// is the one each instance already enforces on its own copy.
const varEntryOverhead = 40

func varSize(k string, v []byte) int64 { return int64(len(k) + len(v) + varEntryOverhead) }

// sharedVars are the variables of one plugin.
type sharedVars struct {
	limit   int64
	version atomic.Uint64 // changes with every saved change

	mu   sync.Mutex
	m    map[string][]byte // never modified: replaced by each change
	size int64             // of m, as varSize counts
}

// staleVars is an instance's version when its variables must be reloaded.
const staleVars = ^uint64(0)

// load gives inst the plugin's variables, unless it has them already.
func (v *sharedVars) load(inst *instance) {
	if inst.varsVersion == v.version.Load() {
		return
	}
	v.mu.Lock()
	inst.varsBase = v.m
	inst.varsVersion = v.version.Load()
	v.mu.Unlock()
	m := maps.Clone(inst.varsBase)
	if m == nil {
		m = make(map[string][]byte)
	}
	inst.vars = m
}

// save writes the changes the call that just ran on inst made to its
// variables to the plugin's. If they would take the variables over the
// limit it keeps none of them, and inst reloads the variables at its next
// call.
func (v *sharedVars) save(inst *instance) error {
	cur, base := inst.vars, inst.varsBase
	if len(cur) == 0 && len(base) == 0 {
		return nil
	}
	var set map[string][]byte
	for k, val := range cur {
		if old, ok := base[k]; !ok || !sameBytes(old, val) {
			if set == nil {
				set = make(map[string][]byte)
			}
			set[k] = val
		}
	}
	var del []string
	for k := range base {
		if _, ok := cur[k]; !ok {
			del = append(del, k)
		}
	}
	if set == nil && del == nil {
		return nil
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	size := v.size
	for k, val := range set {
		if old, ok := v.m[k]; ok {
			size -= varSize(k, old)
		}
		size += varSize(k, val)
	}
	for _, k := range del {
		if old, ok := v.m[k]; ok {
			size -= varSize(k, old)
		}
	}
	if size >= v.limit {
		inst.varsVersion = staleVars
		return fmt.Errorf("%w: %d of %d bytes", ErrVarsFull, size, v.limit)
	}
	next := maps.Clone(v.m)
	if next == nil {
		next = make(map[string][]byte, len(set))
	}
	maps.Copy(next, set)
	for _, k := range del {
		delete(next, k)
	}
	// The instance's copy equals the new variables only if no other call
	// saved changes since it loaded them.
	current := inst.varsVersion == v.version.Load()
	v.m, v.size = next, size
	version := v.version.Add(1)
	if current {
		inst.varsBase, inst.varsVersion = next, version
	} else {
		inst.varsVersion = staleVars
	}
	return nil
}

// sameBytes reports whether a and b are the same slice (not merely equal
// bytes): var_set stores a new slice every time, so a value the call set is
// a different slice even if it holds the same bytes.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
