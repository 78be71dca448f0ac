package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hangar-mcp/hangar/internal/config"
)

// A desktopClient is an MCP client application that starts hangar over
// stdio from an entry in its JSON configuration.
type desktopClient struct {
	name    string
	servers string // the key holding the entries: "mcpServers" or "servers"
	typed   bool   // the entry says "type": "stdio"
	where   string // where the entry goes, for stderr
}

// desktopClients are the clients client-config knows, in the order help
// lists them. Their formats are those documented by each client.
var desktopClients = []desktopClient{
	{name: "claude", servers: "mcpServers",
		where: `claude_desktop_config.json (Claude Desktop: Settings > Developer > Edit Config; on macOS in ~/Library/Application Support/Claude/, on Windows in %APPDATA%\Claude\), under "mcpServers"; then restart Claude Desktop`},
	{name: "cursor", servers: "mcpServers",
		where: `.cursor/mcp.json in a project, or ~/.cursor/mcp.json for every project, under "mcpServers"`},
	{name: "vscode", servers: "servers", typed: true,
		where: `.vscode/mcp.json in a workspace, or the mcp.json of the user profile (command "MCP: Open User Configuration"), under "servers"`},
	{name: "windsurf", servers: "mcpServers",
		where: `~/.codeium/windsurf/mcp_config.json (on Windows %USERPROFILE%\.codeium\windsurf\mcp_config.json), under "mcpServers"`},
}

func clientNames() string {
	var names []string
	for _, c := range desktopClients {
		names = append(names, c.name)
	}
	return strings.Join(names, "|")
}

func findClient(name string) (desktopClient, bool) {
	for _, c := range desktopClients {
		if c.name == name {
			return c, true
		}
	}
	return desktopClient{}, false
}

type clientConfigFlags struct {
	config       string
	name         string
	command      string
	placeholders bool
}

func (f *clientConfigFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "the configuration file hangar serves (required)")
	fs.StringVar(&f.name, "name", "hangar", "the server's name in the client's configuration")
	fs.StringVar(&f.command, "command", "", "the hangar binary the client starts (default: this one)")
	fs.BoolVar(&f.placeholders, "placeholders", false, "write a placeholder for every variable, never a value from the current environment (for an entry to share)")
}

var clientConfigCmd = &command{
	name:  "client-config",
	args:  "(claude|cursor|vscode|windsurf) --config FILE [--name NAME] [--command PATH] [--placeholders]",
	short: "print a desktop MCP client's entry for hangar",
	long: `Client-config prints the JSON that makes a desktop MCP client (Claude
Desktop, Cursor, VS Code or Windsurf) start hangar over stdio with a
configuration file, in that client's format, and says on stderr where it
goes. The entry runs "hangar serve --stdio --config FILE" (stdio even if
the configuration sets http.addr), with absolute paths: of this hangar
binary (or --command) and of the configuration.

Desktop clients start servers with few environment variables (such as HOME
and PATH), not those of your shell. So the entry has an "env" block with
every variable the configuration refers to with ${NAME}: its value in the
current environment, or, when it is not set here (or with --placeholders),
a placeholder "<value of NAME>" to replace. Stderr says which is which.
hangar serve refuses a variable still holding its placeholder.

The configuration is checked as serve would check it, except that unset
variables are allowed.`,
	flags: func(fs *flag.FlagSet) { new(clientConfigFlags).register(fs) },
}

func init() { clientConfigCmd.run = runClientConfig }

// clientEntry is one server in a client's configuration.
type clientEntry struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

