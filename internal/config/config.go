package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults applied by Load, Parse and Single. Sizes are in bytes.
const (
	DefaultHTTPAddr           = "127.0.0.1:8080" // for HTTP requested without an address
	DefaultMemory       int64 = 256 << 20        // 256MiB = 4096 pages
	DefaultCallTimeout        = 30 * time.Second
	DefaultHostTimeout        = 2 * time.Minute
	DefaultMaxInstances       = 0        // automatic: 1, or one per core for a stateless plugin
	DefaultMaxOutput    int64 = 16 << 20 // 16MiB
)

// Defaults of the http section: bounds on what HTTP clients may hold.
const (
	DefaultSessionIdleTimeout  = 30 * time.Minute
	DefaultMaxSessions         = 1000
	DefaultMaxConnections      = 0 // automatic: from the open-file limit
	DefaultMaxListens          = 0 // automatic: half the connection cap
	DefaultMaxListensPerClient = 16
	DefaultReadHeaderTimeout   = 10 * time.Second
	DefaultReadTimeout         = 30 * time.Second
	DefaultWriteTimeout        = 30 * time.Second
	DefaultIdleTimeout         = 2 * time.Minute
	DefaultDrainTimeout        = 10 * time.Second
)

// PageSize is the size of a WebAssembly memory page, the unit of
// Limits.MemoryPages.
const PageSize = 64 << 10

// Bounds enforced by validation.
const (
	maxMemory       int64 = 4 << 30 // wasm32 address space: 65536 pages
	maxOutput       int64 = 4 << 30 // no wasm32 plugin can produce more
	maxMaxInstances       = 1024
	maxHTTPCount          = 1_000_000 // max_sessions, max_connections
)

// Config is a validated, fully defaulted Hangar configuration. Treat it as
// read-only once returned.
type Config struct {
	HTTP       HTTP
	Metrics    Metrics
	Tracing    *Tracing   // nil: tracing is off
	Deployment Deployment // the zero value: a server alone
	MRTR       MRTR       // MCP 2026-07-28's parked calls (mrtr.go)
	Tasks      Tasks      // the tasks extension of MCP 2026-07-28 (tasks.go)
	Plugins    []Plugin   // in file order; nil when the file lists none
}

// HTTP holds the settings for serving Streamable HTTP. After Load or
// Parse every duration is > 0 and MaxSessions is >= 1; MaxConnections may
// be 0, meaning "choose from the open-file limit".
type HTTP struct {
	Addr           string   // "host:port", or "" when not configured
	AllowedOrigins []string // normalized "scheme://host[:port]", lower case
	AllowedHosts   []string // normalized "host" or "host:port", lower case
	// LegacySSE also serves the HTTP+SSE transport of protocol version
	// 2024-11-05, for older clients, beside Streamable HTTP.
	LegacySSE bool

	SessionIdleTimeout time.Duration // a session with no request for this long is closed
	MaxSessions        int           // sessions open at once, 1..1000000
	MaxConnections     int           // connections open at once, 0 (automatic) or 1..1000000
	// MaxListens caps the MCP 2026-07-28 subscriptions/listen streams open
	// at once, 0 (automatic: half the connection cap) or 1..1000000;
	// MaxListensPerClient those of one client (a token's subject, or
	// without auth an address), 1..1000000.
	MaxListens, MaxListensPerClient int
	// TrustedProxies are the addresses of the proxies in front of the
	// server (the load balancer), normalized "addr/bits": a request from
	// one of them is told from others by the X-Forwarded-For entry the
	// nearest untrusted hop added, for the caps on anonymous clients.
	TrustedProxies    []string
	ReadHeaderTimeout time.Duration // to read a request's header
	ReadTimeout       time.Duration // to read a request's body
	WriteTimeout      time.Duration // a write to a client that takes none of it for this long fails
	IdleTimeout       time.Duration // a keep-alive connection with no request for this long is closed
	DrainTimeout      time.Duration // on stop, how long calls in progress may go on

	TLS  *TLS  // nil: plain HTTP
	Auth *Auth // nil: no authentication, and then Addr must be a loopback address
}

