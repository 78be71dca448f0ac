package mrtr

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/workers"
)

// Defaults of Options.
const (
	// DefaultParkTimeout is how long a call waits for the retry that
	// brings its input before it is cancelled: as long as the host
	// timeout, the bound of the same wait for sessions.
	DefaultParkTimeout = 10 * time.Minute
	// DefaultMaxParked bounds the calls waiting for input on one server:
	// as many as the HTTP sessions (http.max_sessions) it holds by
	// default, which held the same waits before 2026-07-28.
	DefaultMaxParked = 1000
	// DefaultMaxParkedPerPrincipal bounds one principal's calls waiting
	// for input: a person answers one question at a time and an agent runs
	// a few tools at once, while one principal must not be able to hold
	// every instance of a plugin (a stateless plugin has one per core).
	DefaultMaxParkedPerPrincipal = 8
)

// ReplicaRE is the syntax of a replica name (as `hangar serve --replica`
// takes it): one DNS label or IPv4 address, which makes it safe to put in
// a URL (see Forwarder).
var ReplicaRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Options configure a Manager.
type Options struct {
	// Replica is the name of this replica, written into every state it
	// issues so that another replica can send the retry here. Empty for a
	// server that runs alone.
	Replica string
	// Key seals and opens states: KeySize bytes, the same on every
	// replica. Nil means a random key for this process: its states are
	// then good on this process only (a retry reaching another replica
	// gets ErrStateInvalid).
	Key []byte
	// PreviousKeys open states too (they never seal): for rotating Key
	// without failing the retries in flight.
	PreviousKeys [][]byte
	// ParkTimeout is how long an issued state stays good: the call waiting
	// for its retry is cancelled after it. Zero means DefaultParkTimeout.
	ParkTimeout time.Duration
	// MaxParked and MaxParkedPerPrincipal cap the calls that wait for
	// input: a call that asks for input beyond a cap fails its request with
	// ErrTooManyParked. A call counts from its first request for input
	// until it ends or its plugin stops waiting for the answer. The per-principal cap does not apply to requests
	// without a principal (no authentication), which only the global cap
	// bounds. At the global cap, a call of a client (a principal, or the
	// address of an anonymous request: Request.Client) that holds fewer
	// calls than another ends the oldest of that client's calls parked for
	// EvictGrace (ErrEvicted) instead of being refused. Zero means the
	// default; a negative value is an error.
	MaxParked             int
	MaxParkedPerPrincipal int
	// Now is the clock states' expiry is written and checked with; nil
	// means time.Now. (The park timeout itself runs on real time.)
	Now func() time.Time
}

// Manager runs the calls of requests that may need input from the client
// (tools/call, prompts/get and resources/read at 2026-07-28), issues and
// checks their requestStates, and keeps the calls that wait for a retry.
// It is safe for concurrent use.
type Manager struct {
	replica         string
	sealer          *sealer
	parkTimeout     time.Duration
	maxParked       int
	maxPerPrincipal int
	now             func() time.Time

	mu         sync.Mutex
	calls      map[string]*Call   // the calls that asked for input and are not forgotten, by id
	counted    int                // of those, the calls counted against the caps
	byClient   map[string][]*Call // the calls counted against the caps, by client (Call.client), oldest first
	consumed   map[string]int64   // accepted single-use ids -> their state's expiry (Unix ms)
	forwarding map[string]bool    // single-use ids of states whose retry is on its way to their replica (BeginForward)
	sweepAt    int                // size of consumed at which expired ids are dropped
	closed     bool

	workers *workers.Pool // run the calls
	stats   counters
}

type counters struct {
	parked                                      atomic.Int64
	parkedTotal, resumed, expired               atomic.Uint64
	capRefusals, capabilityRefusals, dropped    atomic.Uint64
	evicted, inFlight                           atomic.Uint64
	queueFull                                   atomic.Uint64
	invalid, stale, replayed, principal, misfit atomic.Uint64
}

