package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
)

// oneFlags are the flags of the commands that load one .wasm file.
type oneFlags struct {
	runtimeFlags
	json bool
	set  setFlag
}

func (f *oneFlags) register(fs *flag.FlagSet, jsonUsage string) {
	f.runtimeFlags.register(fs)
	f.set = setFlag{}
	fs.BoolVar(&f.json, "json", false, jsonUsage)
	fs.Var(f.set, "set", "plugin config value key=value (repeatable)")
}

const callJSONUsage = "print the whole CallToolResult as JSON"

var callCmd = &command{
	name:  "call",
	args:  "[--json] PLUGIN.wasm TOOL ['{json arguments}']",
	short: "call one tool of a plugin",
	long: `Call loads a plugin with default limits and no grants, calls one tool with
the given JSON object of arguments (default {}), and prints the text of the
result, or the whole result with --json. The exit status is 1 if the tool
reports an error.

There is no MCP client: a plugin that asks for sampling, elicitation or
roots gets an error; its log messages and progress go to stderr.`,
	flags: func(fs *flag.FlagSet) { new(oneFlags).register(fs, callJSONUsage) },
}

func init() { callCmd.run = runCall }

// errToolFailed reports a tool result with isError set; it has been printed.
var errToolFailed = errors.New("tool reported an error")

func runCall(ctx context.Context, env *Env, args []string) error {
	var f oneFlags
	fs := callCmd.flagSet(env.Stderr)
	f.register(fs, callJSONUsage)
	pos, err := callCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos) > 3 {
		callCmd.help(env.Stderr)
		return errUsage
	}
	arguments := json.RawMessage("{}")
	if len(pos) == 3 {
		arguments = json.RawMessage(pos[2])
		var obj map[string]any
		if err := json.Unmarshal(arguments, &obj); err != nil || obj == nil {
			return fmt.Errorf("arguments must be a JSON object: %s", pos[2])
		}
	}
	p, done, err := loadOne(ctx, &f.runtimeFlags, env, pos[0], f.set)
	if err != nil {
		return err
	}
	defer done()

	log, _ := logger(env.Stderr, f.logLevel)
	res, err := p.CallTool(ctx, &plugin.Call{Host: &cliHost{log: log}, ID: "1", Meta: map[string]any{"progressToken": "hangar-call"}}, pos[1], arguments)
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printContent(env.Stdout, res)
	}
	if res.IsError {
		return errToolFailed
	}
	return nil
}

func printContent(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintln(w, string(b))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		fmt.Fprintln(w, string(b))
	}
}

// cliHost stands in for an MCP client in `hangar call`: it shows log
// messages and progress on stderr and refuses the rest.
type cliHost struct{ log *slog.Logger }

func (h *cliHost) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, plugin.ErrNoClient
}

func (h *cliHost) Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, plugin.ErrNoClient
}

func (h *cliHost) ListRoots(context.Context) (*mcp.ListRootsResult, error) {
	return nil, plugin.ErrNoClient
}

func (h *cliHost) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	h.log.Info("plugin log", "level", p.Level, "logger", p.Logger, "data", p.Data)
	return nil
}

func (h *cliHost) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	h.log.Info("progress", "progress", p.Progress, "total", p.Total, "message", p.Message)
	return nil
}

func (h *cliHost) NotifyElicitationComplete(_ context.Context, p *mcp.ElicitationCompleteParams) error {
	return nil
}
