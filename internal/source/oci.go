package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/hangar-mcp/hangar/internal/config"
)

// The OCI artifact format of a Hangar plugin: an OCI image manifest
// (application/vnd.oci.image.manifest.v1+json) with
//
//   - artifactType ArtifactType,
//   - the empty config (application/vnd.oci.empty.v1+json, content "{}"),
//   - exactly one layer of media type LayerMediaType holding the .wasm
//     module, annotated with its file name (org.opencontainers.image.title).
//
// The same artifact can be pushed with the oras command line:
//
//	oras push --artifact-type application/vnd.hangar.plugin.v1 \
//	  registry.example/hangar/hello:1.0 hello.wasm:application/vnd.hangar.plugin.layer.v1.wasm
const (
	ArtifactType   = "application/vnd.hangar.plugin.v1"
	LayerMediaType = "application/vnd.hangar.plugin.layer.v1.wasm"
)

// Verifier checks the signature of an OCI artifact before its module is
// fetched. Resolve calls it for every oci:// plugin it resolves from a
// registry (not for one served from the Lock and the cache) whose policy is
// not Disabled, with:
//
//   - repo: the repository holding the artifact; for a registry it is a
//     *remote.Repository (which also implements registry.ReferrerLister and
//     registry.TagLister, for finding signatures by the referrers API or by
//     the "sha256-<hex>.sig" tag scheme);
//   - manifest: the descriptor of the plugin's manifest (media type,
//     digest, size, artifact type), whose digest Resolve has checked;
//   - policy: the plugin's verify settings (never Disabled here).
//
// It returns nil when a signature satisfying the policy covers the manifest
// digest, and an error saying why not otherwise. Resolve wraps that error
// with ErrUnsigned and refuses the plugin.
type Verifier interface {
	Verify(ctx context.Context, repo oras.ReadOnlyGraphTarget, manifest ocispec.Descriptor, policy config.Verify) error
}

// pull is one OCI fetch.
type pull struct {
	name      string // plugin name, for logs; "" from Fetch
	src       string // as configured
	ref       registry.Reference
	reference string         // tag or digest to fetch
	pin       string         // expected module SHA-256, or ""
	policy    *config.Verify // nil: do not verify (Fetch)
	pid       string         // policyID(policy), when policy is set
	locked    bool           // reference and pin come from the lock file
}

func (r *Resolver) resolveOCI(ctx context.Context, spec config.Plugin) (Artifact, error) {
	ref, problem := config.ParseOCIReference(spec.Source)
	if problem != "" {
		return Artifact{}, fmt.Errorf("invalid oci reference %q: %s", spec.Source, problem)
	}
	if spec.Verify == nil {
		return Artifact{}, fmt.Errorf("%s: %w: no signature policy (verify) is configured", spec.Source, ErrUnsigned)
	}
	pid, err := policyID(spec.Verify)
	if err != nil {
		return Artifact{}, fmt.Errorf("%s: verify: %w", spec.Source, err)
	}
	p := pull{name: spec.Name, src: spec.Source, ref: ref, reference: ref.Reference, pin: spec.SHA256, policy: spec.Verify, pid: pid}
	r.warnUnverified(spec)

	if r.Lock != nil && !r.Update {
		if e, ok := r.Lock.Get(spec.Name); ok && e.Source == spec.Source && e.Verify == pid && e.Manifest != "" &&
			(spec.SHA256 == "" || spec.SHA256 == e.SHA256) {
			// The lock entry is used as it is only when this cache recorded
			// that its manifest was verified under this policy and holds
			// exactly its module; otherwise (an edited lock file, another
			// machine's cache) the manifest is fetched and verified again.
			mod, recorded := r.cache().verifiedModule(e.Manifest, pid)
			if recorded && mod == e.SHA256 {
				if path, ok := r.cache().Lookup(e.SHA256); ok {
					return Artifact{Digest: "sha256:" + e.SHA256, Path: path, Source: spec.Source, Manifest: e.Manifest, Locked: true}, nil
				}
			} else if recorded {
				r.log().Warn("the lock file names another module than the manifest it locks was verified with; verifying again",
					"plugin", spec.Name, "lock", r.Lock.Path(), "manifest", e.Manifest, "locked", e.SHA256, "verified", mod)
			}
			if r.Offline {
				why := fmt.Sprintf("the locked module (sha256 %s) is not in the cache %s", e.SHA256, r.CacheDir)
				if !recorded || mod != e.SHA256 {
					why = fmt.Sprintf("the locked manifest %s was not verified in the cache %s with module sha256 %s, so its signature must be checked again", e.Manifest, r.CacheDir, e.SHA256)
				}
				return Artifact{}, fmt.Errorf("%s: %w: %s; run hangar pull --config without --offline", spec.Source, ErrOffline, why)
			}
			// Fetch and verify exactly what the lock names, wherever the tag
			// points now.
			p.reference, p.pin, p.locked = e.Manifest, e.SHA256, true
			a, err := r.pullOCI(ctx, p)
			a.Locked = err == nil
			return a, err
		}
	}
	if r.Offline {
		return Artifact{}, fmt.Errorf("%s: %w: the plugin %q has no usable entry in the lock file; resolving it (and checking its signature) needs the registry",
			spec.Source, ErrOffline, spec.Name)
	}
	return r.pullOCI(ctx, p)
}

