package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// A tools/call of a client that declared io.modelcontextprotocol/tasks,
// served as the 2026-07-28 edge will: a call still running after the
// threshold becomes a task, which tasks/get then follows. (The Run here is
// plain Go; the edge's runs the plugin's tool, as the tests do.)
func Example() {
	m, _ := mrtr.New(mrtr.Options{})
	defer m.Close()
	tb, _ := tasks.New(m, tasks.Options{Auth: true})
	defer tb.Close()

	release := make(chan struct{})
	run := func(ctx context.Context, _ plugin.Host) (any, error) {
		select {
		case <-release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	owner := tasks.Owner{Principal: "alice"}
	// The edge's choice for this tool: a task once it has run 50 ms.
	policy := mrtr.TaskPolicy{Mode: mrtr.TaskAuto, After: 50 * time.Millisecond}
	req := mrtr.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"build","arguments":{}}`), Principal: "alice"}

	// The edge answers a CreateTaskResult: resultType "task" and the view.
	task, _, err := tb.Call(context.Background(), req, "", run, policy)
	if err != nil {
		panic(err)
	}
	fmt.Println("created:", task.Status)

	// tasks/get by another principal: unknown, as a made-up id.
	if _, err := tb.Get(tasks.Owner{Principal: "mallory"}, task.TaskID); err == tasks.ErrUnknownTask {
		fmt.Println("mallory:", tasks.RPCError(err).Code)
	}

	// A listener (notifications/tasks) gets the view now and each change.
	l, _, _ := tb.Listen(owner, []string{task.TaskID})
	defer l.Close()
	fmt.Println("listening:", (<-l.Events()).Status)

	close(release)
	done := <-l.Events()
	fmt.Println("event:", done.Status, string(done.Result))

	got, _ := tb.Get(owner, task.TaskID)
	fmt.Println("tasks/get:", got.Status)
	// Output:
	// created: working
	// mallory: -32602
	// listening: working
	// event: completed {"content":[{"type":"text","text":"done"}]}
	// tasks/get: completed
}
