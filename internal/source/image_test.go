package source_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/source/registrytest"
)

// tarEntry is a file in a test image layer.
type tarEntry struct {
	name     string
	typ      byte // tar.TypeReg when 0
	body     []byte
	linkname string
	size     int64 // for a sparse body of zeros: the size, with body nil
}

// layer builds a tar layer, gzip-compressed when gz.
func layer(t *testing.T, gz bool, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	} = nopCloser{&buf}
	if gz {
		w = gzip.NewWriter(&buf)
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Linkname: e.linkname, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if e.body == nil && e.size > 0 {
			h.Size = e.size
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if e.body != nil {
			tw.Write(e.body)
		} else {
			zeros := make([]byte, 1<<20)
			for n := e.size; n > 0; n -= int64(len(zeros)) {
				tw.Write(zeros[:min(n, int64(len(zeros)))])
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

const (
	dockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	dockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	dockerConfig   = "application/vnd.docker.container.image.v1+json"
	dockerLayer    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
)

// pushImage pushes a container image (as docker build makes from a
// Dockerfile FROM scratch) under repo:tag and returns its manifest.
func pushImage(t *testing.T, reg *registrytest.Registry, repo, tag string, docker bool, layers ...[]byte) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	r := remoteRepo(t, reg, repo)
	manifestType, configType, layerType := ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageConfig, ocispec.MediaTypeImageLayerGzip
	if docker {
		manifestType, configType, layerType = dockerManifest, dockerConfig, dockerLayer
	}
	var diffIDs []digest.Digest
	var descs []ocispec.Descriptor
	for _, l := range layers {
		mt := layerType
		if !bytes.HasPrefix(l, []byte{0x1f, 0x8b}) {
			mt = ocispec.MediaTypeImageLayer
		}
		d := content.NewDescriptorFromBytes(mt, l)
		if err := r.Push(ctx, d, bytes.NewReader(l)); err != nil {
			t.Fatal(err)
		}
		descs = append(descs, d)
		diffIDs = append(diffIDs, d.Digest) // not the uncompressed digest; Hangar does not read the config
	}
	cfg, _ := json.Marshal(ocispec.Image{
		Platform: ocispec.Platform{Architecture: "amd64", OS: "linux"},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
		Config:   ocispec.ImageConfig{Entrypoint: []string{"/plugin.wasm"}},
	})
	cd := content.NewDescriptorFromBytes(configType, cfg)
	if err := r.Push(ctx, cd, bytes.NewReader(cfg)); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: manifestType, Config: cd, Layers: descs})
	md := content.NewDescriptorFromBytes(manifestType, raw)
	if err := r.PushReference(ctx, md, bytes.NewReader(raw), tag); err != nil {
		t.Fatal(err)
	}
	return md
}

// pushIndex pushes an index of images under repo:tag, with an attestation
// manifest as docker buildx adds.
func pushIndex(t *testing.T, reg *registrytest.Registry, repo, tag, mediaType string, images ...ocispec.Descriptor) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	r := remoteRepo(t, reg, repo)
	var ms []ocispec.Descriptor
	for _, d := range images {
		d.Platform = &ocispec.Platform{Architecture: "amd64", OS: "linux"}
		ms = append(ms, d, ocispec.Descriptor{ // an attestation, pointing at the image itself for brevity
			MediaType: d.MediaType, Digest: d.Digest, Size: d.Size,
			Platform:    &ocispec.Platform{Architecture: "unknown", OS: "unknown"},
			Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": d.Digest.String()},
		})
	}
	raw, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: mediaType, Manifests: ms})
	d := content.NewDescriptorFromBytes(mediaType, raw)
	if err := r.PushReference(ctx, d, bytes.NewReader(raw), tag); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestImageLayout resolves plugins published as hyper-mcp publishes them:
