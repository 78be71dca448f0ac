package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/hangar-mcp/hangar/internal/catalog"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/source"
)

type pullFlags struct {
	config    string
	cacheDir  string
	update    bool
	offline   bool
	sha256    string
	plainHTTP optionalBool
	logLevel  string
}

func (f *pullFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "resolve every plugin of this configuration file and write its lock file beside it (hangar.lock for hangar.yaml)")
	fs.BoolVar(&f.update, "update", false, "with --config: resolve tags again instead of keeping the digests in the lock file")
	fs.BoolVar(&f.offline, "offline", false, "use no network: only check that the cache (and the lock file) have everything")
	fs.StringVar(&f.sha256, "sha256", "", "with REF: the module's expected SHA-256 (64 hex digits)")
	fs.Var(&f.plainHTTP, "plain-http", "speak plain HTTP to the registry; only for loopback registries, which use it by default (--plain-http=false forces HTTPS)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "diagnostics on stderr: debug, info, warn or error")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "also compile the modules into this compilation cache, serve's --cache-dir, as warm does (default: fetch only)")
}

var pullCmd = &command{
	name:  "pull",
	args:  "[flags] REF | --config FILE",
	short: "fetch plugins into the cache; write the lock file",
	long: `Pull fetches a plugin into Hangar's cache of modules and prints its digests.
REF is an OCI reference, oci://REGISTRY/REPOSITORY:TAG or
oci://REGISTRY/REPOSITORY@sha256:DIGEST, or an https:// URL. The output
gives the reference pinned to the manifest's digest and the module's
SHA-256, ready to paste into a configuration as source: and sha256:.
Pulling a REF checks digests but not signatures: signature policies belong
to configured plugins. REF may also name a container image holding
/plugin.wasm, as hyper-mcp publishes plugins; the module is that file.

With --config, pull resolves every plugin of the configuration as serve
would (checking digests and, for oci:// plugins, signatures under each
plugin's verify policy), fills the cache, and writes the configuration's
lock file beside it, with exactly its plugins: hangar.lock for hangar.yaml,
team.lock for team.yaml. Plugins already locked keep their locked digests,
even if a tag has moved since; --update resolves them again. Afterwards
serve needs no network for these plugins. With --offline, nothing is
fetched: pull only checks that the lock file and the cache hold every
plugin. A configuration of local files only has no lock file: pull checks
the files and writes none.

Registries on loopback addresses (localhost, 127.0.0.1, [::1]) are spoken to
over plain HTTP, all others over HTTPS. Credentials come from Docker's
configuration (docker login, oras login), when a registry asks for them.
The cache of modules is "hangar/sources" in the user's cache directory.
With --cache-dir DIR, pull also compiles the modules into DIR, the
compilation cache serve, call, inspect and warm take as --cache-dir (with
--config, the plugins' lists go into its catalog too, as warm does).`,
	flags: func(fs *flag.FlagSet) { new(pullFlags).register(fs) },
}

func init() { pullCmd.run = runPull }

