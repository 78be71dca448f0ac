package stateless_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"
	"github.com/hangar-mcp/hangar/internal/server/stateless"
)

// TestNewNeedsRequests: the edge is not made without the tracker of the
// HTTP requests that carry calls, which the go-sdk's sessions share:
// without it, the go-sdk's handlers would not find the ids of the calls
// the edge leaves them. Its Hooks need none (they serve stdio too).
func TestNewNeedsRequests(t *testing.T) {
	m, err := mrtr.New(mrtr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := core.New(&core.Options{Logger: servertest.Logger()})
	o := &stateless.Options{Logger: servertest.Logger(), Manager: m}
	if _, err := stateless.NewHooks(c, o); err != nil {
		t.Errorf("NewHooks without Requests: %v", err)
	}
	sdkHTTP := http.NotFoundHandler()
	if e, err := stateless.New(c, sdkHTTP, o); err == nil || !strings.Contains(err.Error(), "Options.Requests") {
		t.Errorf("New without Requests = %v, %v; want an error naming Options.Requests", e, err)
	}
	o.Requests = httpcalls.NewTracker()
	e, err := stateless.New(c, sdkHTTP, o)
	if err != nil {
		t.Fatalf("New with Requests: %v", err)
	}
	e.Stop()
}
