// Package plugintest runs a Hangar plugin in a Go test, the way hangar
// serve runs it, and connects an MCP client to it.
//
// A test builds the plugin from source with [Build], or takes a .wasm file
// built otherwise, and starts it with [Start]: the module is compiled and
// sandboxed by Hangar's engine, with the config values, limits and grants
// of a hangar.yaml plugin entry ([Options.Config]), and served by Hangar's
// MCP server to a real client of the MCP Go SDK over an in-memory
// transport. The returned [Session] is that client's session: its methods
// (CallTool, GetPrompt, ReadResource, Complete, ListTools and the others)
// reach the plugin through everything a client of hangar serve goes
// through, argument validation against the input schema included. The
// client answers sampling, elicitation and roots requests with what the
// test gives it ([Options.Client], [Options.Roots]).
//
//	func TestGreet(t *testing.T) {
//		wasm := filepath.Join(t.TempDir(), "plugin.wasm")
//		if err := plugintest.Build(t.Context(), ".", wasm); err != nil {
//			t.Fatal(err)
//		}
//		s, err := plugintest.Start(t.Context(), wasm, nil)
//		if err != nil {
//			t.Fatal(err)
//		}
//		defer s.Close()
//		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{
//			Name:      "greet",
//			Arguments: map[string]any{"name": "Ada"},
//		})
//		...
//	}
//
// Modules compiled by Start are cached in memory for the life of the test
// process, so that starting the same module again (in another test, with
// other options) skips compiling it.
package plugintest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
)

// ErrNoGo is returned by [Build] when the go command cannot be found.
var ErrNoGo = errors.New("plugintest: the go command was not found; install Go (https://go.dev/dl) and put it on PATH")

// Build compiles the main package in dir to a WebAssembly plugin at out,
// running
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o out .
//
// in dir, so that dir's go.mod applies. The go command is the first on
// PATH (under go test, the toolchain running the test); without one, Build
// returns an error wrapping [ErrNoGo]. A failed build returns the
// compiler's output in the error.
func Build(ctx context.Context, dir, out string) error {
	gobin, err := goCommand()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("plugintest: %w", err)
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildmode=c-shared", "-o", abs, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("plugintest: building the plugin in %s (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared): %v\n%s", dir, err, msg)
	}
	return nil
}

// goCommand finds the go command on PATH. Under go test, PATH starts with
// the bin directory of the toolchain running the test.
func goCommand() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNoGo, err)
	}
	return p, nil
}

// Options configure [Start]. A nil *Options means defaults: the plugin
// gets no config values, the default limits and no grants, and the client
// supports neither sampling nor elicitation, and has no roots.
type Options struct {
	// Config holds the settings of the plugin's entry in hangar.yaml, in
	// YAML, without name, path or source (Start sets the module): config,
	// limits, grants and prefix. It is decoded and checked exactly as
	// hangar serve decodes a configuration file; ${NAME} in grants.env reads
	// the environment. For example:
	//
	//	config:
	//	  greeting: Hi
	//	limits:
	//	  call_timeout: 5s
	//	grants:
	//	  allowed_paths:
	//	    - {host: ./testdata, guest: /data, read_only: true}
	Config string
	// Dir is the directory relative paths in Config resolve against; ""
	// means the working directory (in a test, the package's directory).
	Dir string
	// Client configures the MCP client. Its CreateMessageHandler answers
	// the plugin's sampling requests and its ElicitationHandler its
	// elicitation requests; without them, the client does not offer the
	// capability, and the plugin's request fails as it would with such a
	// client. When LoggingMessageHandler is set, the session asks for log
	// messages of every level. Nil means a client with no handlers.
	Client *mcp.ClientOptions
	// Roots are the client's roots, as it answers roots/list.
	Roots []*mcp.Root
	// Logger receives Hangar's diagnostics about the plugin, and what the
	// plugin writes to stderr. Nil discards them.
	Logger *slog.Logger
}

// Session is the client's session with the server offering the plugin.
// Its methods are those of [mcp.ClientSession]. Close it when done.
type Session struct {
	*mcp.ClientSession
	end    func() // ends the session
	plugin *plugin.Plugin
}

// Close ends the session and closes the plugin.
func (s *Session) Close() error {
	s.end()
	s.plugin.Close(context.Background())
	return nil
}

// entryName is the plugin's name in the configuration Start builds.
const entryName = "plugin"

// engine compiles every module Start loads, so that its in-memory
// compilation cache serves the whole test process.
var engine = sync.OnceValues(func() (*plugin.Engine, error) { return plugin.NewEngine("") })

