package tasks

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// Defaults of Options.
const (
	// DefaultAfter is how long a call runs before it becomes a task: long
	// enough that a quick tool answers directly, as most do, short enough
	// that a client is not left holding a request open for a long one.
	DefaultAfter = 2 * time.Second
	// DefaultMaxTasks bounds the tasks on one server, running or kept.
	DefaultMaxTasks = 1000
	// DefaultMaxTasksPerOwner bounds one principal's (or one anonymous
	// client's) tasks: an agent runs a few long tools at once.
	DefaultMaxTasksPerOwner = 16
	// DefaultMaxResultBytes bounds a kept result: a tool result the size
	// of a page of text or a small image.
	DefaultMaxResultBytes = 1 << 20
	// DefaultMaxKeptBytes bounds the results kept for every task together.
	DefaultMaxKeptBytes = 64 << 20
	// DefaultKeep is how long a finished task is kept for its client.
	DefaultKeep = 15 * time.Minute
	// DefaultMaxRun bounds a task's run: it is cancelled after it.
	DefaultMaxRun = time.Hour
	// DefaultPollInterval is the pollIntervalMs told to clients.
	DefaultPollInterval = time.Second
	// DefaultListenerBuffer is the events a listener may have waiting
	// before more are dropped.
	DefaultListenerBuffer = 64
	// DefaultMaxListeners and DefaultMaxListenersPerOwner bound the
	// listeners (notifications/tasks streams).
	DefaultMaxListeners         = 1000
	DefaultMaxListenersPerOwner = 8
)

// Options configure a Table. Zero means the default; a negative value is
// an error.
type Options struct {
	// Key derives the key that authenticates task ids: the state key the
	// Manager seals requestStates with (mrtr.Options.Key), the same on
	// every replica. Nil means a random key: ids are then good on this
	// process only. PreviousKeys authenticate ids made before a rotation.
	Key          []byte
	PreviousKeys [][]byte
	// Auth says that requests are authenticated: a request without a
	// principal is then anonymous, gets no task (it is answered directly)
	// and sees none. Without Auth, every request is anonymous: a task is
	// reached with its id alone (128 random bits), and counted against
	// the cap of the client key its request gave (Owner.Client); an
	// anonymous request without a client key gets no task.
	Auth bool
	// After is how long a call runs before it becomes a task, unless the
	// request says otherwise (Call's after).
	After time.Duration
	// MaxTasks and MaxTasksPerOwner cap the tasks kept, running or
	// finished, on the server and per owner. A call past its threshold
	// at a cap does not become a task: its request waits for it, as a
	// request of a client without the extension does.
	MaxTasks         int
	MaxTasksPerOwner int
	// MaxResultBytes bounds a task's result, JSON-encoded: a larger one
	// fails the task with ErrResultTooLarge. MaxKeptBytes bounds the
	// results of all tasks together: a result past it fails its task with
	// ErrKeptFull.
	MaxResultBytes int
	MaxKeptBytes   int64
	// Keep is how long a finished task is kept (its ttlMs runs to then):
	// after it, the task is forgotten and its place under the caps freed.
	Keep time.Duration
	// MaxRun bounds a task's run: a task still running after it is
	// cancelled (ErrRunTimeout).
	MaxRun time.Duration
	// PollInterval is the pollIntervalMs told to clients.
	PollInterval time.Duration
	// ListenerBuffer, MaxListeners and MaxListenersPerOwner bound
	// listeners: the events each may have waiting, and how many there are
	// on the server and per owner.
	ListenerBuffer       int
	MaxListeners         int
	MaxListenersPerOwner int
	// ErrorObject maps the error of a failed call to the JSON-RPC error
	// its task reports; nil means mrtr.RPCError, or an internal error
	// (-32603) with the error's text.
	ErrorObject func(error) *jsonrpc.Error
	// Now is the clock of createdAt and lastUpdatedAt; nil is time.Now.
	Now func() time.Time
}

// Owner is who makes a request: its principal (the token's subject, ""
// when not authenticated) and, for anonymous requests, a key that tells
// clients apart for the caps (the session id, or the remote address).
type Owner struct {
	Principal string
	Client    string
}