// New returns a Manager.
func New(o Options) (*Manager, error) {
	if o.Replica != "" && !ReplicaRE.MatchString(o.Replica) {
		return nil, fmt.Errorf("invalid replica name %q: use 1 to 63 letters, digits, \".\", \"_\" and \"-\", starting with a letter or digit", o.Replica)
	}
	s, err := newSealer(o.Key, o.PreviousKeys)
	if err != nil {
		return nil, err
	}
	if o.ParkTimeout < 0 || o.MaxParked < 0 || o.MaxParkedPerPrincipal < 0 {
		return nil, fmt.Errorf("park timeout and caps must not be negative")
	}
	m := &Manager{
		replica:         o.Replica,
		sealer:          s,
		parkTimeout:     o.ParkTimeout,
		maxParked:       o.MaxParked,
		maxPerPrincipal: o.MaxParkedPerPrincipal,
		now:             o.Now,
		calls:           map[string]*Call{},
		byClient:        map[string][]*Call{},
		consumed:        map[string]int64{},
		forwarding:      map[string]bool{},
		sweepAt:         64,
		workers:         workers.New(),
	}
	if m.parkTimeout == 0 {
		m.parkTimeout = DefaultParkTimeout
	}
	if m.maxParked == 0 {
		m.maxParked = DefaultMaxParked
	}
	if m.maxPerPrincipal == 0 {
		m.maxPerPrincipal = DefaultMaxParkedPerPrincipal
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m, nil
}

// Replica returns the name of this replica.
func (m *Manager) Replica() string { return m.replica }

// Close cancels every call waiting for input (with cause ErrClosed) and
// refuses new ones. Calls still running for their first request are
// their requests' to end.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	calls := make([]*Call, 0, len(m.calls))
	for _, c := range m.calls {
		calls = append(calls, c)
	}
	m.mu.Unlock()
	for _, c := range calls {
		c.mu.Lock()
		c.endLocked(Cancelled, nil, ErrClosed)
		c.use = ""
		c.releaseLocked()
		c.mu.Unlock()
	}
}

