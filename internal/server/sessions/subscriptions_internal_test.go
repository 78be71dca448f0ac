package sessions

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/server/core"
	"github.com/hangar-mcp/hangar/internal/server/httpcalls"
	"github.com/hangar-mcp/hangar/internal/server/internal/servertest"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// sdkSubscriptions is how many URIs the go-sdk server keeps subscriptions
// for (its map by URI), read once no session is left to change it.
func sdkSubscriptions(t *testing.T, s *Server) int {
	t.Helper()
	s.subs.dropping.Wait() // the sessions' ends are done with the map
	f := reflect.ValueOf(s.mcp).Elem().FieldByName("resourceSubscriptions")
	if !f.IsValid() || f.Kind() != reflect.Map {
		t.Fatalf("the go-sdk server has no map resourceSubscriptions any more: check how it keeps subscriptions")
	}
	return f.Len()
}

// TestSubscriptionsEndWithTheirSession: rounds of sessions subscribe to
// many resources and end; the go-sdk keeps none of their URIs, and a
// session holds at most wire.MaxSubscriptions (issue 15.4). Before, every URI
// stayed a key of the go-sdk's map.
func TestSubscriptionsEndWithTheirSession(t *testing.T) {
	ctx := context.Background()
	c := core.New(&core.Options{Logger: servertest.Logger()})
	s, err := New(c, &Options{Logger: servertest.Logger(), Requests: httpcalls.NewTracker()})
	if err != nil {
		t.Fatal(err)
	}
	c.Listen(s)
	if err := c.Reload(ctx, []core.Mount{{Plugin: servertest.Load(t, "conformance", "./examples/conformance", config.Limits{})}}); err != nil {
		t.Fatal(err)
	}
	const sessions, each = 2, 200
	for round := range 3 {
		var ends []func()
		for i := range sessions {
			cs, end, err := s.ConnectClient(ctx, mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil))
			if err != nil {
				t.Fatal(err)
			}
			ends = append(ends, end)
			for j := range each {
				uri := fmt.Sprintf("test://template/%d-%d-%d/data", round, i, j)
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatalf("subscribe %s: %v", uri, err)
				}
			}
		}
		if n := s.Subscriptions(); n != sessions*each {
			t.Errorf("round %d: %d subscriptions held, want %d", round, n, sessions*each)
		}
		for _, end := range ends {
			end()
		}
		if n := sdkSubscriptions(t, s); n != 0 {
			t.Fatalf("round %d: the go-sdk keeps %d URIs of sessions that ended", round, n)
		}
	}

	cs, end, err := s.ConnectClient(ctx, mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	for j := range wire.MaxSubscriptions {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fmt.Sprintf("test://template/%d/data", j)}); err != nil {
			t.Fatal(err)
		}
	}
	// Subscribing again to one of them is no new subscription.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://template/0/data"}); err != nil {
		t.Errorf("subscribing again: %v", err)
	}
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://template/one-more/data"})
	if err == nil || !strings.Contains(err.Error(), "too many subscriptions") {
		t.Errorf("subscription %d: %v, want too many subscriptions", wire.MaxSubscriptions+1, err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://template/0/data"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://template/one-more/data"}); err != nil {
		t.Errorf("a subscription after an unsubscription: %v", err)
	}
}