// Table holds the tasks of one server (one replica): calls that ran past
// their threshold, with their ids, owners and outcomes. It knows no wire
// format: the edge decodes tasks/get, tasks/update and tasks/cancel and
// encodes the Detailed views. It is safe for concurrent use.
type Table struct {
	m       *mrtr.Manager
	o       Options
	keys    [][]byte
	replica string

	mu        sync.Mutex
	tasks     map[string]*task
	perOwner  map[string]int
	kept      int64 // bytes of the kept results
	listeners int
	perListen map[string]int
	closed    bool           // draining or closed: no call becomes a task
	shut      bool           // closed: no listener either
	running   sync.WaitGroup // the followers of running tasks

	stats counters
}

type counters struct {
	running, inputRequired                             atomic.Int64
	created, completed, failed, cancelled, expired     atomic.Uint64
	capFallbacks, tooLarge, keptFull, unknown, drained atomic.Uint64
	dropped, listenRefusals                            atomic.Uint64
}

// task is one task.
type task struct {
	t         *Table
	id        string
	owner     string // the key its caps count under
	principal string
	created   time.Time

	mu       sync.Mutex
	call     *mrtr.Call // nil once final: the outcome is kept here
	status   mrtr.Status
	keys     string // of the input requests recorded, to tell rounds apart
	message  string
	updated  time.Time
	finished time.Time
	inputs   map[string]json.RawMessage
	answers  map[string]json.RawMessage // partial answers of this round
	result   json.RawMessage
	errObj   *jsonrpc.Error
	size     int64 // of result, counted in Table.kept
	timer    *time.Timer
	subs     map[*Listener]struct{}
	gone     bool // forgotten: it left the table
}

// New returns a Table whose calls m runs.
func New(m *mrtr.Manager, o Options) (*Table, error) {
	if m == nil {
		return nil, errors.New("tasks: New needs a Manager")
	}
	if o.After < 0 || o.MaxTasks < 0 || o.MaxTasksPerOwner < 0 || o.MaxResultBytes < 0 || o.MaxKeptBytes < 0 ||
		o.Keep < 0 || o.MaxRun < 0 || o.PollInterval < 0 || o.ListenerBuffer < 0 || o.MaxListeners < 0 || o.MaxListenersPerOwner < 0 {
		return nil, errors.New("tasks: durations, caps and bounds must not be negative")
	}
	keys, err := idKeys(o.Key, o.PreviousKeys)
	if err != nil {
		return nil, err
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defd(&o.After, DefaultAfter)
	def(&o.MaxTasks, DefaultMaxTasks)
	def(&o.MaxTasksPerOwner, DefaultMaxTasksPerOwner)
	def(&o.MaxResultBytes, DefaultMaxResultBytes)
	if o.MaxKeptBytes == 0 {
		o.MaxKeptBytes = DefaultMaxKeptBytes
	}
	defd(&o.Keep, DefaultKeep)
	defd(&o.MaxRun, DefaultMaxRun)
	defd(&o.PollInterval, DefaultPollInterval)
	def(&o.ListenerBuffer, DefaultListenerBuffer)
	def(&o.MaxListeners, DefaultMaxListeners)
	def(&o.MaxListenersPerOwner, DefaultMaxListenersPerOwner)
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Table{
		m:         m,
		o:         o,
		keys:      keys,
		replica:   m.Replica(),
		tasks:     map[string]*task{},
		perOwner:  map[string]int{},
		perListen: map[string]int{},
	}, nil
}

// ownerKey returns the key o's tasks count under, or false when o may
// have none: anonymous on a server with authentication, or anonymous
// without a client key (the callers it would lump together are many
// clients, not one, and one of them could take the others' places).
func (t *Table) ownerKey(o Owner) (string, bool) {
	switch {
	case o.Principal != "":
		return "p\x00" + o.Principal, true
	case t.o.Auth, o.Client == "":
		return "", false
	}
	return "c\x00" + o.Client, true
}

// Call serves a request whose call may become a task (a tools/call of a
// client that declared the extension). The call runs as mrtr.Manager.
// Begin runs it: if it ends or asks for input within after (negative: the
// table's Options.After; zero: at once, for a tool that says it runs
// long), Call returns the Outcome (or error) to answer with, as
// mrtr.Manager.Serve; otherwise the call becomes a task, and Call returns
// its view, to answer as a CreateTaskResult (resultType "task"). A call
// of an owner who may have no task, or past a cap, is served as by Serve.
func (t *Table) Call(ctx context.Context, o Owner, req mrtr.Request, run mrtr.Run, after time.Duration) (*Detailed, *mrtr.Outcome, error) {
	if after < 0 {
		after = t.o.After
	}
	key, ok := t.ownerKey(o)
	if !ok {
		out, err := t.m.Serve(ctx, req, run)
		return nil, out, err
	}
	var tk *task
	keep := func(c *mrtr.Call) bool {
		tk = t.admit(key, o.Principal, c)
		return tk != nil
	}
	c, out, err := t.m.Begin(ctx, req, run, after, keep)
	if c == nil {
		return nil, out, err
	}
	d := tk.view()
	go tk.follow(c)
	return d, nil, nil
}

// admit makes c a task of owner, or reports nil at a cap or once closed.
func (t *Table) admit(owner, principal string, c *mrtr.Call) *task {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil
	case len(t.tasks) >= t.o.MaxTasks, t.perOwner[owner] >= t.o.MaxTasksPerOwner:
		t.stats.capFallbacks.Add(1)
		return nil
	}
	now := t.o.Now()
	tk := &task{
		t:         t,
		id:        newID(t.keys[0], t.replica),
		owner:     owner,
		principal: principal,
		created:   now,
		call:      c,
		status:    mrtr.Working,
		updated:   now,
	}
	tk.timer = time.AfterFunc(t.o.MaxRun, func() { c.Cancel(fmt.Errorf("%w (%s, tasks.max_run)", ErrRunTimeout, t.o.MaxRun)) })
	t.tasks[tk.id] = tk
	t.perOwner[owner]++
	t.stats.created.Add(1)
	t.stats.running.Add(1)
	t.running.Add(1) // under mu, so never after Drain began to wait
	return tk
}

