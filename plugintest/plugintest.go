// Package plugintest runs a Hangar plugin in a Go test, the way hangar
// serve runs it, and connects an MCP client to it.
//
// [New] builds the plugin in a directory from source (once per directory
// and test process), starts it with the settings of a hangar.yaml plugin
// entry given as Go values ([Options]), and closes it when the test ends.
// The module is compiled and sandboxed by Hangar's engine and served by
// Hangar's MCP server to a real client of the MCP Go SDK over an in-memory
// transport, so a call goes through everything a call to hangar serve goes
// through, argument validation against the input schema included.
//
//	func TestGreet(t *testing.T) {
//		p := plugintest.New(t, ".", &plugintest.Options{
//			Config: map[string]string{"greeting": "Hi"},
//		})
//		var out greetOutput
//		p.Call("greet", greetInput{Name: "Ada"}).Decode(&out)
//		if out.Greeting != "Hi, Ada." {
//			t.Errorf("greet: %q", out.Greeting)
//		}
//	}
//
// [Plugin.Call], [Plugin.Read] and [Plugin.Prompt] take and return the
// plugin's own Go types and plain text, and [Plugin.View] and
// [Plugin.Tool] the PDK's, for a plugin's interactive views (MCP Apps)
// and the tools that point at them; [Plugin.Session] is the MCP
// client's session, for everything else. The client answers sampling,
// elicitation and roots requests with what the test gives it
// ([Options.Client], [Options.Roots]).
//
// [Build] and [Start] are the steps of New, for tests that build the
// module otherwise or manage its life themselves. Modules compiled by
// Start are cached in memory for the life of the test process, so that
// starting the same module again (in another test, with other options)
// skips compiling it.
package plugintest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
)

// ErrNoGo is returned by [Build] when the go command cannot be found.
var ErrNoGo = errors.New("plugintest: the go command was not found; install Go (https://go.dev/dl) and put it on PATH")

// ErrInvalidOptions is wrapped by the error of [Start] when [Options] hold
// a setting hangar serve would refuse in hangar.yaml.
var ErrInvalidOptions = errors.New("plugintest: Options")

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
	// -trimpath: a panic's file:line (and any path the module holds) is
	// module-relative, not the author's machine's, as hangar new's Makefile
	// builds it.
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildmode=c-shared", "-trimpath", "-o", abs, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("plugintest: building the plugin in %s (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath): %v\n%s", dir, err, msg)
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

// Options are the settings of the plugin's entry in hangar.yaml, and the
// client's. A nil *Options means defaults: the plugin gets no config
// values, the default limits and no grants, and the client supports
// neither sampling nor elicitation, and has no roots. The settings are
// checked as hangar serve checks a configuration file, and a problem is
// reported with its key ("grants.allowed_paths[0].host: ...").
type Options struct {
	// Config holds the plugin's config values, which it reads with
	// pdk.Config.
	Config map[string]string
	// Limits bound the plugin's resources; a zero field keeps Hangar's
	// default.
	Limits Limits
	// Grants are the plugin's capabilities: files, hosts, environment
	// variables. Nothing is granted by default.
	Grants Grants
	// Prefix, when set, is put before the names of the plugin's tools and
	// prompts ("prefix_name") as a prefix in hangar.yaml is.
	Prefix string

	// Client configures the MCP client. Its CreateMessageHandler answers
	// the plugin's sampling requests and its ElicitationHandler its
	// elicitation requests; without them, the client does not offer the
	// capability, and the plugin's request fails as it would with such a
	// client. When LoggingMessageHandler is set, the session asks for log
	// messages of every level. Nil means a client with no handlers.
	//
	// The client declares the MCP Apps extension (io.modelcontextprotocol/ui
	// with the mimeType text/html;profile=mcp-app), as a host that shows
	// views does, besides its other capabilities (the go-sdk's defaults, or
	// Client.Capabilities), unless Client.Capabilities declares the
	// extension itself or NoApps is set.
	Client *mcp.ClientOptions
	// NoApps makes the client one that shows no views: it does not
	// declare the MCP Apps extension, so Hangar hides the plugin's
	// app-only tools from it (they are not listed, and calling one fails
	// as for an unknown tool), as it does for such clients in production.
	NoApps bool
	// Roots are the client's roots, as it answers roots/list.
	Roots []*mcp.Root
	// Logger receives Hangar's diagnostics about the plugin (refused
	// files and hosts among them), and what the plugin writes to stderr.
	// Nil discards them.
	Logger *slog.Logger
}

