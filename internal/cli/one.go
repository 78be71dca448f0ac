package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
)

// oneFlags are the flags of the commands that run one plugin: a .wasm file
// named on the command line, or a plugin of a configuration file.
type oneFlags struct {
	runtimeFlags
	json   bool
	set    setFlag
	config string
	plugin string

	// anyEnv loads the configuration with the ${NAME} references of
	// unset variables left empty (for a command that only lists), and
	// unset names them.
	anyEnv bool
	unset  []string
}

func (f *oneFlags) register(fs *flag.FlagSet, jsonUsage string) {
	f.runtimeFlags.register(fs)
	f.set = setFlag{}
	fs.BoolVar(&f.json, "json", false, jsonUsage)
	fs.Var(f.set, "set", "plugin config value key=value (repeatable; overrides the configuration's)")
	fs.StringVar(&f.config, "config", "", "take the plugin, with its config, limits and grants, from this configuration file instead of a PLUGIN.wasm argument")
	fs.StringVar(&f.plugin, "plugin", "", "with --config, the name of the plugin (may be left out when the configuration has only one)")
}

// oneUsage is the part of the usage line naming the plugin.
const oneUsage = "(PLUGIN.wasm | --config FILE [--plugin NAME])"

// pluginArgs splits the positional arguments into the .wasm file (unless
// the plugin comes from --config) and the rest, of which the command wants
// between min and max. It reports false on misuse.
func (f *oneFlags) pluginArgs(env *Env, pos []string, min, max int) (file string, rest []string, ok bool) {
	if f.config == "" {
		if f.plugin != "" {
			fmt.Fprintln(env.Stderr, "--plugin needs --config")
			return "", nil, false
		}
		if len(pos) == 0 {
			return "", nil, false
		}
		file, pos = pos[0], pos[1:]
	}
	if len(pos) < min || len(pos) > max {
		return "", nil, false
	}
	return file, pos, true
}

// spec returns the configuration of the plugin to run: the file's, with
// default limits and no grants, or the entry of --config named by
// --plugin. --set values override config values.
func (f *oneFlags) spec(file string) (config.Plugin, error) {
	var spec config.Plugin
	if f.config == "" {
		spec = config.Single(file)
	} else {
		var getenv func(string) (string, bool)
		if f.anyEnv {
			getenv = func(name string) (string, bool) {
				v, ok := os.LookupEnv(name)
				if !ok || v == config.EnvPlaceholder(name) {
					if !slices.Contains(f.unset, name) {
						f.unset = append(f.unset, name)
					}
					return "", true
				}
				return v, true
			}
		}
		cfg, err := loadConfigEnv(f.config, getenv)
		if err != nil {
			return spec, err
		}
		plugin.ProtectDeployment(cfg.Deployment.Addresses) // for the command's life
		if spec, err = pick(cfg.Plugins, f.plugin, f.config); err != nil {
			return spec, err
		}
		if spec.Kind == config.SourceFile {
			// A file is read as it is (hangar.lock does not pin files),
			// and a command that only looks at a plugin writes no lock.
			spec.LockFile = ""
		}
	}
	if len(f.set) > 0 {
		values := maps.Clone(spec.Config)
		if values == nil {
			values = map[string]string{}
		}
		maps.Copy(values, f.set)
		spec.Config = values
	}
	return spec, nil
}

// pick returns the plugin called name, or the only plugin when name is "".
func pick(plugins []config.Plugin, name, file string) (config.Plugin, error) {
	names := make([]string, len(plugins))
	for i, p := range plugins {
		if p.Name == name || name == "" && len(plugins) == 1 {
			return p, nil
		}
		names[i] = p.Name
	}
	switch {
	case len(plugins) == 0:
		return config.Plugin{}, fmt.Errorf("%s configures no plugins", file)
	case name == "":
		return config.Plugin{}, fmt.Errorf("%s configures %d plugins (%s): choose one with --plugin NAME", file, len(plugins), strings.Join(names, ", "))
	}
	return config.Plugin{}, fmt.Errorf("%s configures no plugin named %q; its plugins are %s", file, name, strings.Join(names, ", "))
}

// load loads the plugin to run, as serve loads it, and returns it with the
// function that closes it.
func (f *oneFlags) load(ctx context.Context, env *Env, file string) (*plugin.Plugin, config.Plugin, func(), error) {
	spec, err := f.spec(file)
	if err != nil {
		return nil, spec, nil, err
	}
	log, err := logger(env.Stderr, f.logLevel)
	if err != nil {
		return nil, spec, nil, err
	}
	e, err := plugin.NewEngine(f.cacheDir)
	if err != nil {
		return nil, spec, nil, err
	}
	plugins, err := loadPlugins(ctx, e, []config.Plugin{spec}, log)
	if err != nil {
		e.Close(ctx)
		return nil, spec, nil, err
	}
	return plugins[0], spec, func() {
		plugins[0].Close(ctx)
		e.Close(ctx)
	}, nil
}

// connect serves p alone, under its own names (without the configured
// prefix), with the MCP server serve runs, and connects an in-process
// client to it. The client has no sampling, elicitation or roots (it
// declares MCP Apps, for the app-only tools); it asks
// for every log message, and shows log messages and progress on log. The
// server's own diagnostics about the one session are shown from level
// warn, or debug when log shows debug.
func connect(ctx context.Context, p *plugin.Plugin, log *slog.Logger) (*mcp.ClientSession, func(), error) {
	srvLog := log
	if !log.Enabled(ctx, slog.LevelDebug) {
		srvLog = slog.New(&minLevel{Handler: log.Handler(), level: slog.LevelWarn})
	}
	srv, err := server.New(ctx, []server.Mount{{Plugin: p}}, &server.Options{Logger: srvLog, Version: version()})
	if err != nil {
		return nil, nil, err
	}
	// The client shows no views, but it declares the MCP Apps extension
	// so that an author can list and call a plugin's app-only tools (those
	// its views call), which Hangar hides from other clients.
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	client := mcp.NewClient(&mcp.Implementation{Name: "hangar-cli", Version: version()}, &mcp.ClientOptions{
		Capabilities: caps,
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			log.Info("plugin log", "level", r.Params.Level, "logger", r.Params.Logger, "data", r.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			log.Info("progress", "progress", r.Params.Progress, "total", r.Params.Total, "message", r.Params.Message)
		},
	})
	cs, end, err := srv.ConnectClient(ctx, client)
	if err != nil {
		return nil, nil, err
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		end()
		return nil, nil, err
	}
	return cs, end, nil
}

// minLevel passes on the records of at least level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h *minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h *minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &minLevel{h.Handler.WithAttrs(attrs), h.level}
}

func (h *minLevel) WithGroup(name string) slog.Handler {
	return &minLevel{h.Handler.WithGroup(name), h.level}
}
