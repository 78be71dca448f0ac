package sessions

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgressMessageByVersion: notifications/progress carries its message
// from 2025-03-26 on, and none before, as received by a go-sdk client.
func TestProgressMessageByVersion(t *testing.T) {
	for _, v := range []string{version20241105, version20250326, version20251125} {
		t.Run(v, func(t *testing.T) {
			ctx := context.Background()
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: wire.SessionVersions()})
			srv.AddSendingMiddleware(adaptRequests)
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			got := make(chan *mcp.ProgressNotificationParams, 1)
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { got <- req.Params },
			})
			wire := &lockedBuffer{}
			cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: ct, Writer: wire}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "tok", Message: "halfway", Progress: 50, Total: 100}); err != nil {
				t.Fatal(err)
			}
			select {
			case p := <-got:
				if p.Progress != 50 || p.Total != 100 || p.ProgressToken != "tok" {
					t.Errorf("progress = %+v", p)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no progress notification")
			}
			var line string
			for l := range strings.Lines(wire.String()) {
				if strings.Contains(l, "notifications/progress") {
					line = l
				}
			}
			if strings.Contains(line, `"message"`) != (v >= version20250326) {
				t.Errorf("on the wire: %s", line)
			}
		})
	}
}

// TestSessionVersion: a client asking for a version the server does not
// speak gets the latest it does.
func TestSessionVersion(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: wire.SessionVersions()})
	for _, tc := range []struct{ asked, want string }{
		{version20241105, version20241105},
		{version20250618, version20250618},
		{"2026-07-28", wire.Version20251125},
	} {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: tc.asked})
		if err != nil {
			t.Fatal(err)
		}
		if got := wire.SessionVersion(ss); got != tc.want || got != cs.InitializeResult().ProtocolVersion {
			t.Errorf("asked %s: Version %s, negotiated %s, want %s", tc.asked, got, cs.InitializeResult().ProtocolVersion, tc.want)
		}
		cs.Close()
		ss.Close()
	}
}

// TestSamplingAudioByVersion: a sampling request with audio reaches a
// 2025-03-26 client and is refused, with the reason, for a 2024-11-05 one.
func TestSamplingAudioByVersion(t *testing.T) {
	for _, v := range []string{version20241105, version20250326} {
		t.Run(v, func(t *testing.T) {
			ctx := context.Background()
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: wire.SessionVersions()})
			srv.AddSendingMiddleware(adaptRequests)
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			reached := false
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					reached = true
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "heard"}}, nil
				},
			})
			cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, err = ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{
				{Role: "user", Content: &mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")}},
			}})
			if v < version20250326 {
				if err == nil || !strings.Contains(err.Error(), "protocol version 2024-11-05 has no audio") || reached {
					t.Errorf("audio sampling in %s: err %v, reached client %v", v, err, reached)
				}
			} else if err != nil || !reached {
				t.Errorf("audio sampling in %s: err %v, reached client %v", v, err, reached)
			}
		})
	}
}
