package tasks_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/tasks"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

var (
	engineOnce sync.Once
	engine     *plugin.Engine
	engineErr  error
)

// loadPlugin compiles internal/testplugins/mrtr (once per run) and loads
// it with at most instances instances.
func loadPlugin(t *testing.T, instances int) *plugin.Plugin {
	t.Helper()
	engineOnce.Do(func() { engine, engineErr = plugin.NewEngine(testutil.CacheDir()) })
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	wasm, err := os.ReadFile(testutil.BuildPlugin(t, "./internal/testplugins/mrtr"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(context.Background(), wasm, plugin.Options{Name: "mrtr", Limits: config.Limits{MaxInstances: instances}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

// newTable returns a Table over a Manager of its own, both closed when
// the test ends.
func newTable(t *testing.T, mo mrtr.Options, o tasks.Options) (*tasks.Table, *mrtr.Manager) {
	t.Helper()
	if mo.Key == nil {
		mo.Key = testKey
	}
	m, err := mrtr.New(mo)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := tasks.New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close(); m.Close() })
	return tb, m
}

// allCaps declares every kind of input.
var allCaps = &mcp.ClientCapabilities{
	Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
	Sampling:    &mcp.SamplingCapabilities{},
	RootsV2:     &mcp.RootCapabilities{},
}

// call is one tools/call of the mrtr plugin.
type call struct {
	tool string
	args map[string]any
}

func sleepCall(ms int) call { return call{"sleep", map[string]any{"ms": ms}} }

// askCall asks for a name, then answers with pad_kib KiB of padding: as a
// task of TaskAlways, it is a task whatever the machine's load (it cannot
// end before its answer comes), and it ends when answerTask answers it.
func askCall(padKiB int) call {
	return call{"sleep", map[string]any{"ms": 0, "ask": true, "pad_kib": padKiB}}
}

// answerTask waits until the task asks, and answers it.
func answerTask(t *testing.T, tb *tasks.Table, owner tasks.Owner, id string) {
	t.Helper()
	in := waitFor(t, tb, owner, id, "input_required")
	answers := map[string]json.RawMessage{}
	for k := range in.InputRequests {
		answers[k] = json.RawMessage(`{"action":"accept","content":{"name":"x"}}`)
	}
	if err := tb.Update(owner, id, answers); err != nil {
		t.Fatal(err)
	}
}

// Task policies of the tests.
var (
	always = mrtr.TaskPolicy{Mode: mrtr.TaskAlways}
	never  = mrtr.TaskPolicy{}
	// patient is TaskAuto with a threshold no call of these tests reaches
	// before it ends or asks, however loaded the machine.
	patient = mrtr.TaskPolicy{Mode: mrtr.TaskAuto, After: time.Minute}
)

func after(d time.Duration) mrtr.TaskPolicy { return mrtr.TaskPolicy{Mode: mrtr.TaskAuto, After: d} }

// start sends c to tb for owner, as the edge would, with policy.
func start(t *testing.T, tb *tasks.Table, p *plugin.Plugin, owner tasks.Owner, c call, policy mrtr.TaskPolicy) (*tasks.Detailed, *mrtr.Outcome, error) {
	t.Helper()
	if c.args == nil {
		c.args = map[string]any{}
	}
	raw, err := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mrtr.Request{Method: "tools/call", Params: raw, Principal: owner.Principal, Capabilities: allCaps}
	return tb.Call(ctx, req, owner.Client, toolRun(p, c), policy)
}

// toolRun is the Run of c on p.
func toolRun(p *plugin.Plugin, c call) mrtr.Run {
	return func(ctx context.Context, host plugin.Host) (any, error) {
		args, _ := json.Marshal(c.args)
		return p.CallTool(ctx, &plugin.Call{Host: host, ID: "1"}, c.tool, args)
	}
}

// mustTask starts c and fails unless it became a task.
func mustTask(t *testing.T, tb *tasks.Table, p *plugin.Plugin, owner tasks.Owner, c call, policy mrtr.TaskPolicy) *tasks.Detailed {
	t.Helper()
	d, out, err := start(t, tb, p, owner, c, policy)
	if err != nil || d == nil {
		t.Fatalf("%s: %+v, %+v, %v; want a task", c.tool, d, out, err)
	}
	return d
}

// waitFor polls tasks/get until the task has status want.
func waitFor(t *testing.T, tb *tasks.Table, owner tasks.Owner, id, want string) *tasks.Detailed {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := tb.Get(owner, id)
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		if d.Status == want {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %s (%s), want %s", d.Status, d.StatusMessage, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listen returns a listener of the task id, closed when the test ends.
func listen(t *testing.T, tb *tasks.Table, owner tasks.Owner, id string) *tasks.Listener {
	t.Helper()
	l, accepted, err := tb.Listen(owner, []string{id})
	if err != nil || len(accepted) != 1 {
		t.Fatalf("Listen: %v, %v", accepted, err)
	}
	t.Cleanup(l.Close)
	return l
}

// next returns the listener's first event with status want: for a task
// that may be forgotten soon after, where polling could miss it.
func next(t *testing.T, l *tasks.Listener, want string) *tasks.Detailed {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case d, ok := <-l.Events():
			if !ok {
				t.Fatalf("listener closed before %s", want)
			}
			if d.Status == want {
				return d
			}
		case <-deadline:
			t.Fatalf("no %s event", want)
		}
	}
}

// resultText returns the text of a task's CallToolResult.
func resultText(t *testing.T, d *tasks.Detailed) string {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(d.Result, &res); err != nil || len(res.Content) == 0 || res.IsError {
		t.Fatalf("result %s: %v", d.Result, err)
	}
	return res.Content[0].Text
}

func decoded(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func inUse(p *plugin.Plugin) int { n, _ := p.Stats(); return n }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// reason returns the reason in a failed task's error data.
func reason(d *tasks.Detailed) string {
	if d.Error == nil {
		return ""
	}
	var v struct{ Reason string }
	json.Unmarshal(d.Error.Data, &v)
	return v.Reason
}
