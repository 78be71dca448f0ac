package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// Header marks a request one replica forwarded to another, with the
// forwarding replica's name. A request that carries it is never forwarded
// again (Forwarder's loop guard).
const Header = "Hangar-Forwarded-By"

// Defaults of Options.
const (
	// DefaultTimeout bounds a whole forwarded exchange, answer
	// included: the peer bounds the call itself (call timeout), so this
	// only ends exchanges with a peer that stopped answering.
	DefaultTimeout = 2 * time.Minute
	// DefaultDialTimeout bounds connecting to the peer: a replica that is
	// gone is reported within it.
	DefaultDialTimeout = 5 * time.Second
)

// The request headers a forwarded request keeps: the credentials, what
// Streamable HTTP defines (MCP's headers and x-mcp-header parameters'
// Mcp-Param-*), content negotiation and trace context. Everything else
// (cookies, proxies' headers, the client's own) stays behind.
var forwardedHeaders = []string{
	"Authorization", "Content-Type", "Accept", "Accept-Encoding", "User-Agent",
	"Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name",
	"Traceparent", "Tracestate", "Baggage",
}

// Options configure a Forwarder.
type Options struct {
	// Self is this replica's name, sent in Header.
	Self string
	// PeerURL is the URL of a replica's MCP endpoint with "{replica}" for
	// its name, such as "http://{replica}:8080/mcp" (with replicas named
	// by their pod IP, as the Kubernetes manifests do).
	PeerURL string
	// Peers maps replica names to their MCP endpoint's URL; it takes
	// precedence over PeerURL.
	Peers map[string]string
	// Timeout bounds a forwarded exchange; zero means DefaultTimeout.
	Timeout time.Duration
	// DialTimeout bounds connecting to the peer; zero means
	// DefaultDialTimeout. Ignored with Transport.
	DialTimeout time.Duration
	// Transport sends the forwarded requests; nil means a transport of the
	// Forwarder's own, without proxies.
	Transport http.RoundTripper
	// Logger receives a record for each peer that could not be reached;
	// nil means slog.Default().
	Logger *slog.Logger
}

// Forwarder sends a retry to the replica that holds its call, and streams
// the answer back. It is the HTTP edge's: a retry's requestState names
// the replica (mrtr.Manager.Locate), and only a state the replicas' shared key
// authenticates does, so that a client cannot make a replica send
// requests anywhere else.
type Forwarder struct {
	self      string
	template  string
	peers     map[string]*url.URL
	timeout   time.Duration
	transport http.RoundTripper
	log       *slog.Logger

	forwarded, gone atomic.Uint64
}

// New returns a Forwarder. It fails when neither PeerURL nor
// Peers is set, or when a URL is not an absolute http or https URL.
func New(o Options) (*Forwarder, error) {
	f := &Forwarder{self: o.Self, template: o.PeerURL, peers: map[string]*url.URL{}, timeout: o.Timeout, log: o.Logger}
	if o.PeerURL == "" && len(o.Peers) == 0 {
		return nil, errors.New("forwarding needs the peers' URLs: a template with {replica} or a map of replica names to URLs")
	}
	if o.PeerURL != "" {
		if !strings.Contains(o.PeerURL, "{replica}") {
			return nil, fmt.Errorf("peer URL template %q has no {replica}", o.PeerURL)
		}
		if _, err := peerURL(strings.ReplaceAll(o.PeerURL, "{replica}", "1")); err != nil {
			return nil, fmt.Errorf("peer URL template %q: %w", o.PeerURL, err)
		}
	}
	for name, raw := range o.Peers {
		u, err := peerURL(raw)
		if err != nil {
			return nil, fmt.Errorf("peer %q: %w", name, err)
		}
		f.peers[name] = u
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.log == nil {
		f.log = slog.Default()
	}
	rt := o.Transport
	if rt == nil {
		dial := o.DialTimeout
		if dial <= 0 {
			dial = DefaultDialTimeout
		}
		rt = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   dial,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     true,
		}
	}
	// A peer's redirect is its answer to the client, not a place for this
	// replica to go: the proxy follows none.
	f.transport = rt
	return f, nil
}

func peerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http or https URL", raw)
	}
	return u, nil
}

// URL returns the MCP endpoint of the replica named replica.
func (f *Forwarder) URL(replica string) (*url.URL, error) {
	if u, ok := f.peers[replica]; ok {
		return u, nil
	}
	if f.template == "" || !mrtr.ReplicaRE.MatchString(replica) {
		return nil, fmt.Errorf("%w: no address for replica %q", mrtr.ErrReplicaGone, replica)
	}
	return peerURL(strings.ReplaceAll(f.template, "{replica}", replica))
}

// Forwarded reports whether r was forwarded by another replica.
func Forwarded(r *http.Request) bool { return r.Header.Get(Header) != "" }

