//go:build wasip1

// Command reports is an example Hangar plugin whose tools run as tasks
// (the MCP tasks extension, io.modelcontextprotocol/tasks): build_report
// works for a while, and archive_reports asks the user to confirm first.
// A client that declares the extension gets a task for each call, which
// it polls with tasks/get, answers with tasks/update and may end with
// tasks/cancel; any other client waits for the result as usual. The
// plugin does nothing about tasks beyond choosing Tool.Task: Hangar makes
// and keeps them, and the tools are ordinary handlers.
package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

func init() {
	pdk.AddTool(&pdk.Tool{
		Name:        "build_report",
		Title:       "Build a report",
		Description: "Build the report of a period; takes a few seconds per section.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"period": {"type": "string", "description": "What the report covers, e.g. 2026-Q3"},
				"sections": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3},
				"seconds_per_section": {"type": "number", "minimum": 0, "maximum": 60, "default": 2}
			},
			"required": ["period"]
		}`),
		// A call becomes a task at once, for a client that declares the
		// extension: the client need not hold a request open meanwhile.
		Task: pdk.TaskAlways,
	}, buildReport)
	pdk.AddTool(&pdk.Tool{
		Name:        "archive_reports",
		Title:       "Archive reports",
		Description: "Archive the reports of a period, once the user confirms.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"period": {"type": "string"}},
			"required": ["period"]
		}`),
		Task: pdk.TaskAlways,
	}, archiveReports)
}

func buildReport(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	args := struct {
		Period            string  `json:"period"`
		Sections          int     `json:"sections"`
		SecondsPerSection float64 `json:"seconds_per_section"`
	}{Sections: 3, SecondsPerSection: 2}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	var report strings.Builder
	fmt.Fprintf(&report, "Report %s\n", args.Period)
	for i := 1; i <= args.Sections; i++ {
		// The work of a section; a real plugin would query and sum here.
		time.Sleep(time.Duration(args.SecondsPerSection * float64(time.Second)))
		fmt.Fprintf(&report, "section %d of %d: done\n", i, args.Sections)
		// Sent only if the client asked for progress.
		_ = ctx.Progress(&pdk.ProgressParams{Progress: float64(i), Total: float64(args.Sections)})
	}
	return pdk.TextResult(report.String()), nil
}

func archiveReports(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		Period string `json:"period"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	// Waits for the user's answer: in a task, the client sees the task
	// input_required and answers with tasks/update.
	answer, err := ctx.Elicit(&pdk.ElicitParams{
		Message:         "Archive every report of " + args.Period + "?",
		RequestedSchema: json.RawMessage(`{"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}`),
	})
	if err != nil {
		return nil, err
	}
	if answer.Action != pdk.ElicitAccept || answer.Content["confirm"] != true {
		return pdk.TextResult("kept the reports of " + args.Period), nil
	}
	return pdk.TextResult("archived the reports of " + args.Period), nil
}

func main() {}
