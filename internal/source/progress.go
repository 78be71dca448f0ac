package source

import (
	"context"
	"io"
)

// Progress reports how far a download has come.
type Progress struct {
	// Source is what is being downloaded: an https:// URL (redacted) or an
	// oci:// reference.
	Source string
	// Done is the number of bytes received so far.
	Done int64
	// Total is the number of bytes expected, or -1 when unknown.
	Total int64
	// Finished is set on the last report of a download, whether it ended
	// with all the bytes or not.
	Finished bool
}

type progressKey struct{}

// WithProgress returns a context whose downloads (by Resolve and Fetch)
// report to f as they go: once when a download starts, after each read,
// and once when it finishes. f is called from the downloading goroutine
// and should return quickly; it is not called for modules found in the
// cache.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// reportProgress returns r, counting what is read from it for the progress
// function of ctx, if there is one; done ends the report.
func reportProgress(ctx context.Context, src string, r io.Reader, total int64) (_ io.Reader, done func()) {
	f, _ := ctx.Value(progressKey{}).(func(Progress))
	if f == nil {
		return r, func() {}
	}
	if total <= 0 {
		total = -1
	}
	pr := &progressReader{r: r, f: f, p: Progress{Source: src, Total: total}}
	f(pr.p)
	return pr, func() {
		pr.p.Finished = true
		f(pr.p)
	}
}

type progressReader struct {
	r io.Reader
	f func(Progress)
	p Progress
}

func (pr *progressReader) Read(b []byte) (int, error) {
	n, err := pr.r.Read(b)
	if n > 0 {
		pr.p.Done += int64(n)
		pr.f(pr.p)
	}
	return n, err
}