// Forward sends the request r, whose body the edge has read into body, to
// the replica named replica, and copies the answer to w as it comes
// (status, headers and body, flushed as it arrives, so that an SSE stream
// streams), through a net/http/httputil.ReverseProxy: the hop-by-hop
// headers, those the request's Connection header names included, stay
// behind. id is the JSON-RPC id of the request, for the error Forward
// answers itself:
//
//   - when r was itself forwarded (the loop guard: the replica the state
//     names should have been this one, so it no longer exists under that
//     name),
//   - when replica has no address, or the peer cannot be reached or
//     fails before answering.
//
// That error is a JSON-RPC invalid params error (HTTP 400) saying that
// the replica holding the request is gone and the request must start
// again. Forward returns it too, or nil. An answer that breaks off once
// it has started aborts the client's connection (http.ErrAbortHandler),
// which then knows the answer is incomplete.
func (f *Forwarder) Forward(w http.ResponseWriter, r *http.Request, body []byte, replica string, id json.RawMessage) error {
	_, err := f.ForwardRetry(w, r, body, replica, id, "")
	return err
}

// ForwardRetry is Forward for a retry with requestState state, and
// reports whether the replica used the state up: it answered, and not
// with the same state again (a retry refused for a wrong answer gets 400;
// one without the requested answer gets input_required with the same
// state, still good). The edge gives that to mrtr.Manager.BeginForward's
// end.
func (f *Forwarder) ForwardRetry(w http.ResponseWriter, r *http.Request, body []byte, replica string, id json.RawMessage, state string) (used bool, err error) {
	if Forwarded(r) {
		err := fmt.Errorf("%w: the request was forwarded here by replica %q, which does not hold it either", mrtr.ErrReplicaGone, r.Header.Get(Header))
		writeRPCError(w, id, err)
		return false, err
	}
	u, err := f.URL(replica)
	if err != nil {
		f.gone.Add(1)
		writeRPCError(w, id, err)
		return false, err
	}
	var scan *stateScan
	ctx, cancel := context.WithTimeout(r.Context(), f.timeout)
	defer cancel()
	in := r.WithContext(ctx)
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	var failed error
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			to := *u
			pr.Out.Method = http.MethodPost
			pr.Out.URL = &to
			// The peer checks the Host as this replica did (the replicas
			// share their http section): the client's Host passed here,
			// where the peer's own address, which clients never use,
			// would not.
			pr.Out.Host = pr.In.Host
			h := http.Header{}
			for _, k := range forwardedHeaders {
				if v := pr.Out.Header.Values(k); len(v) > 0 {
					h[http.CanonicalHeaderKey(k)] = v
				}
			}
			for k, v := range pr.Out.Header {
				if strings.HasPrefix(k, "Mcp-Param-") {
					h[k] = v
				}
			}
			h.Set(Header, f.selfName())
			pr.Out.Header = h
		},
		Transport:     f.transport,
		FlushInterval: -1, // each write of the peer's answer, as it comes
		ModifyResponse: func(resp *http.Response) error {
			f.forwarded.Add(1)
			if resp.StatusCode == http.StatusOK && state != "" {
				scan = &stateScan{ReadCloser: resp.Body, needle: []byte(state)}
				resp.Body = scan
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if r.Context().Err() != nil {
				failed = r.Context().Err() // the client went away: nobody to answer
				return
			}
			f.gone.Add(1)
			f.log.Warn("MRTR retry not forwarded: the replica holding its call cannot be reached", "replica", replica, "url", u.String(), "error", err)
			failed = fmt.Errorf("%w: replica %q cannot be reached", mrtr.ErrReplicaGone, replica)
			writeRPCError(w, id, failed)
		},
		ErrorLog: slog.NewLogLogger(f.log.Handler(), slog.LevelWarn),
	}
	proxy.ServeHTTP(w, in)
	return scan != nil && !scan.found, failed
}

// stateScan passes an answer through and notes whether it holds needle (a
// requestState), across the reads' boundaries.
type stateScan struct {
	io.ReadCloser
	needle []byte
	tail   []byte // the last len(needle)-1 bytes read
	found  bool
}

func (s *stateScan) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if n > 0 && !s.found {
		buf := append(s.tail, p[:n]...)
		if bytes.Contains(buf, s.needle) {
			s.found = true
		}
		if k := len(s.needle) - 1; len(buf) > k {
			buf = buf[len(buf)-k:]
		}
		s.tail = append(s.tail[:0], buf...)
	}
	return n, err
}

func (f *Forwarder) selfName() string {
	if f.self == "" {
		return "unnamed"
	}
	return f.self
}

// Stats are a Forwarder's counters.
type Stats struct {
	Forwarded uint64 // retries a peer answered
	Gone      uint64 // retries whose replica could not be reached
}

// Stats returns the Forwarder's counters.
func (f *Forwarder) Stats() Stats {
	return Stats{Forwarded: f.forwarded.Load(), Gone: f.gone.Load()}
}

// writeRPCError answers err as a JSON-RPC error response to the request id.
func writeRPCError(w http.ResponseWriter, id json.RawMessage, err error) {
	e := mrtr.RPCError(err)
	if e == nil {
		e = mrtr.RPCError(fmt.Errorf("%w: %v", mrtr.ErrReplicaGone, err))
	}
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}