func (r *Resolver) warnUnverified(spec config.Plugin) {
	if spec.Verify != nil && spec.Verify.Disabled {
		r.log().Warn("signature verification is disabled for this plugin (verify: false)", "plugin", spec.Name, "source", spec.Source)
	}
}

// repository returns a client for the repository of ref.
func (r *Resolver) repository(ref registry.Reference) *remote.Repository {
	repo := &remote.Repository{Reference: ref, PlainHTTP: r.PlainHTTP(ref.Registry)}
	header := make(map[string][]string)
	header["User-Agent"] = []string{userAgent}
	repo.Client = &auth.Client{
		Client:     r.httpClient(),
		Header:     header,
		Cache:      auth.NewCache(),
		Credential: r.Credentials,
	}
	return repo
}

// pullOCI fetches and checks a manifest, verifies its signature, and
// fetches its module into the cache.
func (r *Resolver) pullOCI(ctx context.Context, p pull) (Artifact, error) {
	if r.Offline {
		return Artifact{}, fmt.Errorf("%s: %w", p.src, ErrOffline)
	}
	repo := r.repository(p.ref)
	fail := func(err error) (Artifact, error) { return Artifact{}, fmt.Errorf("%s: %w", p.src, err) }

	desc, raw, err := fetchManifest(ctx, repo, p.reference)
	if err != nil {
		return fail(err)
	}
	// The signature covers the manifest the reference names: for an
	// image index, the index.
	top := desc
	plan, err := planPull(desc, raw)
	if err != nil {
		return fail(err)
	}
	if plan.child != nil {
		cdesc, craw, err := fetchManifest(ctx, repo, plan.child.Digest.String())
		if err != nil {
			return fail(fmt.Errorf("image manifest %s of index %s: %w", plan.child.Digest, desc.Digest, err))
		}
		if cdesc.Digest != plan.child.Digest {
			return fail(fmt.Errorf("%w: asked for manifest %s, the registry answered with %s", ErrDigestMismatch, plan.child.Digest, cdesc.Digest))
		}
		if plan, err = planPull(cdesc, craw); err != nil {
			return fail(fmt.Errorf("image manifest %s of index %s: %w", cdesc.Digest, desc.Digest, err))
		}
		if plan.child != nil {
			return fail(fmt.Errorf("%w: index %s refers to another index", ErrMediaType, desc.Digest))
		}
	}
	if plan.image == nil {
		top.ArtifactType = ArtifactType
	}

	if p.policy != nil {
		if p.policy.Disabled {
			// resolveOCI has warned
		} else if r.Verifier == nil {
			return fail(fmt.Errorf("%w: this build of hangar cannot check signatures (%s); set verify: false to run the plugin unverified", ErrUnsigned, p.policy))
		} else if err := r.Verifier.Verify(ctx, repo, top, *p.policy); err != nil {
			return fail(fmt.Errorf("%w: manifest %s: %w", ErrUnsigned, top.Digest, err))
		}
	}
	a := Artifact{Source: p.src, Manifest: top.Digest.String()}
	mismatch := func(h string) (Artifact, error) {
		if p.locked {
			return fail(fmt.Errorf("%w: %s names module sha256 %s for manifest %s, but that manifest holds sha256 %s; "+
				"the lock file was edited or is corrupt: remove the plugin's entry from it (or run hangar pull --update) to resolve it again", ErrDigestMismatch, filepath.Base(r.Lock.Path()), p.pin, top.Digest, h))
		}
		return fail(fmt.Errorf("%w: the module in manifest %s has sha256 %s, expected %s; refusing to load it", ErrDigestMismatch, top.Digest, h, p.pin))
	}
	done := func(h, path string) (Artifact, error) {
		if p.pin != "" && h != p.pin {
			return mismatch(h)
		}
		a.Digest, a.Path = "sha256:"+h, path
		if p.policy != nil {
			r.cache().recordVerified(top.Digest.String(), p.pid, h)
		}
		r.log().Debug("pulled", "source", p.src, "manifest", a.Manifest, "sha256", h)
		return a, nil
	}

	if plan.image != nil {
		// A container image holding /plugin.wasm (hyper-mcp's layout).
		if p.policy != nil {
			if h, ok := r.cache().verifiedModule(top.Digest.String(), p.pid); ok {
				if path, ok := r.cache().Lookup(h); ok {
					return done(h, path)
				}
			}
		}
		h, path, err := r.extractImage(ctx, repo, plan.image)
		if err != nil {
			return fail(err)
		}
		return done(h, path)
	}

	layer := plan.layer
	h := layer.Digest.Encoded()
	if p.pin != "" && h != p.pin {
		return mismatch(h)
	}
	if layer.Size > r.maxSize() {
		return fail(fmt.Errorf("%w: the module has %d bytes, more than the limit of %d", ErrTooLarge, layer.Size, r.maxSize()))
	}
	if path, ok := r.cache().Lookup(h); ok {
		return done(h, path)
	}
	blob, err := repo.Blobs().Fetch(ctx, layer)
	if err != nil {
		return fail(fmt.Errorf("module %s: %w", layer.Digest, err))
	}
	defer blob.Close()
	body, reported := reportProgress(ctx, p.src, blob, layer.Size)
	_, path, err := r.cache().Put(body, h, layer.Size)
	reported()
	if err != nil {
		if errors.Is(err, ErrDigestMismatch) || errors.Is(err, ErrTooLarge) {
			return fail(fmt.Errorf("module %s: %w; the registry served content that does not match the manifest, refusing it", layer.Digest, err))
		}
		return fail(fmt.Errorf("module %s: %w", layer.Digest, err))
	}
	return done(h, path)
}