func runPull(ctx context.Context, env *Env, args []string) error {
	var f pullFlags
	fs := pullCmd.flagSet(env.Stderr)
	f.register(fs)
	pos, err := pullCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	if (f.config == "") == (len(pos) == 0) || len(pos) > 1 {
		pullCmd.help(env.Stderr)
		return errUsage
	}
	log, err := logger(env.Stderr, f.logLevel)
	if err != nil {
		return err
	}
	r, err := newResolver(log)
	if err != nil {
		return err
	}
	r.Offline = f.offline
	if f.config != "" {
		if f.sha256 != "" || f.plainHTTP.set {
			fmt.Fprintln(env.Stderr, "hangar pull: --sha256 and --plain-http go with a REF, not with --config")
			return errUsage
		}
		if err := pullConfig(ctx, env.Stdout, r, f.config, f.update); err != nil {
			return err
		}
		if f.cacheDir == "" {
			return nil
		}
		cfg, err := loadConfig(f.config)
		if err != nil {
			return err
		}
		return compileInto(ctx, env, f.cacheDir, cfg.Plugins, log)
	}
	if f.update {
		fmt.Fprintln(env.Stderr, "hangar pull: --update goes with --config")
		return errUsage
	}
	ref := pos[0]
	if err := applyPlainHTTP(r, ref, f.plainHTTP); err != nil {
		return err
	}
	pin := ""
	if f.sha256 != "" {
		h, problem := config.ParseSHA256(f.sha256)
		if problem != "" {
			return fmt.Errorf("--sha256: %s", problem)
		}
		pin = h
	}
	a, err := r.Fetch(ctx, ref, pin)
	if err != nil {
		return fetchError(ref, err)
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 0, 1, ' ', 0)
	if a.Manifest != "" {
		oref, _ := config.ParseOCIReference(ref)
		fmt.Fprintf(w, "reference:\toci://%s/%s@%s\n", oref.Registry, oref.Repository, a.Manifest)
		fmt.Fprintf(w, "manifest:\t%s\n", a.Manifest)
	} else {
		fmt.Fprintf(w, "source:\t%s\n", ref)
	}
	fmt.Fprintf(w, "sha256:\t%s\n", a.SHA256())
	fmt.Fprintf(w, "path:\t%s\n", a.Path)
	if err := w.Flush(); err != nil || f.cacheDir == "" {
		return err
	}
	spec := config.Single(a.Path)
	spec.Name, spec.Source = refName(ref), ref
	return compileInto(ctx, env, f.cacheDir, []config.Plugin{spec}, log)
}

// compileInto compiles the modules of specs, fetched already, into the
// compilation cache dir, and stores their lists in its catalog, as warm
// does.
func compileInto(ctx context.Context, env *Env, dir string, specs []config.Plugin, log *slog.Logger) error {
	e, err := plugin.NewEngine(dir)
	if err != nil {
		return err
	}
	defer e.Close(context.Background())
	store := catalog.Open(dir)
	for _, spec := range specs {
		if err := warmOne(ctx, e, store, spec, log); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.Stdout, "compiled:\t%d plugins into %s\n", len(specs), dir)
	return nil
}

// refName is a plugin name for the module of ref: the last element of its
// path, without tag, digest or extension ("oci://r/acme/hello:1" is hello).
func refName(ref string) string {
	last := ref[strings.LastIndexByte(ref, '/')+1:]
	last, _, _ = strings.Cut(last, "@")
	last, _, _ = strings.Cut(last, ":")
	return config.Single(last + ".wasm").Name
}

// fetchError is err, a failure to fetch the module of ref, saying first
// what went wrong in words, then the resolver's error.
func fetchError(ref string, err error) error {
	var dns *net.DNSError
	var op *net.OpError
	var cert *tls.CertificateVerificationError
	var what string
	switch {
	case errors.As(err, &dns):
		what = fmt.Sprintf("cannot find the host %s (DNS: %s): check the host name in the reference and the network", dns.Name, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED) && errors.As(err, &op) && op.Addr != nil:
		what = fmt.Sprintf("nothing accepts connections at %s (connection refused): is the registry or server running, on that port?", op.Addr)
	case errors.As(err, &cert):
		what = "the server's TLS certificate is not trusted (for a registry on localhost, plain HTTP is the default; elsewhere, install its CA)"
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		what = "the server did not answer in time: check the network, or retry"
	default:
		return err
	}
	return &readableError{what: ref + ": " + what, err: err}
}

// readableError is an error said in words, with the error it explains.
type readableError struct {
	what string
	err  error
}

func (e *readableError) Error() string { return e.what + "\n  (" + e.err.Error() + ")" }
func (e *readableError) Unwrap() error { return e.err }