// Drain ends at once every call parked waiting for its client's retry
// (cause ErrClosed: the plugin's host import fails and its instance goes
// back), and refuses from now on every call that would park and every new
// request, with ErrClosed: the server is stopping, and a call waiting for
// a client that may never come back must not hold the drain for its
// timeout. A call running on after its retry was accepted is left to
// finish, as any call in progress. The retry of a call ended here learns
// that it is gone (ErrCallGone) and to start its request again. Drain
// reports how many parked calls it ended.
func (m *Manager) Drain() int {
	m.mu.Lock()
	m.closed = true
	calls := make([]*Call, 0, len(m.calls))
	for _, c := range m.calls {
		calls = append(calls, c)
	}
	m.mu.Unlock()
	n := 0
	for _, c := range calls {
		c.mu.Lock()
		if c.status == InputRequired {
			c.endLocked(Cancelled, nil, ErrClosed)
			c.use = ""
			c.releaseLocked()
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// isClosed reports whether the Manager is closed or draining: no call
// may park any more.
func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Request is what the Manager needs of a client request.
type Request struct {
	// Method is "tools/call", "prompts/get" or "resources/read".
	Method string
	// Params are the request's params as the client sent them, with _meta,
	// requestState and inputResponses: the raw JSON on the fast path, or
	// the go-sdk's params struct encoded with encoding/json. Serve reads
	// requestState, inputResponses and _meta.progressToken from them, and
	// binds states to the rest (see ParamsDigest).
	Params json.RawMessage
	// Principal is the authenticated subject (the token's), or "" when
	// the request is not authenticated.
	Principal string
	// Client is the address an unauthenticated request came from (the
	// connection's), which tells its client from others for the fairness
	// of the cap on parked calls; "" for none known (stdio: one client).
	// Empty, Serve takes the one WithClient put in its context.
	Client string
	// Capabilities are the client capabilities of the request's _meta
	// (nil: none declared). See DecodeCapabilities.
	Capabilities *mcp.ClientCapabilities
	// Sink receives the call's log and progress notifications while this
	// request waits for it; nil drops them.
	Sink Sink
	// Direct reports that the call cannot ask the client for input: its
	// plugin imports no host function that does (plugin.AsksClient).
	// Serve then runs it on the caller's goroutine, with ctx, as a plain
	// call: it never parks, never counts against the caps and never
	// enters the table (direct.go). A request with requestState is a
	// retry whatever Direct says.
	Direct bool
	// Bare reports that the edge read Params and found in them none of
	// the members Serve reads: no requestState, no inputResponses and no
	// _meta.progressToken (each absent or null). Serve then does not scan
	// Params for them again, which cost a 2026-07-28 tools/call half a
	// microsecond. False, Serve reads Params itself.
	Bare bool
}

// Run runs the plugin call of a request with host as its plugin.Host
// (plugin.Call.Host) and returns its result. ctx is the call's own
// context, not the request's: the call may outlive the request that
// started it.
type Run func(ctx context.Context, host plugin.Host) (any, error)

// Outcome is how to answer a request that Serve handled: with Result, the
// Run's result, when the call completed; with Input when it waits for the
// client.
type Outcome struct {
	Result any
	Input  *InputRequiredResult
}

// InputRequiredResult is MCP's InputRequiredResult. The edge adds its
// _meta (serverInfo) and encodes it as the request's result.
type InputRequiredResult struct {
	Meta          map[string]any             `json:"_meta,omitempty"`
	ResultType    string                     `json:"resultType"` // "input_required"
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	RequestState  string                     `json:"requestState,omitempty"`
}

// params are the members of a request's params that Serve reads.
type params struct {
	state     string
	responses map[string]json.RawMessage // nil: none sent
	token     any
}

// noParams is what parseParams returns for params without any of the
// members it reads, most calls': shared, so never written (params are
// only read once parsed).
var noParams = &params{}

func parseParams(raw json.RawMessage) (*params, error) {
	r := bytes.TrimSpace(raw)
	if len(r) == 0 || string(r) == "null" {
		return noParams, nil
	}
	if r[0] != '{' {
		return nil, fmt.Errorf("%w: params must be a JSON object", ErrInvalidParams)
	}
	// Most calls carry none of the members read here: then the (valid,
	// the edge decoded it) JSON need not be decoded again. A key written
	// with escapes could hide one, so a backslash anywhere means decoding.
	if bytes.IndexByte(r, '\\') < 0 && !bytes.Contains(r, []byte(`"requestState"`)) &&
		!bytes.Contains(r, []byte(`"inputResponses"`)) && !bytes.Contains(r, []byte(`"progressToken"`)) {
		return noParams, nil
	}
	// Members by their exact names, the last of a name given twice, as
	// the go-sdk reads params and the edges read them (a struct of
	// encoding/json would take "RequestState" for "requestState").
	var members map[string]json.RawMessage
	if err := json.Unmarshal(r, &members); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	p := &params{}
	if m := bytes.TrimSpace(members["_meta"]); len(m) > 0 && string(m) != "null" {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("%w: _meta: %v", ErrInvalidParams, err)
		}
		if t, ok := meta["progressToken"]; ok {
			if err := json.Unmarshal(t, &p.token); err != nil {
				return nil, fmt.Errorf("%w: _meta.progressToken: %v", ErrInvalidParams, err)
			}
		}
	}
	if s := bytes.TrimSpace(members["requestState"]); len(s) > 0 && string(s) != "null" {
		if err := json.Unmarshal(s, &p.state); err != nil {
			return nil, fmt.Errorf("%w: requestState must be a string", ErrInvalidParams)
		}
	}
	if r := bytes.TrimSpace(members["inputResponses"]); len(r) > 0 && string(r) != "null" {
		if r[0] != '{' || json.Unmarshal(r, &p.responses) != nil {
			return nil, fmt.Errorf("%w: inputResponses must be an object of answers by inputRequests key", ErrInvalidParams)
		}
		if p.responses == nil {
			p.responses = map[string]json.RawMessage{}
		}
	}
	return p, nil
}

// RequestState returns the requestState of a request's params, "" if
// there is none: what the HTTP edge looks at to route a retry (Locate).
func RequestState(raw json.RawMessage) (string, error) {
	p, err := parseParams(raw)
	if err != nil {
		return "", err
	}
	return p.state, nil
}

// Serve answers a request that may need input from the client.
//
// A request without requestState starts a call: run runs on a goroutine
// of its own with the call's Host, and Serve waits, with ctx, for the
// call's first event. If the call completes or fails, Serve returns its
// result or error (and the call is forgotten). If the plugin asks the
// client for something, the call is parked and Serve returns an Outcome
// with Input: the input requests and a requestState for the retry.
//
// A request with requestState is a retry: Serve checks the state (see
// the ErrState errors: on any of them nothing runs) and the answers in
// inputResponses, delivers the answers to the parked call, and waits for
// its next event as above; run is not used. An answer of the wrong shape
// is a *ResponseError and leaves the call parked, its state still good; a
// missing answer gets the same input requests again with the same state.
//
// If ctx ends while the call is running, the call is cancelled: nobody
// would get its result.
//
// Errors of this package map to JSON-RPC errors with RPCError; an error
// for which it returns nil is the Run's (or ctx's).
func (m *Manager) Serve(ctx context.Context, req Request, run Run) (*Outcome, error) {
	switch req.Method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return nil, fmt.Errorf("%w: %s", ErrMethod, req.Method)
	}
	p := noParams
	if !req.Bare {
		var err error
		if p, err = parseParams(req.Params); err != nil {
			return nil, err
		}
	}
	if p.state == "" {
		if p.responses != nil {
			return nil, ErrResponsesWithoutState
		}
		return m.start(ctx, req, p, run)
	}
	return m.resume(ctx, req, p)
}

// Locate authenticates a requestState and returns the name of the replica
// that holds its call (Replica() for this one). The HTTP edge calls it
// before serving a retry, to forward the retry to that replica.
func (m *Manager) Locate(requestState string) (string, error) {
	st, err := m.open(requestState)
	if err != nil {
		return "", err
	}
	return st.Replica, nil
}

// BeginForward is called before a retry is forwarded to the replica its
// requestState names: it refuses a state already used by a retry
// forwarded from here (ErrStateReplayed) and one whose retry is being
// forwarded now (ErrRetryInFlight), so that racing or repeated retries of
// one state open one connection to that replica, not one each. end
// records the forward's outcome: used, the replica accepted the state,
// which is then refused here until it expires.
func (m *Manager) BeginForward(requestState string) (end func(used bool), err error) {
	st, err := m.open(requestState)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, used := m.consumed[st.Use]; used {
		m.stats.replayed.Add(1)
		return nil, ErrStateReplayed
	}
	if m.forwarding[st.Use] {
		m.stats.inFlight.Add(1)
		return nil, ErrRetryInFlight
	}
	m.forwarding[st.Use] = true
	return func(used bool) {
		m.mu.Lock()
		delete(m.forwarding, st.Use)
		m.mu.Unlock()
		if used {
			m.consume(st.Use, st.Expiry)
		}
	}, nil
}

func (m *Manager) open(text string) (*state, error) {
	st, err := m.sealer.openState(text, m.now())
	switch {
	case err == nil:
	case errors.Is(err, ErrStateExpired):
		m.stats.stale.Add(1)
	default:
		m.stats.invalid.Add(1)
	}
	return st, err
}

func (m *Manager) start(ctx context.Context, req Request, p *params, run Run) (*Outcome, error) {
	if run == nil {
		return nil, errors.New("mrtr: Serve of a request without requestState needs a Run")
	}
	if req.Direct {
		return m.direct(ctx, req, run)
	}
	c, a, err := m.launch(ctx, req, p, run)
	if err != nil {
		return nil, err
	}
	return m.serve(ctx, c, a)
}

// launch makes the call of a request without requestState, attached to
// that request, and runs it on a goroutine of its own (a worker, whose
// stack a call before has grown: package workers), with a context of its
// own: what Serve and Begin share.
func (m *Manager) launch(ctx context.Context, req Request, p *params, run Run) (*Call, *attachment, error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	c := &Call{
		m:         m,
		principal: req.Principal,
		client:    clientKey(ctx, req),
		method:    req.Method,
		token0:    p.token,
		ctx:       cctx,
		cancel:    cancel,
		status:    Working,
		changed:   make(chan struct{}),
	}
	// The digest is made when the call first asks for input: most calls
	// never do. The edge may reuse its buffer once Serve returns.
	c.params = bytes.Clone(req.Params)
	a := newAttachment(ctx, req.Sink, p.token)
	c.attachLocked(a, req.Capabilities)
	m.workers.Run(func() {
		var res any
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("internal error in the call: %v", r)
				}
			}()
			res, err = run(cctx, c.Host())
		}()
		c.finish(res, err)
	})
	return c, a, nil
}