// fetchManifest fetches the manifest reference names (a tag or a digest),
// checking its size and digest.
func fetchManifest(ctx context.Context, repo *remote.Repository, reference string) (ocispec.Descriptor, []byte, error) {
	desc, rc, err := repo.FetchReference(ctx, reference)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	defer rc.Close()
	if desc.Size > maxManifestSize || desc.Size < 0 {
		return ocispec.Descriptor{}, nil, fmt.Errorf("%w: the manifest has %d bytes", ErrTooLarge, desc.Size)
	}
	if want, err := digest.Parse(reference); err == nil && desc.Digest != want {
		return ocispec.Descriptor{}, nil, fmt.Errorf("%w: asked for manifest %s, the registry answered with %s", ErrDigestMismatch, want, desc.Digest)
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		if errors.Is(err, content.ErrMismatchedDigest) {
			err = fmt.Errorf("%w: manifest: %w", ErrDigestMismatch, err)
		}
		return ocispec.Descriptor{}, nil, err
	}
	return desc, raw, nil
}

// plan says how to get the module of a manifest: exactly one of its
// fields is set.
type plan struct {
	layer ocispec.Descriptor   // a Hangar artifact: this layer is the module
	image []ocispec.Descriptor // a container image: these layers hold /plugin.wasm
	child *ocispec.Descriptor  // an image index: this image manifest holds the plugin
}