// follow records the call's changes until it is final, on a goroutine of
// the task's own (one per running task, so bounded by the caps).
func (tk *task) follow(c *mrtr.Call) {
	defer tk.t.running.Done()
	for {
		s, next := c.Next()
		tk.record(s)
		if s.Status.Final() {
			c.Release() // no retry will claim it: out of the Manager's table
			return
		}
		<-next
	}
}

// record makes s the task's state, if it changed, and tells its
// listeners.
func (tk *task) record(s mrtr.Snapshot) {
	t := tk.t
	tk.mu.Lock()
	keys := keysOf(s.InputRequests)
	if tk.call == nil || (s.Status == tk.status && keys == tk.keys) {
		tk.mu.Unlock()
		return
	}
	if tk.status == mrtr.InputRequired {
		t.stats.inputRequired.Add(-1)
	}
	tk.status, tk.keys, tk.inputs, tk.message = s.Status, keys, nil, ""
	tk.updated = t.o.Now()
	switch s.Status {
	case mrtr.InputRequired:
		t.stats.inputRequired.Add(1)
		tk.inputs = s.InputRequests
		if !s.Expiry.IsZero() {
			tk.message = "waiting for tasks/update with the answers to inputRequests until " + s.Expiry.UTC().Format(time.RFC3339)
		}
	case mrtr.Completed, mrtr.Failed, mrtr.Cancelled:
		tk.finishLocked(s)
	}
	d := tk.viewLocked()
	subs := make([]*Listener, 0, len(tk.subs))
	for l := range tk.subs {
		subs = append(subs, l)
	}
	tk.mu.Unlock()
	for _, l := range subs {
		l.send(d)
	}
}

// finishLocked keeps the outcome of the final snapshot s, drops the call,
// and starts the time the task is kept.
func (tk *task) finishLocked(s mrtr.Snapshot) {
	t := tk.t
	tk.call = nil
	tk.answers = nil
	tk.finished = tk.updated
	t.stats.running.Add(-1)
	status := s.Status
	switch status {
	case mrtr.Completed:
		b, err := json.Marshal(s.Result)
		switch {
		case err != nil:
			status, tk.errObj = mrtr.Failed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the task's result: " + err.Error()}
		case len(b) > t.o.MaxResultBytes:
			t.stats.tooLarge.Add(1)
			status, tk.errObj = mrtr.Failed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
				"%s: %d bytes, past its limit of %d (tasks.max_result_bytes); ask the tool for less (a page, a summary), or ask the operator to raise the limit",
				ErrResultTooLarge, len(b), t.o.MaxResultBytes)}
		default:
			t.mu.Lock()
			room := t.kept+int64(len(b)) <= t.o.MaxKeptBytes && !tk.gone
			if room {
				t.kept += int64(len(b))
				tk.size = int64(len(b))
			}
			t.mu.Unlock()
			if room {
				tk.result = b
			} else {
				t.stats.keptFull.Add(1)
				status, tk.errObj = mrtr.Failed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
					"%s (%d bytes, tasks.max_kept_bytes): start the call again later, once other tasks' results have been collected or expired", ErrKeptFull, t.o.MaxKeptBytes)}
			}
		}
	case mrtr.Failed:
		tk.errObj = t.errorObject(s.Err)
	case mrtr.Cancelled:
		if s.Err != nil {
			tk.message = s.Err.Error()
		}
	}
	tk.status = status
	switch status {
	case mrtr.Completed:
		t.stats.completed.Add(1)
	case mrtr.Failed:
		t.stats.failed.Add(1)
	default:
		t.stats.cancelled.Add(1)
	}
	if tk.timer != nil {
		tk.timer.Stop()
	}
	if !tk.gone {
		tk.timer = time.AfterFunc(t.o.Keep, tk.forget)
	}
}

