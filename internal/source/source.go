package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Errors wrapped by the errors Resolve, Fetch and Push return; test for
// them with errors.Is.
var (
	// ErrDigestMismatch: content does not hash to the digest it must have
	// (a sha256 pin, a digest reference, a locked digest, or the digest a
	// manifest gives a layer). The content is not used.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrOffline: the module is not in the cache (or, for oci:// sources,
	// not in the lock file) and the Resolver may not use the network.
	ErrOffline = errors.New("not available offline")
	// ErrUnsigned: an oci:// artifact's signature could not be verified
	// under its policy, or there is no Verifier to check it.
	ErrUnsigned = errors.New("signature not verified")
	// ErrMediaType: an oci:// artifact is not a Hangar plugin: wrong
	// manifest, artifact or layer media type, or not exactly one layer.
	ErrMediaType = errors.New("not a Hangar plugin artifact")
	// ErrTooLarge: the module is larger than Resolver.MaxSize.
	ErrTooLarge = errors.New("too large")
	// ErrInsecureRedirect: an https download was redirected to plain http.
	ErrInsecureRedirect = errors.New("redirect to an insecure URL")
	// ErrBadLock: the lock file is malformed.
	ErrBadLock = errors.New("malformed lock file")
	// ErrTimeout: fetching a source over the network took longer than
	// Resolver.Timeout.
	ErrTimeout = errors.New("timed out")
)

// DefaultMaxSize is the largest module Resolve accepts unless
// Resolver.MaxSize says otherwise.
const DefaultMaxSize = config.MaxModuleSize

// DefaultTimeout bounds the time Resolve, Fetch and Push may spend on the
// network for one source (all requests and retries, the download
// included) unless Resolver.Timeout says otherwise.
const DefaultTimeout = 2 * time.Minute

// maxManifestSize bounds the manifests Resolve reads.
const maxManifestSize = 4 << 20

// DefaultCacheDir returns the cache of fetched modules: "hangar/sources" in
// the user's cache directory ($XDG_CACHE_HOME or ~/.cache on Linux), or ""
// when there is none.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "hangar", "sources")
}

// Artifact is a resolved module.
type Artifact struct {
	Digest   string // the module's digest, "sha256:<hex>"
	Path     string // the module: a cache entry, or for file sources the file itself
	Source   string // the source it was resolved from, as configured
	Manifest string // for oci:// sources, the manifest's digest "sha256:<hex>"; "" otherwise
	Locked   bool   // the digest came from the lock file rather than from resolving the source

	max int64 // the size limit Read applies; 0: DefaultMaxSize
}

// SHA256 returns the module's SHA-256 as 64 hex digits.
func (a Artifact) SHA256() string { return strings.TrimPrefix(a.Digest, "sha256:") }

// Read returns the module's bytes, checking them against Digest, so that a
// file changed since it was resolved is refused (ErrDigestMismatch). Like
// ReadModule it reads only a regular file within the Resolver's MaxSize.
func (a Artifact) Read() ([]byte, error) {
	b, err := ReadModule(a.Path, a.max)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != a.SHA256() {
		return nil, fmt.Errorf("%s: %w: it has sha256 %s, resolved as %s", a.Path, ErrDigestMismatch, got, a.SHA256())
	}
	return b, nil
}