func (m *Manager) resume(ctx context.Context, req Request, p *params) (*Outcome, error) {
	return m.accept(ctx, req, p, func(c *Call, a *attachment) (*Outcome, error) { return m.serve(ctx, c, a) })
}

// accept checks a retry and delivers its answers, then hands the call to then.
func (m *Manager) accept(ctx context.Context, req Request, p *params, then func(*Call, *attachment) (*Outcome, error)) (*Outcome, error) {
	st, err := m.open(p.state)
	if err != nil {
		return nil, err
	}
	if st.Replica != m.replica {
		return nil, &ElsewhereError{Replica: st.Replica}
	}
	if st.Principal != req.Principal {
		m.stats.principal.Add(1)
		return nil, ErrStatePrincipal
	}
	digest, err := ParamsDigest(req.Params)
	if err != nil {
		return nil, err
	}
	if st.Method != req.Method || !bytes.Equal(st.Digest, digest[:]) {
		m.stats.misfit.Add(1)
		return nil, ErrStateMismatch
	}
	m.mu.Lock()
	c := m.calls[st.Call]
	_, used := m.consumed[st.Use]
	m.mu.Unlock()
	if c == nil {
		if used {
			m.stats.replayed.Add(1)
			return nil, ErrStateReplayed
		}
		return nil, ErrCallGone
	}

	c.mu.Lock()
	if c.use != st.Use {
		c.mu.Unlock()
		m.stats.replayed.Add(1)
		return nil, ErrStateReplayed
	}
	answers, complete, err := c.checkLocked(p.responses)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if !complete {
		// The revision's SHOULD: ask again for what is missing, rather
		// than fail. The state was not accepted: it stays good.
		out := &Outcome{Input: &InputRequiredResult{ResultType: "input_required", InputRequests: c.pendingCopy(), RequestState: p.state}}
		c.mu.Unlock()
		return out, nil
	}
	// Accepted: the state is used up, the call is this request's.
	c.use = ""
	if c.timer != nil {
		c.timer.Stop()
	}
	m.consume(st.Use, st.Expiry)
	a := newAttachment(ctx, req.Sink, p.token)
	c.attachLocked(a, req.Capabilities)
	c.deliverLocked(answers)
	m.stats.resumed.Add(1)
	c.mu.Unlock()
	return then(c, a)
}

