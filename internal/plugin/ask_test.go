package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionHost is a Host that is not an Asker, as a session's: it records
// what it is asked, in order.
type sessionHost struct {
	asked []string
}

func (h *sessionHost) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h.asked = append(h.asked, "sampling")
	return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}}, nil
}

func (h *sessionHost) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.asked = append(h.asked, "elicitation "+p.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

func (h *sessionHost) ListRoots(context.Context) (*mcp.ListRootsResult, error) {
	h.asked = append(h.asked, "roots")
	return nil, errors.New("the client has no roots")
}

func (h *sessionHost) Log(context.Context, *mcp.LoggingMessageParams) error { return nil }
func (h *sessionHost) NotifyProgress(context.Context, *mcp.ProgressNotificationParams) error {
	return nil
}
func (h *sessionHost) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return nil
}

// A host that cannot ask several things at once (a session's) is asked
// one request after another, in the order of their keys; a request that
// fails fails alone.
func TestAskOneAfterAnother(t *testing.T) {
	var input askInput
	if err := json.Unmarshal([]byte(`{"requests": {
		"b_name": {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object"}, "timeout": 5000}},
		"a_model": {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}},
		"c_roots": {"method": "roots/list"},
		"d_name": {"method": "elicitation/create", "params": {"message": "Again?", "requestedSchema": {"type": "object"}, "timeout": 2000}}
	}}`), &input); err != nil {
		t.Fatal(err)
	}
	reqs, timeout, err := inputRequests(input)
	if err != nil {
		t.Fatal(err)
	}
	if timeout != 2*time.Second {
		t.Errorf("timeout %v, want the shortest, 2s", timeout)
	}
	h := &sessionHost{}
	answers, err := askHost(context.Background(), h, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.asked, "; "); got != "sampling; elicitation Name?; roots; elicitation Again?" {
		t.Errorf("asked %s", got)
	}
	out := map[string]askAnswer{}
	for i, r := range reqs {
		out[r.Key] = answerOutput(r, answers[i])
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a_model":{"result":{"content":{"type":"text","text":"hi"},"model":"m","role":"assistant"}},` +
		`"b_name":{"result":{"action":"accept","content":{"name":"Ada"}}},` +
		`"c_roots":{"error":"the client has no roots"},` +
		`"d_name":{"result":{"action":"accept","content":{"name":"Ada"}}}}`
	if string(b) != want {
		t.Errorf("answers\n got %s\nwant %s", b, want)
	}
}

func TestAskInputErrors(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{`{}`, "at least one request"},
		{`{"requests": {}}`, "at least one request"},
		{`{"requests": {"": {"method": "roots/list"}}}`, "a key must be 1 to 128 bytes"},
		{`{"requests": {"` + strings.Repeat("k", 129) + `": {"method": "roots/list"}}}`, "a key must be 1 to 128 bytes, not 129"},
		{`{"requests": {"a": {"method": "tools/call"}}}`, `requests["a"].method: "tools/call" is not`},
		{`{"requests": {"a": {"method": "elicitation/create", "params": {"message": "x"}}}}`, `requests["a"]: form elicitation needs a requestedSchema`},
		{`{"requests": {"a": {"method": "sampling/createMessage", "params": {"maxTokens": "5"}}}}`, `requests["a"]: invalid input`},
	} {
		var input askInput
		if err := json.Unmarshal([]byte(tc.input), &input); err != nil {
			t.Fatal(err)
		}
		if _, _, err := inputRequests(input); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.input, err, tc.want)
		}
	}
	many := map[string]any{}
	for i := range MaxInputRequests + 1 {
		many[strings.Repeat("k", i+1)] = map[string]any{"method": "roots/list"}
	}
	b, _ := json.Marshal(map[string]any{"requests": many})
	var input askInput
	if err := json.Unmarshal(b, &input); err != nil {
		t.Fatal(err)
	}
	if _, _, err := inputRequests(input); err == nil || !strings.Contains(err.Error(), "17 requests, more than 16") {
		t.Errorf("too many requests: %v", err)
	}
}
