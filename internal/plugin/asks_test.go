package plugin

import (
	"slices"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// AsksClient is true exactly for a module that imports a host function
// that waits for the client: the Go PDK links only what a plugin uses,
// so a Go plugin that never asks imports none.
func TestAsksClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func(t *testing.T) *Plugin
		want bool
	}{
		{"WAT echo", func(t *testing.T) *Plugin { return loadFile(t, testutil.BuildWAT(t, "echo"), Options{}) }, false},
		{"Go echo (bench)", func(t *testing.T) *Plugin { return loadBuilt(t, "./bench/plugins/echo", "echo", config.Limits{}) }, false},
		{"Go plugin that elicits", func(t *testing.T) *Plugin {
			return loadBuilt(t, "./internal/testplugins/mrtr", "mrtr", config.Limits{})
		}, true},
		{"Go plugin that samples", func(t *testing.T) *Plugin {
			return loadBuilt(t, "./internal/testplugins/sleeper", "sleeper", config.Limits{})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.load(t).AsksClient(); got != tc.want {
				t.Errorf("AsksClient() = %v, want %v", got, tc.want)
			}
		})
	}
}

// askingImports names every import that returns the client's answer
// (request's have a result; notifications and list changes have none).
func TestAskingImportsAreTheRequests(t *testing.T) {
	p := &Plugin{}
	var requests []string
	for _, f := range p.hostFunctions() {
		if len(f.results) > 0 {
			requests = append(requests, f.name)
		}
	}
	slices.Sort(requests)
	want := slices.Sorted(slices.Values(askingImports))
	if !slices.Equal(requests, want) {
		t.Errorf("imports with a result %v, askingImports %v", requests, want)
	}
}
