package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const callJSONUsage = "print the whole CallToolResult as JSON"

var callCmd = &command{
	name:  "call",
	args:  "[--json] " + oneUsage + " TOOL ['{json arguments}']",
	short: "call one tool of a plugin",
	long: `Call loads a plugin, calls one tool with the given JSON object of arguments
(default {}), and prints the text of the result, or the whole result with
--json. A result that reports an error is printed on stderr (on stdout with
--json) and the exit status is 1.

The plugin is a .wasm file, run with default limits and no grants, or with
--config the plugin of that configuration file named by --plugin, loaded
as serve loads it: its config values, limits and grants apply. --set adds
or overrides config values. TOOL is the plugin's own name of the tool,
without the configuration's prefix.

The call goes through the MCP server serve runs, to an in-process client:
the arguments are checked against the tool's input schema as they are for
any client, so arguments a client could not send fail here too. The client
supports neither sampling nor elicitation and has no roots, so a plugin
asking for them gets an error; the plugin's log messages and progress go to
stderr.`,
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
	file, rest, ok := f.pluginArgs(env, pos, 1, 2)
	if !ok {
		callCmd.help(env.Stderr)
		return errUsage
	}
	tool := rest[0]
	arguments := json.RawMessage("{}")
	if len(rest) == 2 {
		arguments = json.RawMessage(rest[1])
		if err := checkArguments(rest[1]); err != nil {
			return err
		}
	}
	p, spec, done, err := f.load(ctx, env, file)
	if err != nil {
		return err
	}
	defer done()
	log, _ := logger(env.Stderr, f.logLevel)
	cs, end, err := connect(ctx, p, log)
	if err != nil {
		return err
	}
	defer end()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      tool,
		Arguments: arguments,
		Meta:      mcp.Meta{"progressToken": "hangar-call"},
	})
	if err != nil {
		if hint := unknownToolHint(ctx, cs, tool, spec.Prefix); hint != "" {
			return fmt.Errorf("calling tool %s: %w\n%s", tool, err, hint)
		}
		return fmt.Errorf("calling tool %s: %w", tool, err)
	}
	switch {
	case f.json:
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	case res.IsError:
		printContent(env.Stderr, res)
	default:
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

// unknownToolHint says which tools there are when tool is not one of them,
// and which was meant when tool is a prefixed name: call takes the
// plugin's own names, which clients see behind the configured prefix.
func unknownToolHint(ctx context.Context, cs *mcp.ClientSession, tool, prefix string) string {
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(list.Tools))
	for _, t := range list.Tools {
		if t.Name == tool {
			return "" // another failure
		}
		names = append(names, t.Name)
	}
	var b strings.Builder
	for _, n := range names {
		if strings.HasSuffix(tool, "_"+n) {
			had := strings.TrimSuffix(tool, "_"+n)
			switch {
			case prefix != "" && had == prefix:
				fmt.Fprintf(&b, "hint: hangar call takes the plugin's own tool names, without the prefix %q that clients see: call %q\n", prefix, n)
			default:
				fmt.Fprintf(&b, "hint: hangar call takes the plugin's own tool names, without a prefix: did you mean %q?\n", n)
			}
			break
		}
	}
	if len(names) == 0 {
		b.WriteString("the plugin offers no tools")
	} else {
		fmt.Fprintf(&b, "the plugin's tools are: %s", strings.Join(names, ", "))
	}
	return b.String()
}

// checkArguments checks that args, the arguments of hangar call, are a
// JSON object, and says where they are not.
func checkArguments(args string) error {
	var v any
	err := json.Unmarshal([]byte(args), &v)
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("arguments are not valid JSON: %s at byte %d:\n  %s\n  %s^\n(quote the arguments for the shell: '{\"name\": \"value\"}')",
			syn, syn.Offset, args, strings.Repeat(" ", max(0, int(syn.Offset)-1)))
	case err != nil:
		return fmt.Errorf("arguments are not valid JSON: %w: %s", err, args)
	}
	if _, ok := v.(map[string]any); !ok {
		kind := "null"
		switch v.(type) {
		case []any:
			kind = "an array"
		case string:
			kind = "a string"
		case float64:
			kind = "a number"
		case bool:
			kind = "a boolean"
		}
		return fmt.Errorf("arguments must be a JSON object ({\"name\": value, ...}), not %s: %s", kind, args)
	}
	return nil
}
