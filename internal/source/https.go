package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// fetchHTTPS returns the module at an https:// URL: from the cache when
// pin names a cached module, otherwise downloaded and, when pin is set,
// checked against it before it is cached.
func (r *Resolver) fetchHTTPS(ctx context.Context, src, pin string) (Artifact, error) {
	if pin != "" {
		if p, ok := r.cache().Lookup(pin); ok {
			return Artifact{Digest: "sha256:" + pin, Path: p, Source: src}, nil
		}
	}
	if r.Offline {
		return Artifact{}, fmt.Errorf("%s: %w: the module (sha256 %s) is not in the cache %s", src, ErrOffline, orNone(pin), r.CacheDir)
	}
	u, err := url.Parse(src)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return Artifact{}, fmt.Errorf("%q: want an https:// URL", src)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return Artifact{}, err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := r.httpClient().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in our own prefix
		}
		return Artifact{}, fmt.Errorf("%s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Artifact{}, fmt.Errorf("%s: %s", u.Redacted(), resp.Status)
	}
	if resp.ContentLength > r.maxSize() {
		return Artifact{}, fmt.Errorf("%s: %w: %d bytes, more than the limit of %d", u.Redacted(), ErrTooLarge, resp.ContentLength, r.maxSize())
	}
	body, reported := reportProgress(ctx, u.Redacted(), resp.Body, resp.ContentLength)
	h, p, err := r.cache().Put(body, pin, r.maxSize())
	reported()
	if err != nil {
		if errors.Is(err, ErrDigestMismatch) {
			return Artifact{}, fmt.Errorf("%s: %w; refusing to load it (if the file was updated on purpose, update sha256 in the configuration)", u.Redacted(), err)
		}
		return Artifact{}, fmt.Errorf("%s: %w", u.Redacted(), err)
	}
	r.log().Debug("downloaded", "source", u.Redacted(), "sha256", h)
	return Artifact{Digest: "sha256:" + h, Path: p, Source: src}, nil
}

func orNone(s string) string {
	if s == "" {
		return "not pinned"
	}
	return s
}

const userAgent = "hangar"