// Resolver turns plugin sources into modules on disk. Remote modules are
// kept in a content-addressed cache under CacheDir; a Lock pins what each
// plugin resolved to. The zero value needs CacheDir set for https:// and
// oci:// sources. A Resolver is safe for concurrent use once configured.
type Resolver struct {
	// CacheDir holds fetched modules in CacheDir/blobs/sha256/<hex>
	// (see Cache). DefaultCacheDir is the usual choice.
	CacheDir string
	// Lock, if set, is consulted and updated by Resolve. The caller saves it.
	Lock *Lock
	// Update makes Resolve ignore the Lock's entries, resolving tags again,
	// and record the new results.
	Update bool
	// HTTPClient makes the requests to https:// sources and to registries.
	// nil: a client with a response-header timeout that retries on
	// transient errors. Its CheckRedirect is wrapped to refuse redirects
	// from https to http.
	HTTPClient *http.Client
	// Offline forbids network access: what is not in the cache (for oci://
	// sources, in the Lock and the cache) is an error wrapping ErrOffline.
	Offline bool
	// Verifier checks the signatures of oci:// artifacts. nil: only plugins
	// with verify: false can come from a registry.
	Verifier Verifier
	// Credentials, if set, supplies registry credentials (for example a
	// credentials.Store from Docker's configuration). nil: anonymous.
	Credentials auth.CredentialFunc
	// LoopbackTLS makes registries on loopback addresses (localhost,
	// 127.0.0.0/8, ::1) use HTTPS like all others; by default they are
	// spoken to over plain HTTP.
	LoopbackTLS bool
	// MaxSize bounds the size of a module; 0 means DefaultMaxSize.
	MaxSize int64
	// Timeout bounds the time spent on the network for one source: every
	// request, retry and download of one Resolve, Fetch or Push together.
	// 0 means DefaultTimeout; the caller's context can end it sooner (a
	// cancelled context, as on SIGTERM, stops a download at once).
	Timeout time.Duration
	// Logger receives warnings (such as a plugin run without signature
	// verification) and progress. nil: discarded.
	Logger *slog.Logger
}

func (r *Resolver) cache() Cache { return Cache{Dir: r.CacheDir} }

func (r *Resolver) maxSize() int64 {
	if r.MaxSize > 0 {
		return r.MaxSize
	}
	return DefaultMaxSize
}

func (r *Resolver) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

// withDeadline bounds ctx by the Resolver's Timeout; done turns an error
// caused by that deadline into one wrapping ErrTimeout.
func (r *Resolver) withDeadline(ctx context.Context) (context.Context, context.CancelFunc, func(error) error) {
	tctx, cancel := context.WithTimeoutCause(ctx, r.timeout(), ErrTimeout)
	done := func(err error) error {
		if err == nil || ctx.Err() != nil || !errors.Is(context.Cause(tctx), ErrTimeout) {
			return err
		}
		if errors.Is(err, ErrTimeout) {
			return fmt.Errorf("%w (the limit for fetching one source is %s)", err, r.timeout())
		}
		return fmt.Errorf("%w after %s, the limit for fetching one source: %w", ErrTimeout, r.timeout(), err)
	}
	return tctx, cancel, done
}

func (r *Resolver) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Resolve returns the module of a configured plugin, fetching it if it is
// not cached, and records the result in the Lock:
//
//   - a file source is hashed and checked against spec.SHA256 when set; the
//     Artifact's Path is the file itself;
//   - an https:// source is looked up in the cache by its pin, spec.SHA256,
//     and otherwise downloaded and checked against it;
//   - an oci:// source with a usable Lock entry (same source, same sha256
//     pin if any, same signature policy) resolves to the locked manifest:
//     from the cache when the module is there and the cache records that
//     this manifest was verified under this policy with exactly this
//     module, else fetched by the locked digest and verified again, so a
//     tag that moved does not change what runs and an edited lock file
//     cannot swap the module. Otherwise the reference is resolved in the
//     registry, the manifest's media types are checked, its signature
//     verified under spec.Verify, and the module (the layer of a Hangar
//     artifact, or /plugin.wasm of a container image) fetched and checked
//     against its digest and spec.SHA256.
//
// Network work for one source is bounded by Timeout and by ctx.
func (r *Resolver) Resolve(ctx context.Context, spec config.Plugin) (Artifact, error) {
	var (
		a   Artifact
		err error
	)
	switch spec.Kind {
	case config.SourceFile, "":
		a, err = r.resolveFile(spec)
	case config.SourceHTTPS, config.SourceOCI:
		r.cache().clean()
		tctx, cancel, done := r.withDeadline(ctx)
		if spec.Kind == config.SourceHTTPS {
			a, err = r.resolveHTTPS(tctx, spec)
		} else {
			a, err = r.resolveOCI(tctx, spec)
		}
		err = done(err)
		cancel()
	default:
		err = fmt.Errorf("unknown source kind %q", spec.Kind)
	}
	if err != nil {
		return Artifact{}, err
	}
	a.max = r.maxSize()
	if r.Lock != nil {
		e := LockEntry{Source: spec.Source, SHA256: a.SHA256(), Manifest: a.Manifest}
		if spec.Kind == config.SourceOCI {
			e.Verify, _ = policyID(spec.Verify) // computed without error in resolveOCI
		}
		if old, ok := r.Lock.Get(spec.Name); ok && old.Source == e.Source && old.SHA256 != e.SHA256 && spec.Kind == config.SourceFile {
			r.log().Info("plugin file changed since it was locked", "plugin", spec.Name, "path", spec.Path, "locked", old.SHA256, "now", e.SHA256)
		}
		r.Lock.Put(spec.Name, e)
	}
	return a, nil
}

