package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"oras.land/oras-go/v2"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/verify"
)

// maxTrustedRoot bounds the size of a trusted_root.json (Sigstore's
// public-good one has a few tens of kilobytes).
const maxTrustedRoot = 4 << 20

// sigstoreVerifier checks the signatures of oci:// plugins with package
// verify: key policies with their key file, keyless policies against the
// trusted root their configuration names (verify.trusted_root), which is
// read from disk and never fetched.
type sigstoreVerifier struct {
	log   *slog.Logger
	roots *trustedRoots
}

var _ source.Verifier = (*sigstoreVerifier)(nil)

// Verify implements source.Verifier. Errors are those of verify.Verifier
// (wrapping its sentinels, such as verify.ErrUnsigned or
// verify.ErrSignatureMismatch); a trusted root that cannot be read or
// parsed is verify.ErrNoTrustedRoot.
func (v *sigstoreVerifier) Verify(ctx context.Context, repo oras.ReadOnlyGraphTarget, manifest ocispec.Descriptor, policy config.Verify) error {
	var tm root.TrustedMaterial
	if policy.TrustedRoot != "" && policy.Key == "" && !policy.Disabled {
		var err error
		if tm, err = v.roots.load(policy.TrustedRoot); err != nil {
			return err
		}
	}
	vf := verify.Verifier{TrustedMaterial: tm}
	if err := vf.Verify(ctx, repo, manifest, policy); err != nil {
		return err
	}
	if v.log != nil {
		v.log.Debug("signature verified", "manifest", manifest.Digest, "policy", policy.String())
	}
	return nil
}

// trustedRoots caches parsed trusted roots by path. The file is read on
// every use and parsed again only when its content changed, so a replaced
// trusted_root.json takes effect at the next verification (a reload, a
// pull) without a restart. Safe for concurrent use.
type trustedRoots struct {
	mu    sync.Mutex
	paths map[string]trustedRootEntry
}

type trustedRootEntry struct {
	sum [sha256.Size]byte
	tm  root.TrustedMaterial
}

// defaultTrustedRoots is shared by the verifiers of the process: serve
// verifies each plugin with a verifier of its own.
var defaultTrustedRoots = &trustedRoots{}

// load returns the trusted material of the trusted root file at path.
func (c *trustedRoots) load(path string) (root.TrustedMaterial, error) {
	data, err := readLimited(path, maxTrustedRoot)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", verify.ErrNoTrustedRoot, err)
	}
	sum := sha256.Sum256(data)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.paths[path]; ok && e.sum == sum {
		return e.tm, nil
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: trusted root %s: %w", verify.ErrNoTrustedRoot, path, err)
	}
	if c.paths == nil {
		c.paths = make(map[string]trustedRootEntry)
	}
	c.paths[path] = trustedRootEntry{sum: sum, tm: tr}
	return tr, nil
}

// readLimited reads a file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}