// Remote reports whether a plugin of the configuration has a remote source
// (https:// or oci://), whose resolution a lock file records.
func (c *Config) Remote() bool {
	for _, p := range c.Plugins {
		if p.Kind == SourceHTTPS || p.Kind == SourceOCI {
			return true
		}
	}
	return false
}

// Default returns the configuration of an empty file: every section at
// its default, and no plugins. serve without --config serves its plugin
// files with it.
func Default() *Config {
	return &Config{HTTP: DefaultHTTP(), MRTR: DefaultMRTR(), Tasks: DefaultTasks()}
}

// DefaultHTTP returns the http settings of a configuration that sets none.
func DefaultHTTP() HTTP {
	return HTTP{
		SessionIdleTimeout:  DefaultSessionIdleTimeout,
		MaxSessions:         DefaultMaxSessions,
		MaxConnections:      DefaultMaxConnections,
		MaxListens:          DefaultMaxListens,
		MaxListensPerClient: DefaultMaxListensPerClient,
		ReadHeaderTimeout:   DefaultReadHeaderTimeout,
		ReadTimeout:         DefaultReadTimeout,
		WriteTimeout:        DefaultWriteTimeout,
		IdleTimeout:         DefaultIdleTimeout,
		DrainTimeout:        DefaultDrainTimeout,
	}
}

// Plugin is one WebAssembly module to host.
type Plugin struct {
	Name string // unique, matches ^[a-z0-9][a-z0-9_-]{0,63}$
	// Source is where the module comes from, as written in the file (from
	// source, or from path): a file path, an https:// URL or an oci://
	// reference. Kind says which.
	Source string
	Kind   SourceKind
	Path   string  // the file, absolute and clean, for SourceFile; "" otherwise
	SHA256 string  // pin: the module's SHA-256, 64 lower-case hex digits; "" for none; always set for SourceHTTPS
	Verify *Verify // signature policy; non-nil exactly for SourceOCI
	// LockFile is the lock file recording what the source resolved to:
	// set by Load ([LockPath] of the configuration file, such as
	// hangar.lock beside hangar.yaml) when the configuration has a plugin
	// with a remote source (https:// or oci://); "" (no lock) when every
	// plugin is a local file, and from Parse and Single.
	LockFile string
	Prefix   string            // "" for none; matches ^[A-Za-z][A-Za-z0-9.-]{0,31}$
	Config   map[string]string // Extism config; nil when empty
	Limits   Limits
	Grants   Grants
	// Compile says when serve compiles the plugin: CompileLazy (the
	// default; "" means it too) or CompileEager.
	Compile Compile
	// Tasks overrides when the calls of some of the plugin's tools become
	// tasks (the tasks extension), by the tool's name in the plugin
	// (without prefix): "auto", "never", "always" or "required", as the
	// plugin's own pdk.Tool.Task would say. Nil when empty.
	Tasks map[string]string
}

// Compile is when serve compiles a plugin to machine code.
type Compile string

const (
	// CompileLazy compiles a plugin on its first call. Its lists come from
	// the catalog cache or the interpreter meanwhile, and it holds no
	// machine code and no instance until then.
	CompileLazy Compile = "lazy"
	// CompileEager compiles a plugin in the background as serve starts,
	// and serve is ready once it is compiled.
	CompileEager Compile = "eager"
)

// Lazy reports whether the plugin is compiled on its first call.
func (p Plugin) Lazy() bool { return p.Compile != CompileEager }

// Limits bound the resources a plugin may use. After Load, Parse or Single
// every field holds a usable value; only MaxInstances may be 0, meaning
// "choose automatically" (one instance, or one per core for a plugin that
// declares itself stateless).
type Limits struct {
	MemoryPages  uint32        // 1..65536 pages of PageSize bytes
	CallTimeout  time.Duration // > 0
	HostTimeout  time.Duration // > 0
	MaxInstances int           // 0 (automatic) ..1024
	MaxOutput    int64         // bytes, 1..4GiB
}