// pullConfig resolves every plugin of a configuration and writes its lock.
func pullConfig(ctx context.Context, out io.Writer, r *source.Resolver, path string, update bool) error {
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(cfg.Plugins))
	for _, spec := range cfg.Plugins {
		names = append(names, spec.Name)
	}
	var lock *source.Lock
	if cfg.Remote() {
		migrateLocks(cfg.Plugins, r.Logger)
		if lock, err = source.LoadLock(config.LockPath(path)); err != nil {
			return err
		}
	}
	r.Lock, r.Update = lock, update
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	var errs []error
	for _, spec := range cfg.Plugins {
		a, err := r.Resolve(ctx, spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", spec.Name, fetchError(spec.Source, err)))
			continue
		}
		note := ""
		switch {
		case a.Locked:
			note = "(locked)"
		case a.Manifest != "":
			note = "manifest " + a.Manifest
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", spec.Name, a.Digest, spec.Source, note)
	}
	w.Flush()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if lock == nil {
		fmt.Fprintf(out, "no lock file: every plugin of %s is a local file (pin one with sha256 to refuse a changed file)\n", path)
		return nil
	}
	lock.Retain(names)
	if err := lock.Save(); err != nil {
		return err
	}
	fmt.Fprintf(out, "locked %d plugins in %s\n", len(names), lock.Path())
	return nil
}

// optionalBool is a boolean flag that knows whether it was given.
type optionalBool struct{ set, val bool }

func (b *optionalBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.val)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.val = true, v
	return nil
}

func (b *optionalBool) IsBoolFlag() bool { return true }

// applyPlainHTTP applies --plain-http for the registry of ref: plain HTTP
// is allowed for loopback registries only.
func applyPlainHTTP(r *source.Resolver, ref string, plain optionalBool) error {
	if !plain.set {
		return nil
	}
	if !strings.HasPrefix(ref, "oci://") {
		return fmt.Errorf("--plain-http applies to oci:// references")
	}
	oref, problem := config.ParseOCIReference(ref)
	if problem != "" {
		return fmt.Errorf("invalid oci reference %q: %s", ref, problem)
	}
	if !plain.val {
		r.LoopbackTLS = true
		return nil
	}
	if !r.PlainHTTP(oref.Registry) {
		return fmt.Errorf("--plain-http: %s is not a loopback address; plain HTTP is allowed only for registries on localhost, 127.0.0.1 or [::1]", oref.Registry)
	}
	return nil
}

// newResolver returns a resolver with Hangar's cache, the registry
// credentials of Docker's configuration, and the signature verifier.
func newResolver(log *slog.Logger) (*source.Resolver, error) {
	dir := source.DefaultCacheDir()
	if dir == "" {
		return nil, errors.New("no user cache directory for fetched plugins; set XDG_CACHE_HOME")
	}
	return &source.Resolver{
		CacheDir:    dir,
		Credentials: registryCredentials(),
		Verifier:    pluginVerifier(log),
		Logger:      log,
	}, nil
}

// pluginVerifier returns the signature verifier for oci:// plugins: Sigstore
// signatures checked in process by package verify, against the key of a key
// policy or the trusted root (verify.trusted_root) of a keyless one; see
// sigstoreVerifier.
func pluginVerifier(log *slog.Logger) source.Verifier {
	return &sigstoreVerifier{log: log, roots: defaultTrustedRoots}
}

// registryCredentials reads credentials from Docker's configuration
// ($DOCKER_CONFIG/config.json or ~/.docker/config.json, and its credential
// helpers), used only when a registry asks. nil: anonymous.
func registryCredentials() auth.CredentialFunc {
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil
	}
	return credentials.Credential(store)
}

type offlineKey struct{}

// withOffline returns ctx marked so that readPlugin uses no network, for
// serve --offline: https:// and oci:// plugins must then be in the cache
// (and oci:// ones in the lock file), or loading them fails with
// source.ErrOffline.
func withOffline(ctx context.Context, offline bool) context.Context {
	return context.WithValue(ctx, offlineKey{}, offline)
}

