package source

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// Container images holding a plugin, as hyper-mcp publishes them
// (ghcr.io/tuananh/<name>-plugin): an image built FROM scratch whose
// file system holds the module at /plugin.wasm. Accepted:
//
//   - an OCI image manifest or a Docker image manifest (schema 2) with an
//     image config (application/vnd.oci.image.config.v1+json or
//     application/vnd.docker.container.image.v1+json) and 1 to
//     maxImageLayers layers, each a tar archive, gzip-compressed or not
//     (application/vnd.oci.image.layer.v1.tar+gzip,
//     application/vnd.oci.image.layer.v1.tar,
//     application/vnd.docker.image.rootfs.diff.tar.gzip);
//   - an OCI image index or Docker manifest list naming exactly one such
//     image (attestation manifests, platform unknown/unknown, are
//     skipped; one image listed for several platforms counts once), or one
//     for the platform wasip1/wasm among several.
//
// /plugin.wasm must be a regular file (not a link) in the last layer that
// has it, and no later layer may delete it (whiteout). The signature and
// the lock cover the manifest the reference names (the index, for an
// index); the sha256 pin and the lock's sha256 are those of plugin.wasm.
const (
	mediaTypeDockerManifest        = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerList            = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeDockerConfig          = "application/vnd.docker.container.image.v1+json"
	mediaTypeDockerLayerGzip       = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	imagePluginPath                = "/plugin.wasm"
	maxImageLayers                 = 16
	maxIndexManifests              = 64
	maxTarEntries                  = 10000
	imageOverhead            int64 = 64 << 20 // layer bytes allowed beyond the module size limit
)

func isImageConfig(mt string) bool {
	return mt == ocispec.MediaTypeImageConfig || mt == mediaTypeDockerConfig
}

// imageLayers checks the layers of an image manifest.
func imageLayers(m ocispec.Manifest) ([]ocispec.Descriptor, error) {
	if len(m.Layers) == 0 || len(m.Layers) > maxImageLayers {
		return nil, fmt.Errorf("%w: a container image with %d layers; want 1 to %d, one of them holding %s", ErrMediaType, len(m.Layers), maxImageLayers, imagePluginPath)
	}
	for i, l := range m.Layers {
		switch l.MediaType {
		case ocispec.MediaTypeImageLayerGzip, ocispec.MediaTypeImageLayer, mediaTypeDockerLayerGzip:
		default:
			return nil, fmt.Errorf("%w: layer %d has media type %q; want a tar archive, plain or gzip-compressed", ErrMediaType, i, l.MediaType)
		}
		if err := checkDescriptor(l); err != nil {
			return nil, fmt.Errorf("%w: layer %d: %w", ErrMediaType, i, err)
		}
	}
	return m.Layers, nil
}

// indexImage picks the image manifest of an index that holds the plugin.
func indexImage(desc ocispec.Descriptor, raw []byte) (ocispec.Descriptor, error) {
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: invalid index: %v", ErrMediaType, err)
	}
	if idx.MediaType != "" && idx.MediaType != desc.MediaType {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the index says its media type is %q, the registry %q", ErrMediaType, idx.MediaType, desc.MediaType)
	}
	if len(idx.Manifests) > maxIndexManifests {
		return ocispec.Descriptor{}, fmt.Errorf("%w: an index of %d manifests", ErrMediaType, len(idx.Manifests))
	}
	var images []ocispec.Descriptor
	for _, m := range idx.Manifests {
		if m.MediaType != ocispec.MediaTypeImageManifest && m.MediaType != mediaTypeDockerManifest {
			continue
		}
		if m.Annotations["vnd.docker.reference.type"] == "attestation-manifest" ||
			m.Platform != nil && m.Platform.OS == "unknown" {
			continue
		}
		if m.Platform != nil && m.Platform.OS == "wasip1" && m.Platform.Architecture == "wasm" {
			images = []ocispec.Descriptor{m}
			break
		}
		if !slices.ContainsFunc(images, func(d ocispec.Descriptor) bool { return d.Digest == m.Digest }) {
			images = append(images, m) // one image listed for several platforms counts once
		}
	}
	switch {
	case len(images) == 0:
		return ocispec.Descriptor{}, fmt.Errorf("%w: index %s names no image manifest", ErrMediaType, desc.Digest)
	case len(images) > 1:
		return ocispec.Descriptor{}, fmt.Errorf("%w: index %s names %d images (platforms) and none for wasip1/wasm; Hangar cannot tell which holds the plugin", ErrMediaType, desc.Digest, len(images))
	}
	if err := checkDescriptor(images[0]); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: index %s: %w", ErrMediaType, desc.Digest, err)
	}
	if images[0].Size > maxManifestSize {
		return ocispec.Descriptor{}, fmt.Errorf("%w: index %s names a manifest of %d bytes", ErrTooLarge, desc.Digest, images[0].Size)
	}
	return images[0], nil
}

