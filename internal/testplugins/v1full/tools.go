//go:build wasip1

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hangar-mcp/hangar/pdk"
)

// rootsChanged counts the on_roots_list_changed calls of this instance.
var rootsChanged int

// jsonResult answers v as JSON text.
func jsonResult(v any) (*pdk.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	return pdk.TextResult(string(b)), nil
}

func listRoots(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	res, err := ctx.ListRoots()
	if err != nil {
		return nil, err
	}
	return jsonResult(res)
}

func rootsChangedCount(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return pdk.TextResult(strconv.Itoa(rootsChanged)), nil
}

func notifyResourceUpdated(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		URI string `json:"uri"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	ctx.NotifyResourceUpdated(args.URI)
	return pdk.TextResult("notified " + args.URI), nil
}

func elicitURL(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	args := struct {
		URL           string `json:"url"`
		ElicitationID string `json:"elicitationId"`
		Message       string `json:"message"`
	}{Message: "Please open the link"}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := ctx.ElicitURL(&pdk.ElicitURLParams{Message: args.Message, URL: args.URL, ElicitationID: args.ElicitationID})
	if err != nil {
		return nil, err
	}
	if res.Action == pdk.ElicitAccept {
		ctx.NotifyURLElicitationCompleted(args.ElicitationID)
	}
	return pdk.TextResult("action=" + res.Action), nil
}

func elicitForm(ctx *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	args := struct {
		Message   string `json:"message"`
		TimeoutMS int64  `json:"timeout_ms"`
	}{Message: "What is your name?"}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	res, err := ctx.Elicit(&pdk.ElicitParams{
		Message:         args.Message,
		RequestedSchema: object(`{"name":{"type":"string"}}`, "name"),
		Timeout:         time.Duration(args.TimeoutMS) * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	content, err := json.Marshal(res.Content)
	if err != nil {
		return nil, fmt.Errorf("encoding content: %w", err)
	}
	return pdk.TextResult(fmt.Sprintf("action=%s, content=%s", res.Action, content)), nil
}

func logLevels(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	levels := []pdk.LoggingLevel{
		pdk.LevelDebug, pdk.LevelInfo, pdk.LevelNotice, pdk.LevelWarning,
		pdk.LevelError, pdk.LevelCritical, pdk.LevelAlert, pdk.LevelEmergency,
	}
	for _, level := range levels {
		if err := ctx.Log(&pdk.LoggingMessageParams{Level: level, Logger: "v1full", Data: string(level)}); err != nil {
			return nil, err
		}
	}
	return pdk.TextResult(fmt.Sprintf("logged %d messages", len(levels))), nil
}

func spin(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	for {
	}
}

func sleepMS(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		MS int64 `json:"ms"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Duration(args.MS) * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	return pdk.TextResult(fmt.Sprintf("slept %dms", args.MS)), nil
}

func echoContext(ctx *pdk.Context, _ *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	return jsonResult(map[string]any{"id": ctx.ID, "meta": ctx.Meta, "progressToken": ctx.ProgressToken()})
}

func configGreeting(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	value, ok := pdk.Config("greeting")
	return jsonResult(map[string]any{"value": value, "set": ok})
}

func structured(_ *pdk.Context, req *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	var args struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	sum := map[string]float64{"sum": args.A + args.B}
	res, err := jsonResult(sum)
	if err != nil {
		return nil, err
	}
	res.StructuredContent = sum
	return res, nil
}

func panicTool(*pdk.Context, *pdk.CallToolRequest) (*pdk.CallToolResult, error) {
	panic("v1full: deliberate panic")
}