func isOffline(ctx context.Context) bool {
	off, _ := ctx.Value(offlineKey{}).(bool)
	return off
}

// readPlugin returns the module of a plugin, resolving its source: a file
// is read (and checked against its sha256 pin and recorded in the lock
// file, when it has them), https:// and oci:// sources come from the cache
// or the network as the lock file says (see package source), without network
// when ctx is marked by withOffline. The lock file is updated when
// something new was resolved; failing to write it is only a warning.
func readPlugin(ctx context.Context, spec config.Plugin, log *slog.Logger) ([]byte, error) {
	if (spec.Kind == config.SourceFile || spec.Kind == "") && spec.LockFile == "" && spec.SHA256 == "" {
		wasm, err := source.ReadModule(spec.Path, 0)
		if err == nil {
			err = checkModule(spec.Source, wasm)
		}
		return wasm, err
	}
	r := &source.Resolver{Logger: log, Verifier: pluginVerifier(log)}
	if spec.Kind != config.SourceFile && spec.Kind != "" {
		var err error
		if r, err = newResolver(log); err != nil {
			return nil, err
		}
	}
	r.Offline = isOffline(ctx)
	if spec.LockFile != "" {
		lock, err := source.LoadLock(spec.LockFile)
		if err != nil {
			return nil, err
		}
		r.Lock = lock
	}
	a, err := r.Resolve(ctx, spec)
	if err != nil {
		return nil, err
	}
	if r.Lock != nil {
		if err := r.Lock.Save(); err != nil {
			log.Warn("could not update the lock file", "plugin", spec.Name, "error", err)
		}
	}
	if a.Locked {
		log.Debug("plugin locked", "plugin", spec.Name, "manifest", a.Manifest, "sha256", a.SHA256())
	}
	wasm, err := a.Read()
	if err == nil {
		err = checkModule(spec.Source, wasm)
	}
	return wasm, err
}

// migrateLock gives the lock file at path the entries of the plugins named
// that hangar.lock in the same directory holds, if the lock file does not
// exist yet. A configuration's lock file is named after it (team.lock for
// team.yaml); before, every configuration in a directory shared hangar.lock,
// so this carries a configuration's locked plugins over, once: the entries
// apply only while a plugin's source is unchanged, like every entry, and
// hangar.lock is left as it is, for hangar.yaml.
func migrateLock(path string, names []string, log *slog.Logger) error {
	shared := filepath.Join(filepath.Dir(path), config.LockFileName)
	if shared == path {
		return nil
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Lstat(shared); err != nil {
		return nil
	}
	old, err := source.LoadLock(shared)
	if err != nil {
		return err
	}
	lock, err := source.LoadLock(path)
	if err != nil {
		return err
	}
	var taken []string
	for _, name := range names {
		if e, ok := old.Get(name); ok {
			lock.Put(name, e)
			taken = append(taken, name)
		}
	}
	if len(taken) == 0 {
		return nil
	}
	if err := lock.Save(); err != nil {
		return err
	}
	log.Info("lock entries taken from the lock file every configuration in the directory shared before", "from", shared, "to", path, "plugins", strings.Join(taken, ","))
	return nil
}

// migrateLocks runs migrateLock for the lock files of specs; a failure is
// only a warning (the plugins are then resolved again).
func migrateLocks(specs []config.Plugin, log *slog.Logger) {
	names := map[string][]string{}
	var paths []string
	for _, s := range specs {
		if s.LockFile == "" {
			continue
		}
		if _, ok := names[s.LockFile]; !ok {
			paths = append(paths, s.LockFile)
		}
		names[s.LockFile] = append(names[s.LockFile], s.Name)
	}
	for _, p := range paths {
		if err := migrateLock(p, names[p], log); err != nil {
			log.Warn("could not take lock entries from the shared lock file", "lock", p, "error", err)
		}
	}
}