// serve waits for the call's next event for the request a and turns it
// into the request's answer. It runs on the request's goroutine, which
// hands the call's queued notifications to the request's sink meanwhile,
// and the last of them before it returns.
func (m *Manager) serve(ctx context.Context, c *Call, a *attachment) (*Outcome, error) {
	for {
		c.mu.Lock()
		switch c.status {
		case InputRequired:
			if c.params != nil {
				c.digest, _ = ParamsDigest(c.params) // parseParams decoded them: they are an object
				c.params = nil
			}
			st := &state{
				Principal: c.principal,
				Method:    c.method,
				Digest:    c.digest[:],
				Expiry:    c.expiry.UnixMilli(),
				Use:       c.use,
				Replica:   m.replica,
				Call:      c.id,
			}
			out := &Outcome{Input: &InputRequiredResult{ResultType: "input_required", InputRequests: c.pendingCopy(), RequestState: m.sealer.sealState(st)}}
			c.detachLocked(a)
			c.mu.Unlock()
			a.deliver(&m.stats.dropped)
			return out, nil
		case Completed, Failed, Cancelled:
			status, res, err := c.status, c.result, c.err
			c.detachLocked(a)
			c.releaseLocked()
			c.mu.Unlock()
			a.deliver(&m.stats.dropped)
			if status == Completed {
				return &Outcome{Result: res}, nil
			}
			return nil, err
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-a.ready:
			a.deliver(&m.stats.dropped)
		case <-ctx.Done():
			c.mu.Lock()
			if c.status == Working {
				c.detachLocked(a)
				c.endLocked(Cancelled, nil, ErrRequestEnded)
				c.mu.Unlock()
				a.deliver(&m.stats.dropped) // counts them: nobody reads them
				return nil, fmt.Errorf("%w: %w", ErrRequestEnded, context.Cause(ctx))
			}
			c.mu.Unlock() // an event came at the same time: answer it
		}
	}
}