func (r *Resolver) resolveFile(spec config.Plugin) (Artifact, error) {
	path := spec.Path
	if path == "" {
		path = spec.Source
	}
	h, err := hashRegular(path, r.maxSize())
	if err != nil {
		return Artifact{}, err
	}
	if spec.SHA256 != "" && h != spec.SHA256 {
		return Artifact{}, fmt.Errorf("%s: %w: the file has sha256 %s, the configuration pins %s; refusing to load it", path, ErrDigestMismatch, h, spec.SHA256)
	}
	return Artifact{Digest: "sha256:" + h, Path: path, Source: spec.Source}, nil
}

func (r *Resolver) resolveHTTPS(ctx context.Context, spec config.Plugin) (Artifact, error) {
	if spec.SHA256 == "" {
		return Artifact{}, fmt.Errorf("%s: an https source needs a sha256 pin", spec.Source)
	}
	return r.fetchHTTPS(ctx, spec.Source, spec.SHA256)
}

// Fetch fetches a source into the cache without consulting or updating the
// Lock and without checking signatures, as "hangar pull" does: an https://
// URL (checked against sha256 when given; otherwise the Artifact reports
// its digest), or an oci:// reference (whose layer is checked against
// sha256 when given). Caching is harmless: a cached module is used only
// for a configured plugin whose pin, or lock entry, names its digest.
func (r *Resolver) Fetch(ctx context.Context, src, sha256 string) (a Artifact, err error) {
	r.cache().clean()
	ctx, cancel, done := r.withDeadline(ctx)
	defer func() {
		err = done(err)
		cancel()
		a.max = r.maxSize()
	}()
	switch {
	case strings.HasPrefix(src, "https://"):
		return r.fetchHTTPS(ctx, src, sha256)
	case strings.HasPrefix(src, "oci://"):
		ref, problem := config.ParseOCIReference(src)
		if problem != "" {
			return Artifact{}, fmt.Errorf("invalid oci reference %q: %s", src, problem)
		}
		return r.pullOCI(ctx, pull{src: src, ref: ref, reference: ref.Reference, pin: sha256})
	}
	return Artifact{}, fmt.Errorf("%q: want an oci:// reference or an https:// URL", src)
}

// httpClient returns the client for requests, with redirects to plain HTTP
// refused (except from plain HTTP on loopback to loopback).
func (r *Resolver) httpClient() *http.Client {
	base := r.HTTPClient
	if base == nil {
		base = defaultClient
	}
	c := *base
	next := base.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkRedirect(req, via); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	switch {
	case req.URL.Scheme == "https":
		return nil
	case req.URL.Scheme == "http" && len(via) > 0 && via[0].URL.Scheme == "http" && IsLoopback(req.URL.Hostname()):
		return nil // a plain-HTTP registry on loopback redirecting on loopback
	}
	from := ""
	if len(via) > 0 {
		from = via[len(via)-1].URL.Redacted()
	}
	return fmt.Errorf("%w: %s redirected to %s; only https is allowed", ErrInsecureRedirect, from, req.URL.Redacted())
}

var defaultClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: retry.NewTransport(t)}
}()

// IsLoopback reports whether host (a name or an IP address, without port
// or brackets) is localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil && a.IsLoopback()
}

// registryHost returns the host of a registry name "host[:port]".
func registryHost(reg string) string {
	if h, _, err := net.SplitHostPort(reg); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(reg, "["), "]")
}

// PlainHTTP reports whether the registry reg ("host[:port]") is spoken to
// over plain HTTP: only loopback registries are, unless LoopbackTLS.
func (r *Resolver) PlainHTTP(reg string) bool {
	return !r.LoopbackTLS && IsLoopback(registryHost(reg))
}
