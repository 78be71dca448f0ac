package sessions

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// ConnectClient connects client to the server in this process, over the
// go-sdk's in-memory transports: one session, served exactly as sessions
// over stdio or HTTP are, at 2025-11-25 (the client does not try
// 2026-07-28 first: in-process callers, `hangar call` and package
// plugintest, test sessions). The returned function ends the session and
// waits for the server's side of it.
func (s *Server) ConnectClient(ctx context.Context, client *mcp.Client) (*mcp.ClientSession, func(), error) {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st) // ids for plugins, as over stdio
	if err != nil {
		return nil, nil, err
	}
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: wire.Version20251125})
	if err != nil {
		ss.Close()
		return nil, nil, err
	}
	return cs, func() {
		cs.Close()
		ss.Wait()
	}, nil
}