// Start loads the plugin module at path and connects a client to a server
// offering it; see the package documentation. ctx bounds loading and
// connecting only.
func Start(ctx context.Context, path string, opts *Options) (*Session, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	spec, err := entry(path, o.Config, o.Dir)
	if err != nil {
		return nil, err
	}
	wasm, err := os.ReadFile(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("plugintest: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e, err := engine()
	if err != nil {
		return nil, fmt.Errorf("plugintest: %w", err)
	}
	p, err := e.Load(ctx, wasm, plugin.Options{
		Name:   spec.Name,
		Config: spec.Config,
		Limits: spec.Limits,
		Grants: spec.Grants,
		Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("plugintest: loading %s: %w", path, err)
	}
	s, err := connect(ctx, p, spec.Prefix, &o, log)
	if err != nil {
		p.Close(context.Background())
		return nil, fmt.Errorf("plugintest: %w", err)
	}
	return s, nil
}

// connect serves p with Hangar's server and connects the client to it.
func connect(ctx context.Context, p *plugin.Plugin, prefix string, o *Options, log *slog.Logger) (*Session, error) {
	srv, err := server.New(ctx, []server.Mount{{Plugin: p, Prefix: prefix}}, &server.Options{Logger: log, Version: "plugintest"})
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "plugintest", Version: "1"}, o.Client)
	client.AddRoots(o.Roots...)
	cs, end, err := srv.ConnectClient(ctx, client)
	if err != nil {
		return nil, err
	}
	if o.Client != nil && o.Client.LoggingMessageHandler != nil {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			end()
			return nil, err
		}
	}
	return &Session{ClientSession: cs, end: end, plugin: p}, nil
}

// moduleKeys are the keys of a plugin entry that name its module, which
// Start sets.
var moduleKeys = []string{"name", "path", "source", "sha256", "verify"}

// configHeader is what entry puts before the settings of Options.Config:
// the line and column offsets below undo it in error positions.
const (
	configHeader = "plugins:\n  - name: %s\n    path: %s\n"
	headerLines  = 3
	indent       = "    "
)

// entry decodes the settings of a plugin entry, with the module at path,
// as the configuration loader decodes a file.
func entry(path, settings, dir string) (config.Plugin, error) {
	settings, margin := dedent(settings)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(settings), &doc); err != nil {
		return config.Plugin{}, fmt.Errorf("plugintest: Options.Config: %w", err)
	}
	if len(doc.Content) > 0 {
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 {
			return config.Plugin{}, errors.New("plugintest: Options.Config must be a YAML mapping in block style, the settings of a plugin entry (config, limits, grants, prefix)")
		}
		for i := 0; i < len(m.Content); i += 2 {
			for _, k := range moduleKeys {
				if key := m.Content[i]; key.Value == k {
					return config.Plugin{}, fmt.Errorf("plugintest: Options.Config:%d:%d: %q is set by Start, which loads the module it is given; remove it", key.Line, key.Column+margin, k)
				}
			}
		}
	}
	quoted, err := json.Marshal(path) // a JSON string is a YAML double-quoted scalar
	if err != nil {
		return config.Plugin{}, fmt.Errorf("plugintest: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, configHeader, entryName, quoted)
	for line := range strings.Lines(settings) {
		b.WriteString(indent + line)
	}
	b.WriteString("\n")
	cfg, err := config.Parse(b.Bytes(), "", dir, nil)
	if err != nil {
		return config.Plugin{}, settingsError(err, margin)
	}
	return cfg.Plugins[0], nil
}

// dedent removes the leading blanks common to every non-blank line of s,
// so that settings written indented in a Go raw string literal, with tabs,
// are YAML. It returns the width it removed.
func dedent(s string) (string, int) {
	margin := ""
	first := true
	for line := range strings.Lines(s) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		lead := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if first {
			margin, first = lead, false
			continue
		}
		for !strings.HasPrefix(lead, margin) {
			margin = margin[:len(margin)-1]
		}
	}
	if margin == "" {
		return s, 0
	}
	var b strings.Builder
	for line := range strings.Lines(s) {
		if strings.TrimSpace(line) == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString(strings.TrimPrefix(line, margin))
	}
	return b.String(), len(margin)
}

// settingsError rewrites the positions and paths of the configuration
// errors in err to be those of Options.Config, whose lines lost margin
// leading blanks.
func settingsError(err error, margin int) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		var ce *config.Error
		if !errors.As(e, &ce) {
			out[i] = fmt.Errorf("plugintest: %w", e)
			continue
		}
		fixed := *ce
		fixed.File = "plugintest: Options.Config"
		if fixed.Line > headerLines {
			fixed.Line -= headerLines
			if fixed.Column > 0 {
				fixed.Column += margin - len(indent)
			}
		} else {
			fixed.Line, fixed.Column = 0, 0
		}
		fixed.Msg = strings.TrimPrefix(fixed.Msg, "plugins[0].")
		if rest, ok := strings.CutPrefix(fixed.Msg, "plugins[0]: "); ok {
			fixed.Msg = rest
		}
		out[i] = &fixed
	}
	return errors.Join(out...)
}