// EvictGrace is how long a call must have been parked before another
// client's call may end it at the cap on parked calls (see acquire): as
// long as the pool lets a parked call keep its instance once another call
// waits for one, so that a client that answers at once keeps its call.
const EvictGrace = 2 * time.Second

// ctxClient is the context key of WithClient.
type ctxClient struct{}

// WithClient returns ctx carrying the address an unauthenticated request
// came from, which Serve takes when Request.Client is empty.
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, ctxClient{}, addr)
}

// clientKey names the client of a request for the fairness of the caps:
// its principal, or without one the address it came from.
func clientKey(ctx context.Context, req Request) string {
	if req.Principal != "" {
		return "user " + req.Principal
	}
	addr := req.Client
	if addr == "" {
		addr, _ = ctx.Value(ctxClient{}).(string)
	}
	if addr == "" {
		return ""
	}
	return "address " + addr
}

// acquire counts c against the caps, and puts it in the table, or refuses
// it. A call counts from the moment it asks for input until it ends or its
// plugin stops waiting for the answer (uncount); a call that never asks
// for input never counts, and is never refused here.
//
// At max_parked, a call whose client holds fewer parked calls than another
// client is not refused: the oldest call of the client holding the most,
// parked for at least EvictGrace, ends for it (ErrEvicted), so that no
// client, anonymous ones included, can lock the others out by holding
// every place; a client holding as many as any other is refused. acquire
// returns the call to end, which the caller ends once it holds no lock of
// its own (c.mu is held here, and the evicted call has its own).
func (m *Manager) acquire(c *Call) (evict *Call, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mine := len(m.byClient[c.client])
	switch {
	case m.closed:
		return nil, ErrClosed
	case c.principal != "" && mine >= m.maxPerPrincipal:
		m.stats.capRefusals.Add(1)
		return nil, fmt.Errorf("%w: %d of your requests wait for input, the limit per user; answer or abandon one, then start this request again", ErrPrincipalCap, m.maxPerPrincipal)
	case m.counted >= m.maxParked:
		evict = m.evictableLocked(mine, time.Now())
		if evict == nil {
			m.stats.capRefusals.Add(1)
			return nil, fmt.Errorf("%w: %d requests wait for input on this server, its limit, and none of another client who holds more than you has waited %v; try again once some are answered", ErrServerCap, m.maxParked, EvictGrace)
		}
		m.dropLocked(evict)
		m.stats.evicted.Add(1)
	}
	if c.id == "" {
		// Made when the call first asks: most calls never do, and
		// crypto/rand cost each a few percent of its CPU.
		c.id = rand.Text()
	}
	m.calls[c.id] = c
	m.counted++
	m.byClient[c.client] = append(m.byClient[c.client], c)
	return evict, nil
}

// evictableLocked returns the oldest call, parked for EvictGrace at least,
// of the client holding the most calls, if it holds more than mine; or nil.
func (m *Manager) evictableLocked(mine int, now time.Time) *Call {
	var most []*Call
	for _, cs := range m.byClient {
		if len(cs) > len(most) {
			most = cs
		}
	}
	if len(most) <= mine {
		return nil
	}
	for _, v := range most {
		if since := v.parkedSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) >= EvictGrace {
			return v
		}
	}
	return nil
}