// Limits are the limits of a plugin entry (limits in hangar.yaml).
type Limits struct {
	Memory       int64         // bytes of linear memory (limits.memory)
	CallTimeout  time.Duration // time for one call (limits.call_timeout)
	HostTimeout  time.Duration // time the client has to answer (limits.host_timeout)
	MaxInstances int           // instances at once (limits.max_instances)
	MaxOutput    int64         // bytes of one call's output (limits.max_output)
}

// Grants are the grants of a plugin entry (grants in hangar.yaml).
type Grants struct {
	// AllowedHosts are the hosts the plugin's HTTP requests may reach:
	// names, IP addresses, "*.domain" or "*". A local test server
	// (httptest.NewServer, on 127.0.0.1) is reached only through a grant
	// that names its address, "127.0.0.1".
	AllowedHosts []string
	// AllowedPaths are the host directories the plugin sees.
	AllowedPaths []Path
	// Env holds the environment variables the plugin sees. As in
	// hangar.yaml, ${NAME} in a value is the test's variable NAME.
	Env map[string]string
}

// Path makes the host directory Host (relative to the working directory:
// in a test, the package's directory) visible to the plugin at Guest.
type Path struct {
	Host, Guest string
	ReadOnly    bool
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

// engine compiles every module Start loads, so that its in-memory
// compilation cache serves the whole test process.
var engine = sync.OnceValues(func() (*plugin.Engine, error) { return plugin.NewEngine("") })

// Start loads the plugin module at path and connects a client to a server
// offering it; see the package documentation. The plugin is named after
// the file, as hangar serve names it. ctx bounds loading and connecting
// only.
func Start(ctx context.Context, path string, opts *Options) (*Session, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	spec, err := entry(path, &o)
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
	client := mcp.NewClient(&mcp.Implementation{Name: "plugintest", Version: "1"}, clientOptions(o)) // apps.go
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

// entry checks the settings of o as the configuration loader checks a
// plugin entry of hangar.yaml with the module at path: it writes them as
// one, and decodes that.
func entry(path string, o *Options) (config.Plugin, error) {
	type mount struct {
		Host     string `yaml:"host"`
		Guest    string `yaml:"guest"`
		ReadOnly bool   `yaml:"read_only,omitempty"`
	}
	type settings struct {
		Name   string            `yaml:"name"`
		Path   string            `yaml:"path"`
		Prefix string            `yaml:"prefix,omitempty"`
		Config map[string]string `yaml:"config,omitempty"`
		Limits map[string]any    `yaml:"limits,omitempty"`
		Grants map[string]any    `yaml:"grants,omitempty"`
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return config.Plugin{}, fmt.Errorf("plugintest: %w", err)
	}
	e := settings{Name: config.Single(abs).Name, Path: abs, Prefix: o.Prefix, Config: o.Config,
		Limits: map[string]any{}, Grants: map[string]any{}}
	if config.CheckName(e.Name) != nil {
		e.Name = "plugin"
	}
	l := o.Limits
	for key, d := range map[string]time.Duration{"call_timeout": l.CallTimeout, "host_timeout": l.HostTimeout} {
		if d != 0 {
			e.Limits[key] = d.String()
		}
	}
	for key, n := range map[string]int64{"memory": l.Memory, "max_instances": int64(l.MaxInstances), "max_output": l.MaxOutput} {
		if n != 0 {
			e.Limits[key] = n
		}
	}
	g := o.Grants
	if len(g.AllowedHosts) > 0 {
		e.Grants["allowed_hosts"] = g.AllowedHosts
	}
	if len(g.AllowedPaths) > 0 {
		var ms []mount
		for _, p := range g.AllowedPaths {
			ms = append(ms, mount(p))
		}
		e.Grants["allowed_paths"] = ms
	}
	if len(g.Env) > 0 {
		e.Grants["env"] = g.Env
	}
	text, err := yaml.Marshal(map[string][]settings{"plugins": {e}})
	if err != nil {
		return config.Plugin{}, fmt.Errorf("plugintest: Options: %w", err)
	}
	cfg, err := config.Parse(text, "", "", os.LookupEnv)
	if err != nil {
		return config.Plugin{}, optionsError(err)
	}
	return cfg.Plugins[0], nil
}

// optionsError rewrites the configuration errors in err to speak of
// Options: without the position in the text entry wrote, nor the path of
// the entry in it.
func optionsError(err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var msgs []string
	for _, e := range errs {
		msg := e.Error()
		var ce *config.Error
		if errors.As(e, &ce) {
			msg = strings.TrimPrefix(ce.Msg, "plugins[0].")
			msg = strings.TrimPrefix(msg, "plugins[0]: ")
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(msgs, "; "))
}
