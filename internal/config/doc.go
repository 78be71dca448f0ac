// Package config reads and validates Hangar configuration files.
//
// A configuration file lists the WebAssembly plugins Hangar hosts, what each
// may use, and defaults for serving over HTTP. It is YAML or JSON (JSON is
// read as YAML, of which it is a subset, so a file named .json needs no
// special treatment; YAML's leniencies then apply to it too, such as a
// trailing comma before "]" or "}"). [Load] reads a file; [Parse] parses bytes; both return a
// [Config] that is fully validated and defaulted, or every problem found.
// [Single] builds the [Plugin] for a lone .wasm file given on the command
// line, without a configuration file.
//
// # Example
//
//	http:
//	  addr: 127.0.0.1:8080
//	  allowed_origins: ["http://localhost:3000"]
//	  allowed_hosts: ["mcp.example.test"]
//	  legacy_sse: true
//	plugins:
//	  - name: hello
//	    path: ./plugins/hello.wasm
//	    prefix: hi
//	    config:
//	      greeting: Hello
//	    limits:
//	      memory: 64MiB
//	      call_timeout: 30s
//	      host_timeout: 5m
//	      max_instances: 8
//	      max_output: 16MiB
//	    grants:
//	      allowed_hosts: ["api.example.com", "*.example.org"]
//	      allowed_paths:
//	        - host: ./data
//	          guest: /data
//	          read_only: true
//	      env:
//	        API_KEY: ${HANGAR_API_KEY}
//	        MODE: prod
//	  - name: weather
//	    source: https://plugins.example.com/weather-1.2.0.wasm
//	    sha256: 3b4c1e...(64 hex digits)
//	  - name: notes
//	    source: oci://ghcr.io/acme/notes:1.4
//	    verify:
//	      issuer: https://token.actions.githubusercontent.com
//	      subject: https://github.com/acme/notes/.github/workflows/release.yml@refs/tags/v1.4.0
//	      trusted_root: ./trusted_root.json
//
// testdata/full.yaml in this package is a commented example using every
// setting.
//
// # Top level
//
// The top level is a mapping with seven optional keys, http, metrics,
// tracing, deployment, mrtr, tasks and plugins. An empty file, or one holding only comments, is
// valid: it configures a server with no plugins. So is a file whose plugins
// list is empty or missing.
//
// # http
//
// Settings for serving over HTTP.
//
//   - addr: the address to serve HTTP on, host:port with a numeric port. The
//     host may be empty (":8080", every interface), an IP address or a name;
//     port 0 picks a free port. Not set (or ""): HTTP.Addr is empty, and the
//     command line decides the transport; hangar serve then uses stdio unless
//     given --http. [DefaultHTTPAddr], 127.0.0.1:8080, is the address for
//     HTTP requested without one. Without auth, the address must be a
//     loopback one (localhost, 127.0.0.0/8, [::1]; see [IsLoopback]): an
//     address other machines can reach, including an empty host, is an
//     error.
//   - allowed_origins: browser origins allowed to connect, written
//     scheme://host[:port] with no path and no trailing slash. "*" is
//     rejected. Values are lower-cased and the default port (80 for http,
//     443 for https) is dropped. Requests without an Origin header and from
//     localhost origins are allowed regardless (by the server). Default:
//     none.
//   - allowed_hosts: Host header values accepted besides the server's own
//     defaults, as protection against DNS rebinding: "host" or "host:port",
//     IPv6 addresses in brackets. No wildcards. Values are lower-cased.
//     Default: none.
//   - legacy_sse: true also serves the HTTP+SSE transport of protocol
//     version 2024-11-05, for clients that predate Streamable HTTP, at /sse
//     beside /mcp, with the same Host and Origin checks. A boolean. Default:
//     false (/sse answers 404).
//
// The remaining keys bound what HTTP clients can hold. Durations are
// strings with a unit ("30s", "10m") and must be greater than 0.
//
//   - session_idle_timeout: a session that has had no request for this long
//     is closed, and its client must initialize again. Default 30m.
//   - max_sessions: sessions open at once, 1 to 1000000. A client that would
//     open one more gets HTTP 503 with a JSON-RPC error; open sessions are
//     unaffected. Default 1000.
//   - max_connections: TCP connections open at once, 0 to 1000000; further
//     ones wait to be accepted. 0 (the default) means the open-file limit
//     (RLIMIT_NOFILE) less a reserve for plugins, modules and the cache: a
//     quarter of it, at least 64.
//   - max_listens: MCP 2026-07-28 subscriptions/listen streams open at
//     once, 0 to 1000000. Each holds a connection for as long as its client
//     keeps it; one more is refused (HTTP 503, JSON-RPC error -32011) and
//     its connection closed. 0 (the default) means half of max_connections
//     (or of its automatic value), so that streams never take every
//     connection.
//   - max_listens_per_client: the listen streams of one client, 1 to
//     1000000: a token's subject, or without auth the address requests come
//     from (every client behind one address, a proxy's, is one client).
//     One more is refused (HTTP 429, JSON-RPC error -32011) and its
//     connection closed. Default 16.
//   - trusted_proxies: the proxies in front of the server (a load
//     balancer, an ingress), as IP addresses or CIDR ranges. A request
//     whose connection comes from one of them is told from others, where
//     a client is an address (the caps on listens, parked calls and tasks
//     of clients without a token), by the X-Forwarded-For header: the
//     entry the nearest hop not in the list added, read from the right.
//     A request from any other address is its connection's: a client
//     cannot choose its entry by sending the header. Default: none.
//   - read_header_timeout: to read a request's header. Default 10s.
//   - read_timeout: to read a request's body. Default 30s. Responses and
//     event streams are not bounded by it.
//   - write_timeout: a write to a client that accepts none of it for this
//     long fails, and the connection is closed (a client that stops
//     reading). It bounds each write, not the life of a stream. Default 30s.
//   - idle_timeout: a keep-alive connection with no request for this long is
//     closed. Default 2m.
//   - drain_timeout: on SIGTERM or SIGINT, how long calls in progress may
//     go on. Those still running then are cancelled and answered with a
//     JSON-RPC error; requests that arrive meanwhile get an error (HTTP 503
//     for a new session). Default 10s.
//   - tls: serve HTTPS; a mapping with cert and key (both required), PEM
//     files relative to the configuration file's directory that must exist
//     and not be directories. Default: none (plain HTTP).
//   - auth: require a bearer token of every request to /mcp, each allowing
//     a set of plugins; see Authentication below. Default: none, and then
//     addr must be a loopback address. It cannot be combined with
//     legacy_sse.
//
// # Authentication
//
// http.auth is a mapping with at least one of:
//
//   - tokens_file: a file, relative to the configuration file's directory,
//     holding static bearer tokens (below).
//   - tokens_env: the name of an environment variable holding the same
//     YAML; it must be set.
//   - oauth: OAuth 2.1 resource-server mode (below).
//
// A tokens file is a YAML list; each item is a mapping with id (1 to 64
// letters, digits, ".", "_" and "-", unique across the file and the
// variable), either token (the token itself, at least [MinTokenLength]
// characters without spaces) or sha256 (the token's SHA-256, 64 hex
// digits), and plugins (a non-empty list of plugin names, or "*" for every
// plugin). It is decoded as strictly as the configuration, and its problems
// are reported with its name ("$NAME" for the variable), line and column.
// Only each token's SHA-256 is kept, in [Token].
//
// oauth accepts JWT access tokens signed by a key of an authorization
// server's JWKS:
//
//   - issuer (required): the iss every token must carry; an https URL, or
//     http to a loopback host (as for every URL here).
//   - resource (required): this server's canonical URL, as the
//     protected-resource metadata states it.
//   - audience: an aud every token must carry. Default: resource.
//   - jwks_url or jwks_file (exactly one): where the signing keys are; a
//     file relative to the configuration file's directory.
//   - authorization_servers: listed in the metadata. Default: [issuer].
//   - scopes_supported: listed in the metadata. Default: none.
//   - plugins: plugins every valid token may use, besides those its scopes
//     name ("plugin:NAME", "plugin:*"). Default: none.
//
// # metrics
//
//   - addr: serve /metrics, /healthz and /readyz on this address (host:port,
//     as http.addr), without authentication, and no longer /metrics beside
//     /mcp. Default: none; they are served beside /mcp when HTTP is.
//
// # tracing
//
// Tracing is off unless the file has a tracing section.
//
//   - endpoint (required): the OTLP/HTTP traces URL of a collector, http or
//     https, such as http://127.0.0.1:4318/v1/traces; no credentials in it.
//   - headers: a mapping of header names to values sent with every export;
//     ${NAME} is expanded as in grants.env.
//   - sample_ratio: the share of traces started in Hangar that are
//     sampled, 0 to 1. Default 1. A request's traceparent decides for its
//     own trace.
//   - service_name: the service.name of the spans. Default "hangar".
//
// # deployment
//
// The deployment this server is a part of, when it is one of several
// replicas behind a load balancer. Default: a server alone.
//
//   - addresses: every address where the deployment serves MCP, metrics or
//     probes: the other replicas, the load balancer, the operations
//     listeners. No plugin's HTTP request reaches one of them, whatever its
//     grants; the server's own listeners are refused without being listed.
//     Each is host:port or host:first-last (a range of ports, both
//     included), where host is an IP address (IPv6 in brackets, no zone), a
//     host name, resolved when a plugin connects, or "*", every address. A
//     loopback address stands for every loopback address, and an
//     unspecified one (0.0.0.0, [::]) for every address of this machine,
//     as for the server's own listeners. Port 0 and duplicates are errors.
//     Takes effect at the next start, not at a reload.
//
// # mrtr
//
// MCP 2026-07-28's multi round-trip requests: a plugin's call that asks its
// client for input (sampling, elicitation, roots) is parked until the
// client's retry, which its requestState leads back to it
// (docs/mcp-2026.md).
//
//   - replica: this replica's name, written into the states it issues and
//     at the start of its session IDs; 1 to 63 letters, digits, ".", "_"
//     and "-", starting with a letter or digit. The --replica flag
//     overrides it. Default: none.
//   - state_key_file, state_key_env (at most one): the key that seals the
//     states, the same on every replica: a file (relative to the
//     configuration file's directory), or the name of an environment
//     variable, holding 32 random bytes written as 64 hexadecimal digits
//     or in Base64 (a file may also hold the 32 bytes as they are). The
//     key itself is never written in the configuration (state_key is an
//     error). Default: a random key for each process; a retry that reaches
//     another replica must then start again.
//   - previous_state_key_files: files of keys that still open states but
//     never seal them, while a new key rolls out. Default: none.
//   - park_timeout: how long a parked call waits for its retry before it
//     is cancelled; at most 24h. Default 10m.
//   - max_parked, max_parked_per_principal: the parked calls one server,
//     and one authenticated caller, may hold; a call that would park
//     beyond a cap fails its request. Defaults 1000 and 8.
//   - peer_url: where a replica serves MCP, with {replica} for its name
//     (http://{replica}:8080/mcp), an absolute http or https URL without
//     credentials; a retry reaching this replica while another holds its
//     call is forwarded there. Default: none (it is told to start again).
//   - peers: a mapping of replica names to such URLs, which takes
//     precedence over peer_url.
//   - forward_timeout: how long a retry forwarded to the replica holding
//     its call may take, its answer included; at most 24h. A forward that
//     takes longer (a replica that hangs) is cut and its client told the
//     replica is gone. Where retries are forwarded (peer_url or peers),
//     it must be at least every plugin's call_timeout, or the file is
//     refused: a forward cut before the call it waits for could end
//     would tell its client the replica is gone while the call runs on.
//     One retry of a state is forwarded at a time, and a state a forwarded
//     retry used is refused before it is forwarded again. Default 2m.
//
// # tasks
//
// MCP 2026-07-28's tasks extension (io.modelcontextprotocol/tasks): a
// tools/call of a client that declares it may become a task the client
// polls (docs/mcp-2026.md). Durations are at most 24h, sizes at most
// 4GiB. A change takes effect at the next start.
//
//   - enabled: offer the extension in server/discover; false: no call
//     becomes a task. Default true.
//   - after: how long a call runs before it becomes a task. Default 2s.
//   - max_tasks, max_tasks_per_client: the tasks, running or kept, of the
//     server and of one principal (or client address without auth); a
//     call at a cap is answered directly. Defaults 1000 and 16.
//   - max_result_bytes: a task's result, JSON-encoded; a larger one fails
//     its task. At most max_kept_bytes. Default 1MiB.
//   - max_kept_bytes, max_kept_bytes_per_client: the kept results of the
//     server and of one principal (or client address). A running task
//     holds max_result_bytes of both for its result from the moment it
//     is made, so that its result always fits when it comes: a call
//     whose room is not left beside the kept results and the running
//     tasks' is answered directly, not made a task. So at most
//     max_kept_bytes/max_result_bytes tasks run at once on the server,
//     and max_kept_bytes_per_client/max_result_bytes of one client.
//     max_kept_bytes_per_client lies between max_result_bytes (one task
//     of each client can run) and max_kept_bytes. Defaults 64MiB, and
//     for the client's 0: an eighth of max_kept_bytes, at least
//     max_result_bytes.
//   - keep: how long a finished task is kept (its ttlMs). Default 15m.
//   - max_run: a task still running after it is cancelled. Default 1h.
//   - poll_interval: the pollIntervalMs told to clients. Default 1s.
//   - max_listeners, max_listeners_per_client: notifications/tasks
//     listeners of the server and of one client. Defaults 1000 and 8.
//
// # plugins
//
// A list; each item is a mapping:
//
//   - name (required): unique among the plugins, 1 to 64 characters matching
//     ^[a-z0-9][a-z0-9_-]{0,63}$.
//   - source or path (exactly one is required): where the module comes from;
//     see Sources below. path is a file; source is a file, an https:// URL
//     or an oci:// reference.
//   - sha256: the SHA-256 of the .wasm module, 64 hexadecimal digits
//     (case-insensitive, optionally written "sha256:<hex>"; stored lower
//     case without the prefix). Required for https:// sources; an optional
//     pin for files and oci:// sources. A module that does not match is
//     refused.
//   - verify: the signature policy of an oci:// source, required for those
//     and an error for others; see Signatures below.
//   - prefix: namespaces what the plugin serves: tools and prompts are named
//     "<prefix>_<name>", resource URIs become "<prefix>+<uri>". 1 to 32
//     characters matching ^[A-Za-z][A-Za-z0-9.-]{0,31}$. Default (or ""):
//     none.
//   - config: a mapping of strings passed to the plugin as its Extism config
//     (read with config_get). Keys must not be blank. Values are scalars,
//     taken exactly as written: 3 becomes "3", true becomes "true", 1.10
//     stays "1.10". Null values (write "" for an empty string) and nested
//     mappings or lists are errors. ${NAME} is not expanded here.
//   - compile: when serve compiles the plugin to machine code. "lazy" (the
//     default): on its first call (tools/call, prompts/get, resources/read,
//     completion/complete), which waits for it; until then the plugin is
//     listed from the catalog cache or from a run in wazero's interpreter,
//     and holds no machine code and no instance. "eager": as serve starts,
//     in the background; serve is ready once it is compiled. A plugin that
//     must be compiled to be listed is compiled at start either way, and a
//     reload compiles the plugins it loads. See docs/startup.md.
//   - tasks: a mapping of the plugin's tool names (without prefix) to when
//     their calls become tasks for clients of the tasks extension, which
//     overrides what the plugin says (pdk.Tool.Task): "auto" (once the
//     call runs past tasks.after), "never", "always" or "required" (a task
//     once the call has the input it asks for; clients without the
//     extension are refused). A name the plugin does not offer is ignored.
//     Default: none, what the plugin says.
//   - limits and grants, below.
//
// # Sources
//
// A source without a scheme is a file, like path: relative to the
// configuration file's directory, "~" not expanded, and it must exist and
// not be a directory. Plugin.Path holds it absolute and clean. Plugin.Source
// holds the source as written, whichever key gave it, and Plugin.Kind its
// kind (SourceFile, SourceHTTPS, SourceOCI).
//
//   - https://host[:port]/path: downloaded over HTTPS (redirects to plain
//     http are refused) and checked against sha256, which is required. No
//     credentials in the URL and no fragment. http:// is rejected.
//   - oci://registry[:port]/repository:tag,
//     oci://registry[:port]/repository@sha256:<hex>, or both
//     (repository:tag@sha256:<hex>, where the digest wins): an artifact in an
//     OCI registry, as published by hangar push. A tag or a digest is
//     required; there is no implicit "latest". Only sha256 digests. A
//     registry on localhost, 127.0.0.0/8 or [::1] is spoken to over plain
//     HTTP, every other over HTTPS. sha256, when given, pins the module
//     (the layer), not the manifest.
//   - any other scheme is an error.
//
// When a plugin has a remote source, Load sets every Plugin.LockFile to the
// configuration's lock file ([LockPath]: hangar.lock for hangar.yaml,
// team.lock for team.yaml, in the same directory), in which hangar records
// what each source resolved to (see package source). A configuration of
// local files only has no lock file, and Parse and Single leave it empty.
//
// # Signatures
//
// Every oci:// plugin needs a verify setting; leaving it out is an error
// that says how to write one. It is one of:
//
//   - verify: false: run the plugin unverified, an explicit opt-out that
//     hangar logs as a warning whenever it loads the plugin. (verify: true
//     is an error: it names no policy.)
//   - verify: {key: FILE}: a signature by this public key (such as a
//     cosign.pub), a file relative to the configuration file's directory
//     that must exist. No other key may be given with key.
//   - verify: {issuer: URL, subject: IDENTITY, trusted_root: FILE}: a
//     keyless (sigstore) signature whose certificate was issued for this
//     OIDC issuer (an https URL, matched exactly) to this identity (matched
//     exactly), or with subject_regexp instead of subject, to an identity
//     that the Go regexp matches in whole (it is anchored at both ends). A
//     subject_regexp that matches the empty string, a single letter, or
//     identities of unrelated people on common issuers (such as .* or
//     https://github\.com/.+) is rejected: name your own identities, as in
//     https://github\.com/acme/tool/\.github/workflows/release\.yml@refs/tags/v.*.
//     trusted_root is the Sigstore trusted root (trusted_root.json) that
//     the certificate must chain to and that lists the transparency logs
//     and timestamp authorities whose evidence is required; a file relative
//     to the configuration file's directory that must exist and not be a
//     directory (its content is checked when a plugin is verified, not at
//     load). Hangar never fetches it: write it with "cosign trusted-root
//     create", or take it from Sigstore's TUF repository, and keep it up to
//     date. issuer, a subject and trusted_root are all required;
//     trusted_root is an error with key.
//
// The policy is stored in Plugin.Verify as a [Verify]; its MatchSubject
// method applies Subject or SubjectRegexp the same way everywhere, and
// TrustedRoot holds the trusted root's path, absolute and clean.
//
// # limits
//
//   - memory: the most linear memory the plugin may have. Default 256MiB
//     ([DefaultMemory]). A size (see below), rounded up to whole 64KiB
//     WebAssembly pages; at least 1 byte, at most 4GiB (65536 pages).
//   - call_timeout: how long the plugin may run for one call. A Go duration
//     with a unit ("30s", "1m30s", "1.5h"); a bare number is an error.
//     Greater than zero. Default 30s ([DefaultCallTimeout]).
//   - host_timeout: the longest the plugin waits for the MCP client when it
//     asks for sampling, elicitation or roots. A duration, greater than
//     zero. Default 2m ([DefaultHostTimeout]). While another call waits for
//     an instance of the plugin, a call waiting for its client keeps its
//     instance for at most half of call_timeout more.
//   - max_instances: the most instances of the plugin running at once, 0 to
//     1024. Default 0, meaning Hangar chooses: one, so that state the
//     plugin keeps in memory is the same for every call, or one per core
//     (GOMAXPROCS, at least 2) if the module declares that it keeps no state
//     between calls by exporting the function hangar_stateless. Set more
//     than one only for a plugin that keeps no state in memory.
//   - max_output: the most bytes the plugin may return from one call. A
//     size, at least 1 byte, at most 4GiB. Default 16MiB
//     ([DefaultMaxOutput]).
//
// Sizes are a whole number of bytes (an integer, or a string of digits), or
// a whole number with a unit: B; KiB, MiB, GiB, TiB (powers of 1024); KB,
// MB, GB, TB (powers of 1000). Units are case-insensitive and may follow a
// space: "64MiB", "64 mib", "5MB". Fractions ("1.5GiB") and the ambiguous
// one-letter units K, M, G, T are rejected. See [ParseSize].
//
// # grants
//
// What the plugin may use beyond computing. Nothing is granted by default.
//
//   - allowed_hosts: hosts the plugin may reach with Extism HTTP requests:
//     exact host names, IP addresses, or "*." followed by a domain of at
//     least two labels, which matches the subdomains of that domain (not the
//     domain itself: list both if both are needed), or "*", every public
//     host. No scheme, port or path; a listed host is reachable on any port.
//     Loopback, private, link-local and other non-public addresses are
//     reached only through an entry naming the host or the address exactly,
//     never through "*" or "*.domain", and Hangar's own HTTP server never.
//     Values are lower-cased; duplicates are errors.
//   - allowed_paths: host directories visible to the plugin through WASI, a
//     list of mappings:
//     host (required) is a directory, relative to the configuration file's
//     directory like path, which must exist when the configuration is
//     loaded; guest is where the plugin sees it, an absolute slash-separated
//     path, by default the absolute host path itself; read_only (default
//     false) makes it read-only. Two mounts may share neither a host directory
//     nor a guest path.
//   - env: environment variables the plugin sees through WASI. Names are
//     letters, digits and underscores, not starting with a digit; values are
//     scalars as in config. In values, ${NAME} is replaced with the value of
//     NAME in Hangar's own environment and NAME must be set (set but empty is
//     fine). "$$" is a literal "$". "$NAME" without braces is an error (write
//     "${NAME}", or "$$NAME" for the literal text), as are shell forms such
//     as ${NAME:-default}. A "$" followed by anything else is literal.
//     Nothing of Hangar's environment is passed on unless listed here.
//
// # Strictness and errors
//
// Decoding is strict, to catch mistakes before a plugin runs: unknown keys
// (with the closest known key suggested, or where the key belongs), keys
// given twice, values of the wrong type (a string where a number is expected
// and the reverse; quote a value to make it a string), and invalid values
// are all errors. null, or a key with no value, means "not set" for optional
// settings. Anchors and aliases (&name, *name) work; merge keys (<<) and
// more than one YAML document per file do not.
//
// Load and Parse report every problem they find, not only the first, as
// errors joined with errors.Join, sorted by position. Each is an [*Error]
// and reads
//
//	file:line:col: path: problem
//
// where path locates the value in the document, as in
// "plugins[1].limits.memory" (empty at the top level). Syntax errors have
// no column: "file:line: syntax error: ...". Every such error wraps
// [ErrInvalid]; errors reading the file do not.
package config