// dropLocked takes c out of the account of the caps, if it is in it.
func (m *Manager) dropLocked(c *Call) bool {
	cs := m.byClient[c.client]
	i := slices.Index(cs, c)
	if i < 0 {
		return false
	}
	m.counted--
	if cs = slices.Delete(cs, i, i+1); len(cs) == 0 {
		delete(m.byClient, c.client)
	} else {
		m.byClient[c.client] = cs
	}
	return true
}

// uncount frees c's place under the caps (c.counted was true), unless
// another call's took it already (acquire).
func (m *Manager) uncount(c *Call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(c)
}

// keepOutcome reports whether the table has room for the outcome of an
// ended call (in it) that waits for a retry: the calls in the table that
// do not count against the caps are at most max_parked.
func (m *Manager) keepOutcome() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)-m.counted <= m.maxParked
}

// release takes c out of the table (its place under the caps is freed
// before, by uncount).
func (m *Manager) release(c *Call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls[c.id] == c {
		delete(m.calls, c.id)
	}
}

// consume records an accepted single-use id until its state expires, and
// drops the ids of expired states once their number has doubled.
func (m *Manager) consume(use string, expiry int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.consumed[use] = expiry
	if len(m.consumed) < m.sweepAt {
		return
	}
	now := m.now().UnixMilli()
	for id, e := range m.consumed {
		if e <= now {
			delete(m.consumed, id)
		}
	}
	m.sweepAt = max(64, 2*len(m.consumed))
}

// Stats are the Manager's counters and gauges, for metrics.
type Stats struct {
	Parked               int64  // calls waiting for their client's input now
	Held                 int    // calls counted against the caps now: parked, or answered and running on
	ParkedTotal          uint64 // input requests issued (a call asking twice counts twice)
	Resumed              uint64 // retries whose answers were delivered
	Expired              uint64 // calls cancelled because no retry came in time
	CapRefusals          uint64 // requests refused at a cap (ErrTooManyParked)
	Evicted              uint64 // parked calls ended at max_parked for another client's (ErrEvicted)
	CapabilityRefusals   uint64 // requests refused with MissingRequiredClientCapability
	DroppedNotifications uint64 // log and progress notifications dropped: no request waited, it was gone, or its queue was full
	QueueFull            uint64 // of those, dropped because the request's queue was full (QueueSize): its client reads slower than the plugin sends
	InvalidStates        uint64 // states refused as tampered or not ours (ErrStateInvalid)
	ExpiredStates        uint64 // ErrStateExpired
	ReplayedStates       uint64 // ErrStateReplayed
	PrincipalRefusals    uint64 // ErrStatePrincipal
	MismatchRefusals     uint64 // ErrStateMismatch
	InFlightRefusals     uint64 // ErrRetryInFlight
}

// Stats returns the current counters.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	held := m.counted
	m.mu.Unlock()
	s := &m.stats
	return Stats{
		Parked:               s.parked.Load(),
		Held:                 held,
		ParkedTotal:          s.parkedTotal.Load(),
		Resumed:              s.resumed.Load(),
		Expired:              s.expired.Load(),
		CapRefusals:          s.capRefusals.Load(),
		Evicted:              s.evicted.Load(),
		CapabilityRefusals:   s.capabilityRefusals.Load(),
		DroppedNotifications: s.dropped.Load(),
		QueueFull:            s.queueFull.Load(),
		InvalidStates:        s.invalid.Load(),
		ExpiredStates:        s.stale.Load(),
		ReplayedStates:       s.replayed.Load(),
		PrincipalRefusals:    s.principal.Load(),
		MismatchRefusals:     s.misfit.Load(),
		InFlightRefusals:     s.inFlight.Load(),
	}
}

// ClientOf returns the address WithClient put in ctx, "" if none.
func ClientOf(ctx context.Context) string {
	a, _ := ctx.Value(ctxClient{}).(string)
	return a
}