// Grants are the capabilities given to a plugin. The zero value grants
// nothing.
type Grants struct {
	AllowedHosts []string          // lower-case host names, IP addresses or "*.domain"
	AllowedPaths []Mount           // distinct guest paths
	Env          map[string]string // expanded values; nil when empty
}

// Mount makes a host directory visible to the plugin.
type Mount struct {
	Host     string // absolute, clean path of an existing directory
	Guest    string // absolute, clean slash-separated path in the plugin
	ReadOnly bool
}

// DefaultLimits returns the limits a plugin gets when its configuration sets
// none.
func DefaultLimits() Limits {
	return Limits{
		MemoryPages:  uint32(DefaultMemory / PageSize),
		CallTimeout:  DefaultCallTimeout,
		HostTimeout:  DefaultHostTimeout,
		MaxInstances: DefaultMaxInstances,
		MaxOutput:    DefaultMaxOutput,
	}
}

// Load reads and parses the configuration file at path. Relative paths in
// the file resolve against the file's directory; ${NAME} references in
// grants.env read the process environment. When a plugin has a remote
// source, every plugin's LockFile is the configuration's lock file
// ([LockPath]); a configuration of local files only has none. Problems with
// the content are all reported together (see Error); they wrap ErrInvalid.
func Load(path string) (*Config, error) {
	return LoadEnv(path, nil)
}

// LoadEnv is Load with getenv resolving the ${NAME} references in
// grants.env instead of the process environment (nil means os.LookupEnv).
func LoadEnv(path string, getenv func(string) (string, bool)) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	cfg, err := Parse(data, path, filepath.Dir(abs), getenv)
	if err != nil {
		return nil, err
	}
	if cfg.Remote() {
		for i := range cfg.Plugins {
			cfg.Plugins[i].LockFile = LockPath(abs)
		}
	}
	return cfg, nil
}

// Parse parses a configuration held in memory. filename is used only in
// error messages (it may be empty). Relative paths resolve against baseDir,
// itself made absolute against the working directory ("" means the working
// directory). getenv resolves ${NAME} references in grants.env; nil means
// os.LookupEnv. Referenced files and directories must exist.
func Parse(data []byte, filename, baseDir string, getenv func(string) (string, bool)) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	base, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("parse config: base directory: %w", err)
	}
	d := &decoder{file: filename, baseDir: base, getenv: getenv}
	cfg := d.decode(data)
	if err := d.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Single returns the configuration of a plugin given only as a .wasm file,
// as in "hangar serve FILE.wasm": default limits, no prefix, no config and
// no grants. The name is derived from the file's base name: the name
// without its extension, lower-cased, each run of characters outside
// [a-z0-9_-] replaced by "-", leading "-" and "_" and trailing "-" dropped,
// cut to 64 characters, or "plugin" if nothing is left ("My Tool.v2.wasm" becomes
// "my-tool-v2"). Source is wasmPath as given, Kind SourceFile, and Path the
// path made absolute. Single does not check that the file exists.
func Single(wasmPath string) Plugin {
	p := wasmPath
	if abs, err := filepath.Abs(wasmPath); err == nil {
		p = abs
	}
	return Plugin{
		Name:    nameFromFile(wasmPath),
		Source:  wasmPath,
		Kind:    SourceFile,
		Path:    p,
		Limits:  DefaultLimits(),
		Compile: CompileLazy,
	}
}

// nameFromFile derives a valid plugin name from a file path; see Single.
func nameFromFile(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
			dash = r == '-'
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimLeft(b.String(), "-_")
	if len(name) > 64 {
		name = name[:64]
	}
	name = strings.TrimRight(name, "-")
	if name == "" {
		return "plugin"
	}
	return name
}