// extractImage fetches the layers of an image, each checked against its
// digest before it is read, and stores its /plugin.wasm in the cache,
// returning the module's SHA-256 (hex) and cache path.
func (r *Resolver) extractImage(ctx context.Context, repo *remote.Repository, layers []ocispec.Descriptor) (string, string, error) {
	var h, p string // the module found so far
	for i, l := range layers {
		if l.Size > r.maxSize()+imageOverhead {
			return "", "", fmt.Errorf("%w: layer %d has %d bytes, more than the limit of %d", ErrTooLarge, i, l.Size, r.maxSize()+imageOverhead)
		}
		tmp, err := r.fetchLayer(ctx, repo, l)
		if err != nil {
			return "", "", fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		found, deleted, lh, lp, err := r.scanLayer(tmp, l)
		tmp.Close()
		os.Remove(tmp.Name())
		if err != nil {
			return "", "", fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		switch {
		case found:
			h, p = lh, lp
		case deleted:
			h, p = "", ""
		}
	}
	if h == "" {
		return "", "", fmt.Errorf("%w: the image has no %s", ErrMediaType, imagePluginPath)
	}
	return h, p, nil
}

// fetchLayer downloads a layer into a temporary file of the cache,
// checking its size and digest, and returns it rewound.
func (r *Resolver) fetchLayer(ctx context.Context, repo *remote.Repository, l ocispec.Descriptor) (*os.File, error) {
	rc, err := repo.Blobs().Fetch(ctx, l)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tmp, err := r.cache().temp()
	if err != nil {
		return nil, err
	}
	vr := content.NewVerifyReader(rc, l)
	body, reported := reportProgress(ctx, "layer "+l.Digest.String(), vr, l.Size)
	if _, err = io.Copy(tmp, body); err == nil {
		err = vr.Verify()
	}
	reported()
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %w; the registry served content that does not match the manifest, refusing it", ErrDigestMismatch, err)
		}
		return nil, err
	}
	return tmp, nil
}

// scanLayer reads a verified layer (a tar archive, gzip-compressed when it
// starts like one) and stores its /plugin.wasm, if any, in the cache.
// deleted reports a whiteout of /plugin.wasm (or of the whole root), which
// removes one from a lower layer. The uncompressed stream is bounded, so
// a compression bomb costs at most the module size limit plus overhead.
func (r *Resolver) scanLayer(f *os.File, l ocispec.Descriptor) (found, deleted bool, h, p string, err error) {
	br := bufio.NewReader(f)
	var src io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return false, false, "", "", fmt.Errorf("%w: gzip: %v", ErrMediaType, err)
		}
		defer zr.Close()
		src = zr
	} else if l.MediaType != ocispec.MediaTypeImageLayer {
		return false, false, "", "", fmt.Errorf("%w: media type %q, but the layer is not gzip-compressed", ErrMediaType, l.MediaType)
	}
	limit := r.maxSize() + imageOverhead
	lr := &io.LimitedReader{R: src, N: limit + 1}
	tr := tar.NewReader(lr)
	tooBig := func() error {
		return fmt.Errorf("%w: the layer unpacks to more than %d bytes", ErrTooLarge, limit)
	}
	for n := 0; ; n++ {
		if n == maxTarEntries {
			return false, false, "", "", fmt.Errorf("%w: more than %d entries in the layer", ErrTooLarge, maxTarEntries)
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if lr.N <= 0 {
				return false, false, "", "", tooBig()
			}
			return false, false, "", "", fmt.Errorf("%w: tar: %v", ErrMediaType, err)
		}
		name := path.Clean("/" + strings.ReplaceAll(hdr.Name, "\\", "/"))
		switch name {
		case "/.wh.plugin.wasm", "/.wh..wh..opq":
			if !found {
				deleted = true
			}
			continue
		case imagePluginPath:
		default:
			continue
		}
		if hdr.Typeflag != tar.TypeReg {
			return false, false, "", "", fmt.Errorf("%w: %s in the image is not a regular file (tar type %q)", ErrMediaType, imagePluginPath, hdr.Typeflag)
		}
		if hdr.Size > r.maxSize() {
			return false, false, "", "", fmt.Errorf("%w: %s has %d bytes, more than the limit of %d", ErrTooLarge, imagePluginPath, hdr.Size, r.maxSize())
		}
		mh, mp, err := r.cache().Put(tr, "", r.maxSize())
		if err != nil {
			if lr.N <= 0 {
				return false, false, "", "", tooBig()
			}
			return false, false, "", "", fmt.Errorf("%s: %w", imagePluginPath, err)
		}
		found, deleted, h, p = true, false, mh, mp
	}
	if lr.N <= 0 {
		return false, false, "", "", tooBig()
	}
	return found, deleted, h, p, nil
}
