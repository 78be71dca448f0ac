package httpcalls

import (
	"io"
	"net/http"
	"slices"
)

// presized bounds the buffer a POST's body is read into before its bytes
// arrive (its announced Content-Length, at most this); a larger body grows
// it as it comes.
const presized = 64 << 10

// A Body is a request's body that ReadBody read: whoever reads the request
// next reads the same bytes from it, then what was left unread (a body
// longer than ReadBody's limit) or the error that stopped ReadBody.
//
// An edge may keep what it made of the body beside it, in a type that
// embeds *Body and replaces r.Body: ReadBody still finds the bytes there.
type Body struct {
	data []byte
	err  error         // what stopped the read, if not its end
	off  int           // what the next reader has read of data
	rest io.Reader     // after data: the body's unread rest, or nil
	orig io.ReadCloser // the body that was read
}

// held lets ReadBody find a Body in a type that embeds one.
func (b *Body) held() *Body { return b }

type holder interface{ held() *Body }

// ReadBody reads r's body, up to one byte past limit, and leaves in r.Body
// a reader that replays it. The body is read once, whichever edge asks
// first (the route of a POST, then the edge that serves it): a later call
// returns what the first read. It returns the bytes read, and the error
// that stopped the read before the end of the body, if any.
func ReadBody(r *http.Request, limit int) ([]byte, error) {
	if h, ok := r.Body.(holder); ok {
		b := h.held()
		return b.data, b.err
	}
	b := &Body{orig: r.Body}
	r.Body = b
	if b.orig == nil || b.orig == http.NoBody {
		b.orig = http.NoBody
		return nil, nil
	}
	// Into a buffer of the announced size and one byte more, in which the
	// read that finds the end lands (io.ReadAll grows one from 512 bytes,
	// copying; bytes.Buffer keeps 512 bytes free for each read). A client
	// may announce a large body and send none of it: it must not make the
	// server hold memory for what never comes (presized).
	var buf []byte
	if n := r.ContentLength; n > 0 {
		buf = make([]byte, 0, min(n, presized, int64(limit))+1)
	}
	for len(buf) <= limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		n, err := b.orig.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			b.err = err
			break
		}
	}
	b.data = buf
	if len(buf) > limit && b.err == nil {
		b.rest = b.orig
	}
	return b.data, b.err
}

// Read replays the body.
func (b *Body) Read(p []byte) (int, error) {
	if b.off < len(b.data) {
		n := copy(p, b.data[b.off:])
		b.off += n
		return n, nil
	}
	switch {
	case b.err != nil:
		return 0, b.err
	case b.rest != nil:
		return b.rest.Read(p)
	}
	return 0, io.EOF
}

// Close closes the body that was read.
func (b *Body) Close() error { return b.orig.Close() }
