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
	// DefaultAfter is the threshold of mrtr.TaskAuto the edge gives a
	// tool by default (tasks.after): long enough that a quick tool answers
	// directly, as most do, short enough that a client is not left
	// holding a request open for a long one.
	DefaultAfter = 2 * time.Second
	// DefaultMaxTasks bounds the tasks on one server, running or kept.
	DefaultMaxTasks = 1000
	// DefaultMaxTasksPerOwner bounds one principal's (or one anonymous
	// client's) tasks: an agent runs a few long tools at once.
	DefaultMaxTasksPerOwner = 16
	// DefaultMaxResultBytes bounds a kept result: a tool result the size
	// of a page of text or a small image.
	DefaultMaxResultBytes = 1 << 20
	// DefaultMaxKeptBytes bounds the results kept for every task together,
	// and DefaultMaxKeptBytes/8 those of one owner.
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
// an error. The key that authenticates task ids is derived from the
// Manager's state keys (mrtr.Manager.DeriveKeys), so that every replica
// that shares them shares it, and it rotates with them.
type Options struct {
	// Auth says that requests are authenticated: a request without a
	// principal is then anonymous, gets no task (it is answered directly)
	// and sees none. Without Auth, every request is anonymous: a task is
	// reached with its id alone (128 random bits), and counted against
	// the cap of the client key its request gave (Owner.Client); an
	// anonymous request without a client key gets no task.
	Auth bool
	// MaxTasks and MaxTasksPerOwner cap the tasks kept, running or
	// finished, on the server and per owner. A call past its threshold
	// at a cap does not become a task: its request waits for it, as a
	// request of a client without the extension does.
	MaxTasks         int
	MaxTasksPerOwner int
	// MaxResultBytes bounds a task's result, JSON-encoded: a larger one
	// fails the task with ErrResultTooLarge. MaxKeptBytes bounds the
	// results of all tasks together, and MaxKeptBytesPerOwner (by default
	// an eighth of MaxKeptBytes, at least MaxResultBytes) those of one
	// owner, so that one owner's results cannot take every other owner's
	// room. A task reserves MaxResultBytes under both from its admission
	// until it ends, when its result takes the reservation's place: a
	// call whose reservation would not fit is answered directly, as at
	// the caps on tasks, so that no task does its work and then finds no
	// room for its result. A running task holds MaxResultBytes, so at
	// most MaxKeptBytes/MaxResultBytes tasks run at once on the server
	// (MaxKeptBytesPerOwner/MaxResultBytes per owner), fewer when
	// results are kept. New wants MaxResultBytes ≤ MaxKeptBytesPerOwner ≤
	// MaxKeptBytes, so that one task of each owner can run.
	MaxResultBytes       int
	MaxKeptBytes         int64
	MaxKeptBytesPerOwner int64
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
	// its task reports; nil, or a nil result, means the *jsonrpc.Error in
	// the error's chain if any, else mrtr.RPCError, else an internal error
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

	mu       sync.Mutex
	tasks    map[string]*task
	perOwner map[string]int
	kept     int64            // bytes of the kept results
	keptBy   map[string]int64 // of those, by owner
	// reserved is the room the running tasks hold for their results
	// (MaxResultBytes each), reservedBy of it by owner: admit keeps
	// kept+reserved within MaxKeptBytes, and the owner's within
	// MaxKeptBytesPerOwner, so that a result always fits when it comes.
	reserved   int64
	reservedBy map[string]int64
	listeners  map[*Listener]struct{}
	perListen  map[string]int
	closed     bool           // draining or closed: no call becomes a task
	shut       bool           // closed: no listener either
	running    sync.WaitGroup // the followers of running tasks

	stats counters
}