func runClientConfig(ctx context.Context, env *Env, args []string) error {
	var f clientConfigFlags
	fs := clientConfigCmd.flagSet(env.Stderr)
	f.register(fs)
	pos, err := clientConfigCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || f.config == "" {
		clientConfigCmd.help(env.Stderr)
		return errUsage
	}
	client, ok := findClient(pos[0])
	if !ok {
		fmt.Fprintf(env.Stderr, "hangar client-config: unknown client %q; want one of %s\n", pos[0], clientNames())
		return errUsage
	}
	if f.name == "" {
		return errors.New("--name: the server needs a name")
	}
	cfgPath, err := filepath.Abs(f.config)
	if err != nil {
		return err
	}
	command := f.command
	if command == "" {
		if command, err = os.Executable(); err != nil {
			return fmt.Errorf("finding the hangar binary: %w; give --command PATH", err)
		}
	}
	if command, err = filepath.Abs(command); err != nil {
		return err
	}

	// Check the configuration as serve would, noting the variables it
	// refers to instead of requiring them.
	values := map[string]string{}
	why := map[string]string{} // name -> where its value came from
	_, err = config.LoadEnv(cfgPath, func(name string) (string, bool) {
		if _, seen := values[name]; !seen {
			v, set := os.LookupEnv(name)
			values[name] = config.EnvPlaceholder(name)
			switch {
			case set && f.placeholders:
				why[name] = "set here, but --placeholders writes a placeholder: replace %q with its value"
			case set && v == config.EnvPlaceholder(name):
				why[name] = "holds its placeholder here: replace %q with its value"
			case set:
				values[name] = v
				why[name] = "the value set in this environment (the entry holds it in clear)"
			default:
				why[name] = "not set here: replace %q with its value"
			}
		}
		return "", true
	})
	if err != nil {
		return err
	}

	entry := clientEntry{Command: command, Args: []string{"serve", "--stdio", "--config", cfgPath}}
	if client.typed {
		entry.Type = "stdio"
	}
	if len(values) > 0 {
		entry.Env = values
	}
	// Placeholders are "<value of NAME>": HTML escaping would write them
	// \u003cvalue of NAME\u003e.
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]map[string]clientEntry{client.servers: {f.name: entry}}); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(env.Stdout, "%s\n", inlineStringArrays([]byte(strings.TrimSuffix(buf.String(), "\n")))); err != nil {
		return err
	}
	noteClientConfig(env.Stderr, client, f.name, command, values, why)
	return nil
}

var (
	stringArrayRE = regexp.MustCompile(`\[\n(?:[ \t]+"(?:[^"\\]|\\.)*",?\n)+[ \t]*\]`)
	jsonStringRE  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// inlineStringArrays puts each array of strings of indented JSON on one
// line, as people write an entry's "args".
func inlineStringArrays(indented []byte) []byte {
	return stringArrayRE.ReplaceAllFunc(indented, func(a []byte) []byte {
		return []byte("[" + strings.Join(jsonStringRE.FindAllString(string(a), -1), ", ") + "]")
	})
}

// noteClientConfig tells, on stderr, where the entry goes and where each
// variable's value came from (why, whose %q, if any, is the placeholder).
func noteClientConfig(w io.Writer, client desktopClient, name, command string, values, why map[string]string) {
	fmt.Fprintf(w, "hangar client-config: add the %q entry to %s.\n", name, client.where)
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		note := why[n]
		if strings.Contains(note, "%q") {
			note = fmt.Sprintf(note, values[n])
		}
		fmt.Fprintf(w, "hangar client-config: env %s: %s\n", n, note)
	}
	if temporaryBuild(command, os.Getenv) {
		fmt.Fprintf(w, "hangar client-config: %s is a temporary build (go run) that will be gone: install hangar (for example go build -o /usr/local/bin/hangar ./cmd/hangar) and run client-config with it, or give --command PATH\n", command)
	}
}

// temporaryBuild reports whether path looks like a binary of go run: built
// in a go-build directory under the temporary directory (or $GOTMPDIR), or
// kept in Go's build cache ($GOCACHE, by default go-build under the user
// cache directory), which go run uses for the binaries it caches and go
// clean empties.
func temporaryBuild(path string, getenv func(string) string) bool {
	under := func(dir string) (string, bool) {
		if dir == "" {
			return "", false
		}
		rel, err := filepath.Rel(dir, path)
		return filepath.ToSlash(rel), err == nil && rel != "." && !strings.HasPrefix(rel, "..")
	}
	for _, tmp := range []string{os.TempDir(), getenv("GOTMPDIR")} {
		if rel, ok := under(tmp); ok && strings.Contains(rel, "go-build") {
			return true
		}
	}
	cache := getenv("GOCACHE")
	if cache == "" || cache == "off" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "go-build")
		}
	}
	if _, ok := under(cache); ok {
		return true
	}
	return slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "go-build")
}

// unsetHint adds to err, if it reports variables that are not set (or
// hold client-config's placeholder), how to give them to hangar when an MCP
// client starts it: desktop clients pass only a few variables, and show a
// server that exits at start only as a closed connection, with its stderr
// in their logs.
func unsetHint(err error) error {
	var names []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var ce *config.Error
		if errors.As(e, &ce) && ce.EnvVar != "" && !slices.Contains(names, ce.EnvVar) {
			names = append(names, ce.EnvVar)
		}
	}
	walk(err)
	if len(names) == 0 {
		return err
	}
	return fmt.Errorf(`%w
hint: hangar needs the environment variable%s %s. An MCP client that starts
hangar (Claude Desktop, Cursor, VS Code, Windsurf) passes it only a few
variables of its own, such as HOME and PATH, not those of your shell: set
%s in the "env" block of hangar's entry in the client's configuration;
"hangar client-config CLIENT --config FILE" prints the entry with that block`,
		err, plural(len(names)), strings.Join(names, ", "), them(len(names)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
