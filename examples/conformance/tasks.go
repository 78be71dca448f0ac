//go:build wasip1

package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

// The tools of the suite's scenarios of the tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663). Each says when its calls
// become tasks (pdk.Tool.Task): Hangar makes the task, answers
// tasks/get, tasks/update and tasks/cancel; the plugin only runs, asks and
// waits, as any tool does.

var (
	secondsArgs  = json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0},"label":{"type":"string"}}}`)
	greetArgs    = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	filenameArgs = json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}}}`)
	confirmBool  = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}}}`)
	nameConfirm  = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"confirm":{"type":"boolean"}}}`)
)

// settle is how long a tool that must be running as a task when its
// request is answered keeps running (past the server's tasks.after in the
// conformance configuration).
const settle = time.Second

func addTasks() {
	for _, t := range []struct {
		tool    *pdk.Tool
		handler pdk.ToolHandler
	}{
		{&pdk.Tool{Name: "greet", Description: "Greets by name, always at once (never a task)", InputSchema: greetArgs, Task: pdk.TaskNever}, greet},
		{&pdk.Tool{Name: "slow_compute", Description: "Sleeps the given seconds, then reports them (a task at once)", InputSchema: secondsArgs, Task: pdk.TaskAlways}, slowCompute},
		{&pdk.Tool{Name: "failing_job", Description: "Fails with a tool error after a second (requires a task)", InputSchema: noArguments, Task: pdk.TaskRequired}, failingJob},
		{&pdk.Tool{Name: "protocol_error_job", Description: "Fails with a protocol error: asks for the client's roots, which the scenario's client does not declare (a task at once)", InputSchema: noArguments, Task: pdk.TaskAlways}, protocolErrorJob},
		{&pdk.Tool{Name: "confirm_delete", Description: "Asks to confirm the deletion of a file (a task at once)", InputSchema: filenameArgs, Task: pdk.TaskAlways}, confirmDelete},
		{&pdk.Tool{Name: "multi_input", Description: "Asks two questions at once (a task at once)", InputSchema: noArguments, Task: pdk.TaskAlways}, multiInput},
		{&pdk.Tool{Name: "test_tool_with_task", Description: "Asks the user's name over MRTR, then runs on as a task (requires a task)", InputSchema: noArguments, Task: pdk.TaskRequired}, toolWithTask},
	} {
		pdk.AddTool(t.tool, t.handler)
	}
}

func greet(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct{ Name string }
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	return pdk.TextResult("Hello, " + args.Name + "!"), nil
}

func slowCompute(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Seconds float64
		Label   string
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	time.Sleep(time.Duration(args.Seconds * float64(time.Second)))
	return pdk.TextResult(fmt.Sprintf("computed %s after %g s", args.Label, args.Seconds)), nil
}

func failingJob(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	time.Sleep(settle)
	return nil, fmt.Errorf("the job failed, as it always does")
}

// protocolErrorJob asks for the client's roots: Hangar refuses a request
// for input the client did not declare it can answer (-32021, Missing
// Required Client Capability), a protocol error, which fails the call and
// its task. (A plugin that panics, or returns an error, fails its call
// with a tool error, isError: the task completes.)
func protocolErrorJob(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := askOne(ctx, "client_roots", &pdk.InputRequest{ListRoots: true})
	if err != nil {
		return nil, err
	}
	return pdk.TextResult(fmt.Sprintf("the client declared roots (%d): no protocol error", len(res.ListRoots.Roots))), nil
}

func confirmDelete(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct{ Filename string }
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := askOne(ctx, "confirm", &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "Delete " + args.Filename + "?", RequestedSchema: confirmBool}})
	if err != nil {
		return nil, err
	}
	if res.Elicit.Action != pdk.ElicitAccept || res.Elicit.Content["confirm"] != true {
		return pdk.TextResult("kept " + args.Filename), nil
	}
	return pdk.TextResult("deleted " + args.Filename), nil
}

func multiInput(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := ctx.Ask(map[string]*pdk.InputRequest{
		"first":  {Elicit: &pdk.ElicitParams{Message: "First question", RequestedSchema: nameConfirm}},
		"second": {Elicit: &pdk.ElicitParams{Message: "Second question", RequestedSchema: nameConfirm}},
	})
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"first", "second"} {
		if res[k].Err != nil {
			return nil, res[k].Err
		}
	}
	return pdk.TextResult(fmt.Sprintf("first: %s; second: %s", formValue(res["first"].Elicit, "name"), formValue(res["second"].Elicit, "name"))), nil
}

func toolWithTask(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := askOne(ctx, "user_name", &pdk.InputRequest{Elicit: &pdk.ElicitParams{Message: "What is your name?", RequestedSchema: nameForm}})
	if err != nil {
		return nil, err
	}
	// Runs on: the retry that brought the name is answered with a task.
	time.Sleep(settle)
	return pdk.TextResult("Hello, " + formValue(res.Elicit, "name") + "! (from a task)"), nil
}
