package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// serveCalls is the hidden mode that runs one tool n times through
// Hangar's engine (internal/plugin, no MCP) and exits: the process that
// the instructions section runs under callgrind.
//
//	bench -serve calls -cache DIR -n 1000 -tool echo -args '{"text":"hi"}' PLUGIN.wasm
func serveCalls(args []string) error {
	fs := flag.NewFlagSet("calls", flag.ContinueOnError)
	cache := fs.String("cache", "", "compilation cache directory")
	n := fs.Int("n", 1000, "calls to make after the first")
	tool := fs.String("tool", "echo", "tool to call")
	input := fs.String("args", string(echoInput), "the tool's arguments, a JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one plugin file, got %d arguments", fs.NArg())
	}
	wasm, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	ctx := context.Background()
	e, err := plugin.NewEngine(*cache)
	if err != nil {
		return err
	}
	defer e.Close(ctx)
	// Under callgrind a call is fifty times slower: no time limit that
	// a loaded machine could reach.
	opts := plugin.Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)}
	opts.Limits.CallTimeout = time.Hour
	p, err := e.Load(ctx, wasm, opts)
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	a := json.RawMessage(*input)
	// The first calls grow the guest's memory and heap: they are part of
	// the start-up.
	if err := callLoop(ctx, p, *tool, a, 10); err != nil {
		return err
	}
	runtime.GC() // the window starts with a collected heap
	callgrindMark()
	err = callLoop(ctx, p, *tool, a, *n)
	callgrindMark()
	return err
}

// callgrindMark does nothing. Callgrind is told to dump its counters when
// it is entered (--dump-before=main.callgrindMark), so that the dump
// between its two calls counts the calls and nothing else, in every thread
// of the process.
//
//go:noinline
func callgrindMark() { markCount++ }

var markCount int

// callLoop makes n calls.
func callLoop(ctx context.Context, p *plugin.Plugin, tool string, args json.RawMessage, n int) error {
	for i := range n {
		res, err := p.CallTool(ctx, nil, tool, args)
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %s", resultText(res))
		}
		if err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
	}
	return nil
}
