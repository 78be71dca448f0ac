package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
)

// lateClient answers sampling after its context's deadline has passed,
// with err (nil: the context's own error).
type lateClient struct {
	silentClient
	err error
}

func (c *lateClient) CreateMessage(ctx context.Context, _ *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	<-ctx.Done()
	time.Sleep(20 * time.Millisecond)
	if c.err != nil {
		return nil, c.err
	}
	return nil, ctx.Err()
}

// A wait for the client that its deadline ended reads "no answer from the
// client within", and an error the host decided on its own stays that
// error even when it comes after the deadline (a cap refusal on a loaded
// machine once read as a timeout).
func TestWaitNamesItsOwnError(t *testing.T) {
	p := loadSleeper(t, config.Limits{CallTimeout: 10 * time.Second, HostTimeout: 50 * time.Millisecond})
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"deadline", nil, "no answer from the client within 50ms"},
		{"refusal after the deadline", errors.New("too many calls of this principal wait for their client"), "too many calls of this principal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Call{ID: "1", Host: &lateClient{err: tc.err}}
			res, err := p.CallTool(context.Background(), c, "ask", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !res.IsError || !strings.Contains(text, tc.want) {
				t.Errorf("result %q (error %v), want an error with %q", text, res.IsError, tc.want)
			}
			if tc.err != nil && strings.Contains(text, "no answer from the client") {
				t.Errorf("the host's refusal reads as a timeout: %q", text)
			}
		})
	}
}
