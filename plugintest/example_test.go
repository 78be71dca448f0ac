package plugintest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/plugintest"
)

// Build a plugin from source, start it and call one of its tools, as a
// test of the plugin would. The plugin's tool "add" is a typed tool (see
// package github.com/hangar-mcp/hangar/pdk/typed): its result is
// structured content, and the same JSON as text.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "plugintest-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	wasm := filepath.Join(dir, "typed.wasm")
	if err := plugintest.Build(ctx, "../internal/testplugins/typed", wasm); err != nil {
		log.Fatal(err)
	}

	s, err := plugintest.Start(ctx, wasm, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	fmt.Println(res.StructuredContent)

	// Arguments are checked against the tool's input schema, as hangar
	// serve checks them: a bad argument is a tool error the model can see.
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": "one", "b": 2}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
	// Output:
	// {"sum":3}
	// map[sum:3]
	// true
}

// The settings of the plugin's entry in hangar.yaml (config values,
// limits, grants, prefix), as Go values, apply as hangar serve applies
// them.
func ExampleOptions_config() {
	ctx := context.Background()
	wasm := buildTyped()
	s, err := plugintest.Start(ctx, wasm, &plugintest.Options{
		Config: map[string]string{"greeting": "Ahoy"},
		Limits: plugintest.Limits{CallTimeout: time.Second},
		Prefix: "demo",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "demo_greet", Arguments: map[string]any{"name": "Ada", "excited": true}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StructuredContent)

	// A tool that loops is stopped at limits.call_timeout.
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "demo_spin"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
	// Output:
	// map[greeting:Ahoy, Ada!]
	// true
}

// Options are checked as hangar serve checks hangar.yaml: a problem names
// the setting.
func ExampleOptions_invalid() {
	_, err := plugintest.Start(context.Background(), buildTyped(), &plugintest.Options{
		Grants: plugintest.Grants{AllowedPaths: []plugintest.Path{{Host: "./no-such-dir", Guest: "/data"}}},
	})
	fmt.Println(strings.Replace(err.Error(), mustAbs("no-such-dir"), "ABS", 1))
	// Output:
	// plugintest: Options: grants.allowed_paths[0].host: ./no-such-dir (resolved to ABS) does not exist
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		log.Fatal(err)
	}
	return abs
}

// Canned client answers: the client's model answers sampling requests, its
// user elicitation requests, and it has one root.
func ExampleOptions_client() {
	ctx := context.Background()
	wasm := buildTyped()
	s, err := plugintest.Start(ctx, wasm, &plugintest.Options{
		Client: &mcp.ClientOptions{
			CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "canned", Role: "assistant", Content: &mcp.TextContent{Text: "42"}}, nil
			},
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			},
		},
		Roots: []*mcp.Root{{URI: "file:///work", Name: "work"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	for _, call := range []mcp.CallToolParams{
		{Name: "ask", Arguments: map[string]any{"question": "The answer?"}},
		{Name: "confirm", Arguments: map[string]any{"action": "deploy"}},
		{Name: "roots"},
	} {
		res, err := s.CallTool(ctx, &call)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(call.Name, res.StructuredContent)
	}
	// Output:
	// ask map[answer:42]
	// confirm map[confirmed:true]
	// roots map[uris:[file:///work]]
}

// buildTyped builds internal/testplugins/typed once per process and
// returns the path of its module.
func buildTyped() string {
	typedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "plugintest-example-")
		if err != nil {
			log.Fatal(err)
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		typedWasm = filepath.Join(dir, "typed.wasm")
		if err := plugintest.Build(context.Background(), "../internal/testplugins/typed", typedWasm); err != nil {
			log.Fatal(err)
		}
	})
	return typedWasm
}