// a container image FROM scratch holding /plugin.wasm, signed, pulled with
// the same signature check, pin and lock as Hangar's own artifacts.
func TestImageLayout(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	key := newSigner(t)
	wasm := module("hyper-mcp")
	plugin := tarEntry{name: "plugin.wasm", body: wasm}

	// An OCI image, signed.
	img := pushImage(t, reg, "tuananh/time-plugin", "latest", false, layer(t, true, tarEntry{name: "etc/", typ: tar.TypeDir}, plugin))
	key.sign(t, reg, "tuananh/time-plugin", "latest")
	lockPath := filepath.Join(t.TempDir(), "hangar.lock")
	cache := t.TempDir()
	spec := ociPlugin("time", reg.Ref("tuananh/time-plugin:latest"), key.policy)
	lock, _ := source.LoadLock(lockPath)
	a, err := verifying(t, cache, lock).Resolve(ctx, spec)
	if err != nil || !bytes.Equal(readArtifact(t, a), wasm) || a.Manifest != img.Digest.String() || a.SHA256() != sum(wasm) {
		t.Fatalf("signed image: %+v, %v", a, err)
	}
	if e, _ := lock.Get("time"); e.SHA256 != sum(wasm) || e.Manifest != img.Digest.String() || !strings.HasPrefix(e.Verify, "key sha256:") {
		t.Errorf("lock entry %+v", e)
	}
	lock.Save()
	// Locked: from the cache, with no registry.
	lock, _ = source.LoadLock(lockPath)
	r := verifying(t, cache, lock)
	r.Offline = true
	if a, err := r.Resolve(ctx, spec); err != nil || !a.Locked || !bytes.Equal(readArtifact(t, a), wasm) {
		t.Errorf("locked, offline: %+v, %v", a, err)
	}
	// The pin is the module's (plugin.wasm's) sha256.
	spec.SHA256 = sum(wasm)
	if _, err := verifying(t, t.TempDir(), nil).Resolve(ctx, spec); err != nil {
		t.Errorf("pinned: %v", err)
	}
	spec.SHA256 = sum([]byte("other"))
	if _, err := verifying(t, t.TempDir(), nil).Resolve(ctx, spec); !errors.Is(err, source.ErrDigestMismatch) {
		t.Errorf("wrong pin: %v", err)
	}

	// Fetch (hangar pull REF) unpacks it too, reporting plugin.wasm's digest.
	f, _ := newResolver(t)
	if a, err := f.Fetch(ctx, reg.Ref("tuananh/time-plugin:latest"), ""); err != nil || a.SHA256() != sum(wasm) || a.Manifest != img.Digest.String() {
		t.Errorf("Fetch: %+v, %v", a, err)
	}

	// Unsigned: refused under a key policy.
	pushImage(t, reg, "tuananh/unsigned-plugin", "1", false, layer(t, true, plugin))
	if _, err := verifying(t, t.TempDir(), nil).Resolve(ctx, ociPlugin("u", reg.Ref("tuananh/unsigned-plugin:1"), key.policy)); !errors.Is(err, source.ErrUnsigned) {
		t.Errorf("unsigned image: %v", err)
	}

	// A Docker image in a manifest list with an attestation, as buildx
	// pushes; the signature covers the list.
	dimg := pushImage(t, reg, "tuananh/qr-plugin", "img", true, layer(t, true, tarEntry{name: "./plugin.wasm", body: wasm}))
	list := pushIndex(t, reg, "tuananh/qr-plugin", "1.0", dockerList, dimg)
	key.sign(t, reg, "tuananh/qr-plugin", "1.0")
	if a, err := verifying(t, t.TempDir(), nil).Resolve(ctx, ociPlugin("qr", reg.Ref("tuananh/qr-plugin:1.0"), key.policy)); err != nil ||
		a.Manifest != list.Digest.String() || !bytes.Equal(readArtifact(t, a), wasm) {
		t.Errorf("docker manifest list: %+v, %v", a, err)
	}
	oimg := pushImage(t, reg, "tuananh/oci-index", "img", false, layer(t, false, plugin))
	pushIndex(t, reg, "tuananh/oci-index", "1", ocispec.MediaTypeImageIndex, oimg)
	if a, err := verifying(t, t.TempDir(), nil).Resolve(ctx, ociPlugin("oi", reg.Ref("tuananh/oci-index:1"), unverified)); err != nil || !bytes.Equal(readArtifact(t, a), wasm) {
		t.Errorf("OCI index, uncompressed layer: %+v, %v", a, err)
	}
	// One image listed for two platforms (as hyper-mcp's plugin releases
	// do with buildx imagetools) is one image.
	same := pushImage(t, reg, "tuananh/same", "img", false, layer(t, true, plugin))
	pushIndex(t, reg, "tuananh/same", "1", ocispec.MediaTypeImageIndex, same, same)
	if a, err := verifying(t, t.TempDir(), nil).Resolve(ctx, ociPlugin("same", reg.Ref("tuananh/same:1"), unverified)); err != nil || !bytes.Equal(readArtifact(t, a), wasm) {
		t.Errorf("one image for two platforms: %+v, %v", a, err)
	}
	two := pushImage(t, reg, "tuananh/two-arch", "img", false, layer(t, true, plugin))
	other := pushImage(t, reg, "tuananh/two-arch", "img2", false, layer(t, true, tarEntry{name: "plugin.wasm", body: module("arm")}))
	pushIndex(t, reg, "tuananh/two-arch", "1", ocispec.MediaTypeImageIndex, two, other)
	if _, err := verifying(t, t.TempDir(), nil).Resolve(ctx, ociPlugin("ta", reg.Ref("tuananh/two-arch:1"), unverified)); !errors.Is(err, source.ErrMediaType) || !strings.Contains(err.Error(), "cannot tell which") {
		t.Errorf("two platforms: %v", err)
	}
}