// planPull checks that a manifest is a Hangar plugin artifact, a container
// image in hyper-mcp's layout, or an index of one such image, and says how
// to get its module.
func planPull(desc ocispec.Descriptor, raw []byte) (plan, error) {
	switch desc.MediaType {
	case ocispec.MediaTypeImageIndex, mediaTypeDockerList:
		child, err := indexImage(desc, raw)
		if err != nil {
			return plan{}, err
		}
		return plan{child: &child}, nil
	case ocispec.MediaTypeImageManifest, mediaTypeDockerManifest:
	default:
		return plan{}, fmt.Errorf("%w: the manifest's media type is %q, want %q (or a container image holding /plugin.wasm)", ErrMediaType, desc.MediaType, ocispec.MediaTypeImageManifest)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return plan{}, fmt.Errorf("%w: invalid manifest: %v", ErrMediaType, err)
	}
	if m.MediaType != "" && m.MediaType != desc.MediaType {
		return plan{}, fmt.Errorf("%w: the manifest says its media type is %q, the registry %q", ErrMediaType, m.MediaType, desc.MediaType)
	}
	if m.ArtifactType == "" && isImageConfig(m.Config.MediaType) {
		layers, err := imageLayers(m)
		if err != nil {
			return plan{}, err
		}
		return plan{image: layers}, nil
	}
	layer, err := pluginLayer(m)
	if err != nil {
		return plan{}, err
	}
	return plan{layer: layer}, nil
}

// pluginLayer checks that a manifest is a Hangar plugin and returns the
// descriptor of its module.
func pluginLayer(m ocispec.Manifest) (ocispec.Descriptor, error) {
	switch {
	case m.MediaType != ocispec.MediaTypeImageManifest:
		return ocispec.Descriptor{}, fmt.Errorf("%w: the manifest's media type is %q, want %q", ErrMediaType, m.MediaType, ocispec.MediaTypeImageManifest)
	case m.ArtifactType != ArtifactType:
		return ocispec.Descriptor{}, fmt.Errorf("%w: artifactType is %q, want %q", ErrMediaType, m.ArtifactType, ArtifactType)
	case m.Config.MediaType != ocispec.MediaTypeEmptyJSON:
		return ocispec.Descriptor{}, fmt.Errorf("%w: the config's media type is %q, want %q", ErrMediaType, m.Config.MediaType, ocispec.MediaTypeEmptyJSON)
	case len(m.Layers) != 1:
		return ocispec.Descriptor{}, fmt.Errorf("%w: %d layers, want exactly one", ErrMediaType, len(m.Layers))
	case m.Layers[0].MediaType != LayerMediaType:
		return ocispec.Descriptor{}, fmt.Errorf("%w: the layer's media type is %q, want %q", ErrMediaType, m.Layers[0].MediaType, LayerMediaType)
	}
	layer := m.Layers[0]
	if err := checkDescriptor(layer); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the layer's %w", ErrMediaType, err)
	}
	return layer, nil
}