type counters struct {
	running, inputRequired                         atomic.Int64
	created, completed, failed, cancelled, expired atomic.Uint64
	capFallbacks, tooLarge, unknown, drained       atomic.Uint64
	keptFull, keptFullOwner                        atomic.Uint64
	dropped, listenRefusals                        atomic.Uint64
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
	keys     string // of the input requests recorded, to tell changes apart
	version  uint64 // counts the recorded changes, to keep listeners' order
	message  string
	cause    error // why it ended, when failed or cancelled
	updated  time.Time
	finished time.Time
	inputs   map[string]json.RawMessage
	result   json.RawMessage
	errObj   *jsonrpc.Error
	size     int64 // of result, counted in Table.kept
	reserved int64 // of Table.reserved, until the task ends; under Table.mu
	timer    *time.Timer
	subs     map[*Listener]struct{}
	gone     bool // forgotten: it left the table
}

// New returns a Table whose calls m runs.
func New(m *mrtr.Manager, o Options) (*Table, error) {
	if m == nil {
		return nil, errors.New("tasks: New needs a Manager")
	}
	if o.MaxTasks < 0 || o.MaxTasksPerOwner < 0 || o.MaxResultBytes < 0 || o.MaxKeptBytes < 0 || o.MaxKeptBytesPerOwner < 0 ||
		o.Keep < 0 || o.MaxRun < 0 || o.PollInterval < 0 || o.ListenerBuffer < 0 || o.MaxListeners < 0 || o.MaxListenersPerOwner < 0 {
		return nil, errors.New("tasks: durations, caps and bounds must not be negative")
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
	def(&o.MaxTasks, DefaultMaxTasks)
	def(&o.MaxTasksPerOwner, DefaultMaxTasksPerOwner)
	def(&o.MaxResultBytes, DefaultMaxResultBytes)
	if o.MaxKeptBytes == 0 {
		o.MaxKeptBytes = DefaultMaxKeptBytes
	}
	if o.MaxKeptBytesPerOwner == 0 {
		o.MaxKeptBytesPerOwner = max(o.MaxKeptBytes/8, int64(o.MaxResultBytes))
	}
	if int64(o.MaxResultBytes) > o.MaxKeptBytesPerOwner || o.MaxKeptBytesPerOwner > o.MaxKeptBytes {
		// A task reserves MaxResultBytes of both: below it, no task of an
		// owner (or of the server) could ever be made.
		return nil, fmt.Errorf("tasks: want MaxResultBytes (%d) ≤ MaxKeptBytesPerOwner (%d) ≤ MaxKeptBytes (%d)", o.MaxResultBytes, o.MaxKeptBytesPerOwner, o.MaxKeptBytes)
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
		m:          m,
		o:          o,
		keys:       m.DeriveKeys(idLabel),
		replica:    m.Replica(),
		tasks:      map[string]*task{},
		perOwner:   map[string]int{},
		keptBy:     map[string]int64{},
		reservedBy: map[string]int64{},
		listeners:  map[*Listener]struct{}{},
		perListen:  map[string]int{},
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

// Call serves a tools/call of a client that declared the extension,
// whose call may become a task as policy says (see mrtr.TaskPolicy): its
// result, input_required over MRTR, or an error come back as from
// mrtr.Manager.Serve (an Outcome, or an error); a call that becomes a
// task comes back as its view, to answer as a CreateTaskResult
// (resultType "task"). The task belongs to the request's principal
// (req.Principal), and, for an anonymous request, counts under client,
// the key that tells anonymous clients apart (the session id, or the
// remote address); an anonymous request on a server with Auth, or
// without a client key, gets no task. A call of an owner who may have
// no task, of policy TaskNever, or past a cap is served as by Serve. A
// request of another method is refused (mrtr.ErrTaskMethod): the edge
// serves it with Serve.
func (t *Table) Call(ctx context.Context, req mrtr.Request, client string, run mrtr.Run, policy mrtr.TaskPolicy) (*Detailed, *mrtr.Outcome, error) {
	if req.Method != "tools/call" {
		return nil, nil, fmt.Errorf("%w, not %s", mrtr.ErrTaskMethod, req.Method)
	}
	o := Owner{Principal: req.Principal, Client: client}
	key, ok := t.ownerKey(o)
	if !ok || policy.Mode == mrtr.TaskNever {
		out, err := t.m.Serve(ctx, req, run)
		return nil, out, err
	}
	var tk *task
	keep := func(c *mrtr.Call) bool {
		tk = t.admit(key, o.Principal, c)
		if tk == nil {
			return false
		}
		go tk.follow() // before the request's queued notifications are handed over
		return true
	}
	c, out, err := t.m.Begin(ctx, req, run, policy, keep)
	if c == nil {
		return nil, out, err
	}
	return tk.view(), nil, nil
}

// admit makes c a task of owner, reserving the room of its result, or
// reports nil at a cap, when the kept results and the reservations leave
// no room for one more result (the owner's or the server's), or once
// closed. The call is then answered directly: its work is not lost.
func (t *Table) admit(owner, principal string, c *mrtr.Call) *task {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := int64(t.o.MaxResultBytes)
	switch {
	case t.closed:
		return nil
	case len(t.tasks) >= t.o.MaxTasks, t.perOwner[owner] >= t.o.MaxTasksPerOwner:
		t.stats.capFallbacks.Add(1)
		return nil
	case t.keptBy[owner]+t.reservedBy[owner]+r > t.o.MaxKeptBytesPerOwner:
		t.stats.keptFullOwner.Add(1)
		return nil
	case t.kept+t.reserved+r > t.o.MaxKeptBytes:
		t.stats.keptFull.Add(1)
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
	tk.timer = time.AfterFunc(t.o.MaxRun, func() {
		c.Stop(fmt.Errorf("%w (%s, tasks.max_run)", ErrRunTimeout, t.o.MaxRun))
		tk.sync()
	})
	t.tasks[tk.id] = tk
	t.perOwner[owner]++
	tk.reserved = r
	t.reserved += r
	t.reservedBy[owner] += r
	t.stats.created.Add(1)
	t.stats.running.Add(1)
	t.running.Add(1) // under mu, so never after Drain began to wait
	return tk
}

// follow records the call's changes until it is final, on a goroutine of
// the task's own (one per running task, so bounded by the caps).
func (tk *task) follow() {
	defer tk.t.running.Done()
	for {
		next, final := tk.sync()
		if final {
			return
		}
		<-next
	}
}

// sync makes the call's state now the task's, if it changed, and tells
// its listeners; it returns the channel of the call's next change, and
// whether the task is final. The follower calls it at each change, and
// Update, Cancel, Drain and max_run right after theirs, so that a
// tasks/get that follows them reads their effect. The state is read under
// tk.mu, so that the recorded state never goes back to an older one.
func (tk *task) sync() (<-chan struct{}, bool) {
	t := tk.t
	tk.mu.Lock()
	c := tk.call
	if c == nil {
		tk.mu.Unlock()
		return nil, true
	}
	s, next := c.Next()
	keys := keysOf(s.InputRequests)
	if s.Status == tk.status && keys == tk.keys {
		tk.mu.Unlock()
		return next, false
	}
	if tk.status == mrtr.InputRequired {
		t.stats.inputRequired.Add(-1)
	}
	tk.status, tk.keys, tk.inputs, tk.message = s.Status, keys, nil, ""
	tk.updated = t.o.Now()
	tk.version++
	switch s.Status {
	case mrtr.InputRequired:
		t.stats.inputRequired.Add(1)
		tk.inputs = s.InputRequests
		if !s.Expiry.IsZero() {
			tk.message = "waiting for tasks/update with the answers to inputRequests, at the latest until " + s.Expiry.UTC().Format(time.RFC3339)
		}
	case mrtr.Completed, mrtr.Failed, mrtr.Cancelled:
		tk.finishLocked(s)
		c.Release() // out of the Manager's table; its plugin's execution ends
	}
	d, v := tk.viewLocked(), tk.version
	subs := make([]*Listener, 0, len(tk.subs))
	for l := range tk.subs {
		subs = append(subs, l)
	}
	tk.mu.Unlock()
	for _, l := range subs {
		l.send(tk, d, v)
	}
	return next, s.Status.Final()
}

// finishLocked keeps the outcome of the final snapshot s, drops the call,
// releases the task's reservation and starts the time the task is kept.
// A result within MaxResultBytes takes the reservation's place in the
// same critical section, so it always fits: no admission can take the
// room in between.
func (tk *task) finishLocked(s mrtr.Snapshot) {
	t := tk.t
	tk.call = nil
	tk.finished = tk.updated
	status := s.Status
	var result json.RawMessage
	switch status {
	case mrtr.Completed:
		b, err := json.Marshal(s.Result)
		switch {
		case err != nil:
			status, tk.cause = mrtr.Failed, fmt.Errorf("encoding the task's result: %w", err)
			tk.errObj = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: tk.cause.Error()}
		case s.Result == nil || b[0] != '{':
			status, tk.cause = mrtr.Failed, fmt.Errorf("the call's result is %s, not an object", b)
			tk.errObj = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: tk.cause.Error()}
		case len(b) > t.o.MaxResultBytes:
			t.stats.tooLarge.Add(1)
			status, tk.cause = mrtr.Failed, ErrResultTooLarge
			tk.errObj = boundError(fmt.Sprintf("%s: %d bytes, past its limit of %d (tasks.max_result_bytes); ask the tool for less (a page, a summary), or ask the operator to raise the limit",
				ErrResultTooLarge, len(b), t.o.MaxResultBytes), "result_too_large", "tasks.max_result_bytes", int64(t.o.MaxResultBytes))
		default:
			result = b
		}
	case mrtr.Failed:
		tk.cause = s.Err
		tk.errObj = t.errorObject(s.Err)
	case mrtr.Cancelled:
		tk.cause = s.Err
		if s.Err != nil {
			tk.message = s.Err.Error()
		}
	}
	t.mu.Lock()
	t.releaseLocked(tk)
	gone := tk.gone // a task Close took out keeps nothing
	if result != nil && !gone {
		n := int64(len(result))
		t.kept += n
		t.keptBy[tk.owner] += n
		tk.size = n
		tk.result = result
	}
	t.mu.Unlock()
	if status == mrtr.Failed {
		tk.message = "failed: " + tk.errObj.Message // the extension: a failed task SHOULD say why
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
	// Last, so that a task no longer counted as running is counted with
	// its outcome and has given back its reservation.
	t.stats.running.Add(-1)
	if tk.timer != nil {
		tk.timer.Stop()
	}
	if !gone {
		tk.timer = time.AfterFunc(t.o.Keep, tk.forget)
	}
}

// releaseLocked gives back the room tk reserved for its result, once:
// when it ends, or when it leaves the table, whichever comes first.
func (t *Table) releaseLocked(tk *task) {
	if tk.reserved == 0 {
		return
	}
	t.reserved -= tk.reserved
	if t.reservedBy[tk.owner] -= tk.reserved; t.reservedBy[tk.owner] <= 0 {
		delete(t.reservedBy, tk.owner)
	}
	tk.reserved = 0
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
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
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
	t.mu.Lock()
	removed := t.removeLocked(tk)
	t.mu.Unlock()
	if removed {
		t.stats.expired.Add(1)
	}
	tk.drop()
}

// drop lets go of what a forgotten task holds: its outcome, and its
// listeners (which let go of it), so that nothing keeps its result
// beyond the events already buffered for a listener.
func (tk *task) drop() {
	tk.mu.Lock()
	subs := tk.subs
	tk.subs, tk.result, tk.inputs, tk.errObj = nil, nil, nil, nil
	tk.mu.Unlock()
	for l := range subs {
		l.forget(tk)
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
	if t.keptBy[tk.owner] -= tk.size; t.keptBy[tk.owner] <= 0 {
		delete(t.keptBy, tk.owner)
	}
	t.releaseLocked(tk)
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
// tasks/update. Each answer to an outstanding key goes to the plugin at
// once, and the key leaves the task's inputRequests; the task stays
// input_required while other keys are outstanding. Answers to keys that
// are not outstanding (never issued, already answered, or of a task no
// longer waiting) are ignored. An answer of the wrong shape for its
// request is an error (mrtr's *ResponseError, invalid params), and no
// answer of that update is delivered. A tasks/get after Update returns
// reads its effect.
func (t *Table) Update(o Owner, id string, responses map[string]json.RawMessage) error {
	tk, err := t.lookup(o, id)
	if err != nil {
		return err
	}
	tk.mu.Lock()
	c := tk.call
	tk.mu.Unlock()
	if c == nil {
		return nil // final: nothing outstanding
	}
	n, err := c.Answer(responses)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	if n > 0 {
		tk.sync()
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
	if c != nil && c.Stop(ErrCancelled) {
		tk.sync()
	}
	return nil
}

// Drain ends the running tasks, for a shutdown: no call becomes a task
// any more (its request waits for it instead); the running tasks may
// finish until ctx ends, and those still running then are cancelled
// (ErrDraining), so that every task has a final status that tasks/get
// reads for as long as the server still answers. Give ctx the drain
// timeout less the time clients need to read the outcome. Drain returns
// when every task is final, at the latest when ctx ends (the
// cancellations take no waiting), with how many tasks it cancelled.
func (t *Table) Drain(ctx context.Context) int {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	done := make(chan struct{})
	go func() {
		t.running.Wait() // admit adds no more: closed
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
		if c == nil {
			continue
		}
		if c.Stop(ErrDraining) {
			n++
		}
		tk.sync() // final now: tasks/get reads it once Drain returns
	}
	t.stats.drained.Add(uint64(n))
	return n
}

// Close drains at once (every running task is cancelled), forgets every
// task and closes every listener.
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
		tk.mu.Unlock()
		t.mu.Lock()
		t.removeLocked(tk)
		t.mu.Unlock()
		tk.drop()
	}
	t.mu.Lock()
	ls := make([]*Listener, 0, len(t.listeners))
	for l := range t.listeners {
		ls = append(ls, l)
	}
	t.mu.Unlock()
	for _, l := range ls {
		l.Close()
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
	Tasks         int    // tasks kept now, running or finished
	Running       int64  // of those, not final (working or input_required)
	InputRequired int64  // of those, waiting for tasks/update
	KeptBytes     int64  // bytes of the kept results
	ReservedBytes int64  // room the running tasks hold for their results
	Listeners     int    // listeners now
	Created       uint64 // calls that became tasks
	Completed     uint64 // tasks that ended completed
	Failed        uint64 // failed (too large results included)
	Cancelled     uint64 // cancelled (tasks/cancel, drain, max run, input never answered)
	Expired       uint64 // finished tasks forgotten after Options.Keep
	CapFallbacks  uint64 // calls past their threshold answered directly at a cap
	TooLarge      uint64 // results past MaxResultBytes
	// KeptFull and KeptFullOwner count the calls past their threshold
	// answered directly because the kept results and the reservations
	// left no room for one more result: the server's (MaxKeptBytes), and
	// the owner's (MaxKeptBytesPerOwner).
	KeptFull       uint64
	KeptFullOwner  uint64
	Unknown        uint64 // lookups of ids unknown or not the caller's
	Drained        uint64 // tasks cancelled by Drain
	DroppedEvents  uint64 // events a listener's buffer had no room for
	ListenRefusals uint64 // listeners refused at a cap
}

// Stats returns the current gauges and counters.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	n, kept, reserved, listeners := len(t.tasks), t.kept, t.reserved, len(t.listeners)
	t.mu.Unlock()
	s := &t.stats
	return Stats{
		Tasks: n, Running: s.running.Load(), InputRequired: s.inputRequired.Load(), KeptBytes: kept, ReservedBytes: reserved, Listeners: listeners,
		Created: s.created.Load(), Completed: s.completed.Load(), Failed: s.failed.Load(), Cancelled: s.cancelled.Load(),
		Expired: s.expired.Load(), CapFallbacks: s.capFallbacks.Load(), TooLarge: s.tooLarge.Load(), KeptFull: s.keptFull.Load(), KeptFullOwner: s.keptFullOwner.Load(),
		Unknown: s.unknown.Load(), Drained: s.drained.Load(), DroppedEvents: s.dropped.Load(), ListenRefusals: s.listenRefusals.Load(),
	}
}

// boundError is the JSON-RPC error of a task failed at a bound, with the
// bound in its data: {"reason", "setting", "limit"}.
func boundError(msg, reason, setting string, limit int64) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"reason": reason, "setting": setting, "limit": limit})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: data}
}
