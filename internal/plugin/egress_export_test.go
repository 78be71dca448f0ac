package plugin

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
)

// SetDialHooks makes plugin HTTP requests resolve names with lookup and
// connect with dial (either may be nil for the default) until the end of
// the test.
func SetDialHooks(t testing.TB, lookup func(ctx context.Context, network, host string) ([]netip.Addr, error), dial func(ctx context.Context, network, address string) (net.Conn, error)) {
	oldLookup, oldDial := lookupNetIP, dialAddr
	if lookup != nil {
		lookupNetIP = lookup
	}
	if dial != nil {
		dialAddr = dial
	}
	t.Cleanup(func() { lookupNetIP, dialAddr = oldLookup, oldDial })
}

var setDialHooks = SetDialHooks

// SetDeployment protects addrs as the deployment's until the end of the
// test.
func SetDeployment(t testing.TB, addrs []config.AddrRange) {
	t.Cleanup(ProtectDeployment(addrs))
}