// checkDescriptor checks a descriptor's digest (sha256) and size.
func checkDescriptor(d ocispec.Descriptor) error {
	if err := d.Digest.Validate(); err != nil || d.Digest.Algorithm() != digest.SHA256 {
		return fmt.Errorf("digest %q is not a valid sha256 digest", d.Digest)
	}
	if d.Size < 0 {
		return errors.New("size is negative")
	}
	return nil
}

// Pushed describes a published plugin.
type Pushed struct {
	Reference string             // oci://registry/repository@sha256:<manifest digest>
	Manifest  ocispec.Descriptor // the manifest
	Layer     ocispec.Descriptor // the module
}

// Push publishes a module as a Hangar plugin artifact under the tag of
// dst ("oci://registry/repository:tag"), and also stores it in the cache.
// name becomes the layer's title annotation (a file name, such as
// "hello.wasm"). The manifest carries no timestamp, so pushing the same
// module under the same name gives the same digest.
func (r *Resolver) Push(ctx context.Context, wasm []byte, name, dst string) (_ Pushed, err error) {
	ctx, cancel, done := r.withDeadline(ctx)
	defer func() {
		err = done(err)
		cancel()
	}()
	ref, problem := config.ParseOCIReference(dst)
	if problem != "" {
		return Pushed{}, fmt.Errorf("invalid oci reference %q: %s", dst, problem)
	}
	if ref.ValidateReferenceAsTag() != nil {
		return Pushed{}, fmt.Errorf("%s: push to a tag, as in oci://%s/%s:1.0", dst, ref.Registry, ref.Repository)
	}
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return Pushed{}, fmt.Errorf("%s: not a WebAssembly module", name)
	}
	if int64(len(wasm)) > r.maxSize() {
		return Pushed{}, fmt.Errorf("%s: %w: %d bytes", name, ErrTooLarge, len(wasm))
	}
	if r.Offline {
		return Pushed{}, fmt.Errorf("%s: %w", dst, ErrOffline)
	}
	layer := content.NewDescriptorFromBytes(LayerMediaType, wasm)
	if name != "" {
		layer.Annotations = map[string]string{ocispec.AnnotationTitle: filepath.Base(name)}
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return Pushed{}, err
	}
	mdesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	mdesc.ArtifactType = ArtifactType

	repo := r.repository(ref)
	fail := func(err error) (Pushed, error) { return Pushed{}, fmt.Errorf("%s: %w", dst, err) }
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{layer, wasm}, {ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data}} {
		if ok, err := repo.Exists(ctx, b.desc); err != nil {
			return fail(err)
		} else if ok {
			continue
		}
		if err := repo.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return fail(err)
		}
	}
	if err := repo.PushReference(ctx, mdesc, bytes.NewReader(raw), ref.Reference); err != nil {
		return fail(err)
	}
	if r.CacheDir != "" {
		if _, _, err := r.cache().Put(bytes.NewReader(wasm), layer.Digest.Encoded(), 0); err != nil {
			r.log().Warn("pushed, but could not cache the module", "error", err)
		}
	}
	return Pushed{
		Reference: fmt.Sprintf("oci://%s/%s@%s", ref.Registry, ref.Repository, mdesc.Digest),
		Manifest:  mdesc,
		Layer:     layer,
	}, nil
}

// policyID identifies a signature policy for the lock file; a key policy is
// identified by the key file's content, so a replaced key means verifying
// again.
func policyID(v *config.Verify) (string, error) {
	switch {
	case v == nil:
		return "", nil
	case v.Disabled:
		return "disabled", nil
	case v.Key != "":
		h, err := hashFile(v.Key)
		if err != nil {
			return "", err
		}
		return "key sha256:" + h, nil
	case v.TrustedRoot != "":
		// A new trusted root (rotated certificates, say) verifies again.
		h, err := hashFile(v.TrustedRoot)
		if err != nil {
			return "", err
		}
		id := *v
		id.TrustedRoot = ""
		return id.String() + " trusted_root sha256:" + h, nil
	default:
		return v.String(), nil
	}
}