// TestImageLayoutHostile: images whose layers lie or overflow are refused
// with a clear error, within the size limits.
func TestImageLayoutHostile(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	wasm := module("hostile")
	const max = 1 << 20
	for _, tc := range []struct {
		name   string
		layers [][]byte
		want   error
		text   string
	}{
		{"no plugin.wasm", [][]byte{layer(t, true, tarEntry{name: "bin/plugin.wasm", body: wasm})}, source.ErrMediaType, "the image has no /plugin.wasm"},
		{"symlink", [][]byte{layer(t, true, tarEntry{name: "plugin.wasm", typ: tar.TypeSymlink, linkname: "/etc/passwd"})}, source.ErrMediaType, "not a regular file"},
		{"hard link", [][]byte{layer(t, true, tarEntry{name: "x", body: wasm}, tarEntry{name: "plugin.wasm", typ: tar.TypeLink, linkname: "x"})}, source.ErrMediaType, "not a regular file"},
		{"too large", [][]byte{layer(t, true, tarEntry{name: "plugin.wasm", size: max + 1})}, source.ErrTooLarge, "/plugin.wasm has 1048577 bytes"},
		{"gzip bomb", [][]byte{layer(t, true, tarEntry{name: "zeros", size: 80 << 20}, tarEntry{name: "plugin.wasm", body: wasm})}, source.ErrTooLarge, "unpacks to more than"},
		{"whited out", [][]byte{layer(t, true, tarEntry{name: "plugin.wasm", body: wasm}), layer(t, true, tarEntry{name: ".wh.plugin.wasm"})}, source.ErrMediaType, "the image has no /plugin.wasm"},
		{"not a tar", [][]byte{gzipped([]byte("not a tar archive at all, but long enough to be read as a header block...."))}, source.ErrMediaType, "tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := "hostile/" + strings.ReplaceAll(tc.name, " ", "-")
			pushImage(t, reg, repo, "1", false, tc.layers...)
			r := verifying(t, t.TempDir(), nil)
			r.MaxSize = max
			_, err := r.Resolve(ctx, ociPlugin("h", reg.Ref(repo+":1"), unverified))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%v; want %v and %q", err, tc.want, tc.text)
			}
			if entries, _ := filepath.Glob(filepath.Join(r.CacheDir, "blobs", "sha256", ".tmp-*")); len(entries) != 0 {
				t.Errorf("temporary files left: %v", entries)
			}
		})
	}
	// A later layer replaces plugin.wasm; the last one wins.
	newer := module("newer")
	pushImage(t, reg, "hostile/replaced", "1", false,
		layer(t, true, tarEntry{name: "plugin.wasm", body: wasm}),
		layer(t, true, tarEntry{name: "/plugin.wasm", body: newer}))
	if a, err := verifying(t, t.TempDir(), nil).Resolve(ctx, ociPlugin("h", reg.Ref("hostile/replaced:1"), unverified)); err != nil || !bytes.Equal(readArtifact(t, a), newer) {
		t.Errorf("replaced in a later layer: %+v, %v", a, err)
	}
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}
