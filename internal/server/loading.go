package server

import (
	"time"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server/core"
)

// ErrNotLoaded reports a call to a plugin that is still loading after the
// call's wait, or that failed to load.
var ErrNotLoaded = core.ErrNotLoaded

// Loading is a plugin being loaded in the background (see core.Loading):
// a Mount may hold one instead of a Plugin. The server offers the lists
// the plugin is expected to offer at once, calls wait for it, and
// [Server.Readiness] names the plugins not loaded yet. A plugin loaded on
// demand ([Loading.SetOnDemand]) is loaded once a call wants it, and counts as
// ready meanwhile.
type Loading = core.Loading

// NewLoading returns a plugin named name being loaded, expected to offer
// lists (all kinds; see catalog.Store). Calls wait for it for at most
// callTimeout.
func NewLoading(name string, lists *plugin.Lists, callTimeout time.Duration) *Loading {
	return core.NewLoading(name, lists, callTimeout)
}