func (t *Table) errorObject(err error) *jsonrpc.Error {
	if err == nil {
		err = errors.New("the call failed")
	}
	if t.o.ErrorObject != nil {
		if e := t.o.ErrorObject(err); e != nil {
			return e
		}
	}
	if e := mrtr.RPCError(err); e != nil {
		return e
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// forget takes the task out of the table once it has been kept for
// Options.Keep: its place under the caps and its result's bytes are
// free.
func (tk *task) forget() {
	t := tk.t
	tk.mu.Lock()
	tk.subs = nil
	tk.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.removeLocked(tk) {
		t.stats.expired.Add(1)
	}
}

// removeLocked takes tk out of the table, and reports whether it was in.
func (t *Table) removeLocked(tk *task) bool {
	if tk.gone {
		return false
	}
	tk.gone = true
	delete(t.tasks, tk.id)
	if t.perOwner[tk.owner]--; t.perOwner[tk.owner] <= 0 {
		delete(t.perOwner, tk.owner)
	}
	t.kept -= tk.size
	return true
}

func keysOf(m map[string]json.RawMessage) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // sorted keys
	return string(b)
}

// lookup returns the task id names if o may see it. Any other case is
// ErrUnknownTask, whatever the reason, with the same work done: an id
// that fails authentication is refused before the table is read, which
// tells a client only that it forged the id.
func (t *Table) lookup(o Owner, id string) (*task, error) {
	replica, ok := parseID(t.keys, id)
	if !ok {
		t.stats.unknown.Add(1)
		return nil, ErrUnknownTask
	}
	if replica != t.replica {
		return nil, &ElsewhereError{Replica: replica}
	}
	t.mu.Lock()
	tk := t.tasks[id]
	t.mu.Unlock()
	var principal string
	if tk != nil {
		principal = tk.principal
	}
	same := subtle.ConstantTimeCompare([]byte(principal), []byte(o.Principal)) == 1
	if tk == nil || !same || (t.o.Auth && o.Principal == "") {
		t.stats.unknown.Add(1)
		return nil, ErrUnknownTask
	}
	return tk, nil
}

// Locate authenticates a task id and returns the replica that holds the
// task (Replica of the Manager for this one), for the edge to forward
// tasks/get, tasks/update and tasks/cancel there, as it does retries
// (mrtr.Manager.Locate). An id no replica made is ErrUnknownTask.
func (t *Table) Locate(id string) (string, error) {
	replica, ok := parseID(t.keys, id)
	if !ok {
		t.stats.unknown.Add(1)
		return "", ErrUnknownTask
	}
	return replica, nil
}

// Get returns the task's view, for tasks/get.
func (t *Table) Get(o Owner, id string) (*Detailed, error) {
	tk, err := t.lookup(o, id)
	if err != nil {
		return nil, err
	}
	return tk.view(), nil
}

// Update gives a task the answers to its input requests, for
// tasks/update. Answers to keys that are not outstanding (never issued,
// already answered, or of a task no longer waiting) are ignored; a
// partial set is kept until the rest comes, and the task stays
// input_required meanwhile. An answer of the wrong shape for its request
// is an error (mrtr's *ResponseError, invalid params) and is not kept;
// the other answers of the same update are not kept either.
func (t *Table) Update(o Owner, id string, responses map[string]json.RawMessage) error {
	tk, err := t.lookup(o, id)
	if err != nil {
		return err
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if tk.call == nil {
		return nil // final: nothing outstanding
	}
	s, _ := tk.call.Next()
	if s.Status != mrtr.InputRequired {
		return nil
	}
	merged := make(map[string]json.RawMessage, len(s.InputRequests))
	for k := range s.InputRequests {
		if a, ok := responses[k]; ok {
			merged[k] = a
		} else if a, ok := tk.answers[k]; ok {
			merged[k] = a
		}
	}
	delivered, err := tk.call.Answer(merged)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	if delivered {
		tk.answers = nil
	} else {
		tk.answers = merged
	}
	return nil
}

// Cancel ends a task's call, for tasks/cancel: the plugin's call is
// interrupted and its instance goes back to its pool; the task is
// cancelled (ErrCancelled). A finished task is left as it is: the cancel
// is acknowledged and changes nothing.
func (t *Table) Cancel(o Owner, id string) error {
	tk, err := t.lookup(o, id)
	if err != nil {
		return err
	}
	tk.mu.Lock()
	c := tk.call
	tk.mu.Unlock()
	if c != nil {
		c.Cancel(ErrCancelled)
	}
	return nil
}

// Drain ends the running tasks, for a shutdown: no call becomes a task
// any more (its request waits for it instead); the running tasks may
// finish until ctx ends, and those still running then are cancelled
// (ErrDraining), so that every task has a final status that tasks/get
// reads for as long as the server still answers. Give ctx the drain
// timeout less the time clients need to read the outcome. Drain returns
// how many tasks it cancelled.
func (t *Table) Drain(ctx context.Context) int {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	done := make(chan struct{})
	go func() {
		t.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return 0
	case <-ctx.Done():
	}
	n := 0
	for _, tk := range t.all() {
		tk.mu.Lock()
		c := tk.call
		tk.mu.Unlock()
		if c != nil {
			c.Cancel(ErrDraining)
			n++
		}
	}
	<-done // a cancelled call is final at once: its follower returns
	t.stats.drained.Add(uint64(n))
	return n
}

// Close drains at once (every running task is cancelled) and forgets
// every task.
func (t *Table) Close() {
	t.mu.Lock()
	t.shut = true
	t.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t.Drain(ctx)
	for _, tk := range t.all() {
		tk.mu.Lock()
		if tk.timer != nil {
			tk.timer.Stop()
		}
		tk.subs = nil
		tk.mu.Unlock()
		t.mu.Lock()
		t.removeLocked(tk)
		t.mu.Unlock()
	}
}

func (t *Table) all() []*task {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*task, 0, len(t.tasks))
	for _, tk := range t.tasks {
		out = append(out, tk)
	}
	return out
}

// Stats are the table's gauges and counters, for metrics.
type Stats struct {
	Tasks          int    // tasks kept now, running or finished
	Running        int64  // of those, not final (working or input_required)
	InputRequired  int64  // of those, waiting for tasks/update
	KeptBytes      int64  // bytes of the kept results
	Listeners      int    // listeners now
	Created        uint64 // calls that became tasks
	Completed      uint64 // tasks that ended completed
	Failed         uint64 // failed (too large results included)
	Cancelled      uint64 // cancelled (tasks/cancel, drain, max run, input never answered)
	Expired        uint64 // finished tasks forgotten after Options.Keep
	CapFallbacks   uint64 // calls past their threshold answered directly at a cap
	TooLarge       uint64 // results past MaxResultBytes
	KeptFull       uint64 // results refused at MaxKeptBytes
	Unknown        uint64 // lookups of ids unknown or not the caller's
	Drained        uint64 // tasks cancelled by Drain
	DroppedEvents  uint64 // events a listener's buffer had no room for
	ListenRefusals uint64 // listeners refused at a cap
}

// Stats returns the current gauges and counters.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	n, kept, listeners := len(t.tasks), t.kept, t.listeners
	t.mu.Unlock()
	s := &t.stats
	return Stats{
		Tasks: n, Running: s.running.Load(), InputRequired: s.inputRequired.Load(), KeptBytes: kept, Listeners: listeners,
		Created: s.created.Load(), Completed: s.completed.Load(), Failed: s.failed.Load(), Cancelled: s.cancelled.Load(),
		Expired: s.expired.Load(), CapFallbacks: s.capFallbacks.Load(), TooLarge: s.tooLarge.Load(), KeptFull: s.keptFull.Load(),
		Unknown: s.unknown.Load(), Drained: s.drained.Load(), DroppedEvents: s.dropped.Load(), ListenRefusals: s.listenRefusals.Load(),
	}
}
