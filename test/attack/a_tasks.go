package main

// Issue 25, item 7: attacks on the tasks extension
// (io.modelcontextprotocol/tasks) of 2026-07-28 clients. Each serves the
// mrtr test plugin (its sleep_always tool is a task at once: it sleeps
// ms, then with ask elicits a name through tasks/get and tasks/update,
// and answers pad_kib KiB of padding) as serve26 does, and attacks the
// task table: other callers' and guessed ids (25.1), a flood of
// tasks/update (25.2), results past the kept bounds (25.3), and the caps
// on tasks with cancels of finished ones (25.4).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(
		&attack{
			id: "25.1", name: "tasks-ids",
			attempt: "Bearer tokens: bob (and carol) send tasks/get, tasks/update (with alice's input key and an answer) and tasks/cancel for alice's input_required task, and follow it with subscriptions/listen; alice sends them with guessed ids: random, truncated, a character changed (random part, MAC, last), another replica's, upper-cased, doubled, 64 KiB, non-ASCII, empty",
			run:     tasksIDs,
		},
		&attack{
			id: "25.2", name: "tasks-update-flood",
			attempt: "One anonymous client sends thousands of tasks/update (4 at a time, for 3,000 or 5 s) to its input_required task and its working one: never-issued keys, 200 keys at once, wrong answers to the real key; then 8 right answers to the real key at once; then 6 tasks sent 8 answers, 4 cancels and 8 tasks/get each at once; another client calls a tool meanwhile",
			run:     tasksUpdateFlood,
		},
		&attack{
			id: "25.3", name: "tasks-result-size",
			attempt: "tasks.max_result_bytes 64 KiB, max_kept_bytes 512 KiB, max_kept_bytes_per_client 64 KiB: anonymous tasks from 6 addresses return 1 MiB each, 6 at once, 4 times; then one client's two calls of 40 KiB each (past its kept bound together); another client's one of 40 KiB; then 7 more addresses keep 60 KiB each, one after another, and a 10th client calls for 40 KiB",
			run:     tasksResultSize,
		},
		&attack{
			id: "25.4", name: "tasks-caps-cancel",
			attempt: "tasks.max_tasks 6, max_tasks_per_client 3, keep 3 s: one anonymous client makes 4 tasks, another 3 (one completed, one failed, one input_required), a third one; another client reads and cancels the first's task by its id; tasks/cancel of completed, failed and cancelled tasks, twice, and of a forgotten one",
			run:     tasksCapsCancel,
		},
	)
}

// tasksExt is the extension's name in the client's capabilities.
const tasksExt = "io.modelcontextprotocol/tasks"

// tasksMeta is a well-behaved client's _meta with the tasks extension
// declared.
func tasksMeta() map[string]any {
	m := defaultMeta()
	caps := maps.Clone(m[keyCaps].(map[string]any))
	caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
	m[keyCaps] = caps
	return m
}

// callTask is a tools/call of a client that declares the extension.
func callTask(tool string, args map[string]any) r26 {
	return r26{method: "tools/call", params: callArgs(tool, args), meta: tasksMeta(), ext: true}
}

// runMS is how long a sleep_always call that asks nothing runs: a call
// that has ended when its request looks is answered directly, even for a
// tool whose calls are tasks at once (the extension allows it), so one
// that must become a task runs a while.
const runMS = 250

// startTask calls tool as callTask does, and returns the task's id: the
// answer must be a task.
func (c *c26) startTask(tool string, args map[string]any) string {
	ans := c.do(callTask(tool, args))
	id, _ := ans.result()["taskId"].(string)
	if ans.err != nil || ans.resultType() != "task" || id == "" {
		c.a.Fatalf("%s %v: %v; want a task", tool, args, ans)
	}
	return id
}

// taskReq is a tasks/* request for id with more params, Mcp-Name set to
// the id (in the Base64 form when a header cannot carry it as it is, or
// it is empty).
func taskReq(method, id string, more map[string]any) r26 {
	params := map[string]any{"taskId": id}
	maps.Copy(params, more)
	name := id
	if id == "" || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		name = b64(id)
	}
	return r26{method: method, params: params, meta: tasksMeta(), header: map[string]string{"Mcp-Name": name}, ext: true}
}

func (c *c26) task(method, id string, more map[string]any) a26 {
	return c.do(taskReq(method, id, more))
}

// update is the params of a tasks/update with answers.
func update(answers map[string]any) map[string]any { return map[string]any{"inputResponses": answers} }

// view reads the task's view with tasks/get: it must be one.
func (c *c26) view(id string) map[string]any {
	ans := c.task("tasks/get", id, nil)
	if ans.err != nil || ans.code() != 0 || ans.resultType() != "complete" {
		c.a.Fatalf("tasks/get %s: %v", firstN(id, 12), ans)
	}
	return ans.result()
}

// await polls the task until it has status (a final other status ends
// the attack) and returns its view.
func (c *c26) await(id, status string, limit time.Duration) map[string]any {
	var v map[string]any
	c.a.Until(limit, fmt.Sprintf("task %s %s", firstN(id, 12), status), func() bool {
		v = c.view(id)
		s, _ := v["status"].(string)
		if s != status && (s == "completed" || s == "failed" || s == "cancelled") {
			c.a.Fatalf("task %s: %s, want %s: %s", firstN(id, 12), s, status, firstN(fmt.Sprint(v), 300))
		}
		return s == status
	})
	return v
}

// inputKeys is the keys of a view's inputRequests, sorted.
func inputKeys(v map[string]any) []string {
	ir, _ := v["inputRequests"].(map[string]any)
	return slices.Sorted(maps.Keys(ir))
}

// slept is what the sleep tool answered in a completed task's result.
type slept struct {
	Nonce   string         `json:"nonce"`
	MS      int64          `json:"slept_ms"`
	Content map[string]any `json:"content"`
	Pad     string         `json:"pad"`
}

// sleptOf decodes a completed task's view's result.
func sleptOf(v map[string]any) (slept, bool) {
	var out slept
	res, _ := v["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return out, false
	}
	c, _ := content[0].(map[string]any)
	text, _ := c["text"].(string)
	return out, json.Unmarshal([]byte(text), &out) == nil && out.Nonce != ""
}

// errorOf is an error answer as a client sees it: its HTTP status and its
// error object (code, message, data), byte for byte.
func errorOf(ans a26) string {
	if ans.err != nil || ans.msg == nil {
		return ans.String()
	}
	e, _ := json.Marshal(ans.msg["error"])
	return fmt.Sprintf("HTTP %d %s", ans.status, e)
}

// taskError is a failed task's error object: its code, message, and the
// data's reason and setting.
func taskError(v map[string]any) (code int, msg, reason, setting string) {
	e, _ := v["error"].(map[string]any)
	c, _ := e["code"].(float64)
	msg, _ = e["message"].(string)
	data, _ := e["data"].(map[string]any)
	reason, _ = data["reason"].(string)
	setting, _ = data["setting"].(string)
	return int(c), msg, reason, setting
}

// randomID is a made-up id of a task id's shape: two 16-byte halves in
// unpadded base64url.
func randomID() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:16]) + "." + base64.RawURLEncoding.EncodeToString(b[16:])
}

// percentile returns the p-th percentile (0..100) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// listenTasks opens a subscriptions/listen stream that follows ids, as
// c, and reads it for wait after its acknowledgement: the task ids the
// server acknowledged and the notifications/tasks it sent meanwhile.
func (c *c26) listenTasks(ids []string, wait time.Duration) (acked []string, notes []map[string]any) {
	ctx, cancel := context.WithTimeout(c.a.ctx, 15*time.Second)
	defer cancel()
	params := map[string]any{"_meta": tasksMeta(), "notifications": map[string]any{"taskIds": ids}}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.seq.Add(1), "method": "subscriptions/listen", "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		c.a.Fatalf("%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v2026)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.a.Fatalf("subscriptions/listen: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		c.a.Fatalf("subscriptions/listen: HTTP %d %s", resp.StatusCode, rb)
	}
	msgs := make(chan map[string]any)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			var m map[string]any
			if !ok || json.Unmarshal([]byte(strings.TrimSpace(data)), &m) != nil {
				continue
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	var end <-chan time.Time
	for {
		select {
		case m, ok := <-msgs:
			if !ok && acked != nil {
				return acked, notes // ended by its result: nothing to follow
			}
			if !ok {
				c.a.Fatalf("subscriptions/listen: the stream ended unacknowledged")
			}
			params, _ := m["params"].(map[string]any)
			switch m["method"] {
			case "notifications/subscriptions/acknowledged":
				n, _ := params["notifications"].(map[string]any)
				ids, _ := n["taskIds"].([]any)
				acked = []string{}
				for _, id := range ids {
					acked = append(acked, fmt.Sprint(id))
				}
				end = time.After(wait)
			case "notifications/tasks":
				notes = append(notes, params)
			}
		case <-end:
			return acked, notes
		case <-ctx.Done():
			c.a.Fatalf("subscriptions/listen: no acknowledgement within 15 s")
		}
	}
}

// tasksIDs: 25.1.
func tasksIDs(a *A) {
	dir := a.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	const alice, bob, carol = "alice-0123456789abcdef0123456789abcdef", "bob-0123456789abcdef0123456789abcdef00", "carol-0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("- {id: alice, token: %s, plugins: ['*']}\n- {id: bob, token: %s, plugins: ['*']}\n- {id: carol, token: %s, plugins: ['*']}\n", alice, bob, carol)), 0o600); err != nil {
		a.Fatalf("%v", err)
	}
	p := a.serve26("  auth:\n    tokens_file: "+tokens+"\n", "tasks:\n  keep: 1s\n", "")
	ca, cb, cc := a.raw26(p.url, alice), a.raw26(p.url, bob), a.raw26(p.url, carol)

	// A sound id no longer known: carol's task, finished and forgotten
	// after tasks.keep.
	gone := cc.startTask("sleep_always", map[string]any{"ms": runMS})
	cc.await(gone, "completed", 15*time.Second)
	a.Until(15*time.Second, "carol's finished task forgotten after tasks.keep", func() bool {
		return cc.task("tasks/get", gone, nil).code() == -32602
	})

	// Alice's task, waiting for her answer.
	id := ca.startTask("sleep_always", map[string]any{"ms": 0, "ask": true})
	v := ca.await(id, "input_required", 15*time.Second)
	keys := inputKeys(v)
	if len(keys) != 1 {
		a.Fatalf("alice's task asks %v, want one input request", keys)
	}
	key, updated := keys[0], v["lastUpdatedAt"]
	var own []time.Duration
	for range 5 {
		start := time.Now()
		ca.view(id)
		own = append(own, time.Since(start))
	}

	forged := randomID()
	ref := cb.task("tasks/get", forged, nil)
	a.Check(ref.err == nil && ref.code() == -32602 && ref.status == http.StatusBadRequest, "tasks/get of a made-up id: %v; want HTTP 400 and -32602", ref)
	want := errorOf(ref)
	unknownBefore := a.metric(p, "hangar_tasks_unknown_total")

	// Another principal's requests for alice's task, beside those for a
	// forgotten and a made-up id: the very same answer.
	mallory := update(map[string]any{key: accept(map[string]any{"name": "mallory"})})
	ops := []struct {
		method string
		more   map[string]any
	}{{"tasks/get", nil}, {"tasks/update", mallory}, {"tasks/cancel", nil}}
	others := 0
	for _, op := range ops {
		for _, w := range []struct {
			what string
			c    *c26
			id   string
		}{{"bob, alice's task", cb, id}, {"carol, alice's task", cc, id}, {"bob, carol's forgotten task", cb, gone}, {"bob, a made-up id", cb, forged}} {
			ans := w.c.task(op.method, w.id, op.more)
			others++
			a.Check(errorOf(ans) == want, "%s of %s: %s; want exactly the answer to an unknown id, %s", op.method, w.what, errorOf(ans), want)
		}
	}
	anon := a.raw26(p.url, "").task("tasks/cancel", id, nil)
	a.Check(anon.status == http.StatusUnauthorized, "tasks/cancel of alice's task without a token: %v; want 401", anon)

	// Alice's own requests with guessed ids.
	random, mac, _ := strings.Cut(id, ".")
	mac, replica, _ := strings.Cut(mac, ".")
	other := random + "." + mac + ".r2"
	if replica == "r2" {
		other = random + "." + mac + ".r3"
	}
	guesses := []struct{ what, id string }{
		{"made up, of an id's shape", randomID()},
		{"hers less its last character", id[:len(id)-1]},
		{"her id's random part alone", random},
		{"hers with a character more", id + "A"},
		{"a character of the random part changed", tamper(id, 5)},
		{"a character of the MAC changed", tamper(id, len(random)+5)},
		{"the last character changed", tamper(id, -1)},
		{"naming another replica", other},
		{"upper-cased", strings.ToUpper(id)},
		{"hers twice", id + "." + id},
		{"64 KiB", strings.Repeat("A", 64<<10)},
		{"non-ASCII", "tâche-" + random},
	}
	if replica == "" {
		if pb := paddingBits(id); pb != "" {
			guesses = append(guesses, struct{ what, id string }{"the unused bits of the MAC's last character set", pb})
		}
	}
	var lat []time.Duration
	guessed := 0
	for _, g := range guesses {
		for _, op := range ops {
			start := time.Now()
			ans := ca.task(op.method, g.id, op.more)
			lat = append(lat, time.Since(start))
			guessed++
			a.Check(errorOf(ans) == want, "alice's %s of an id %s: %s; want exactly the answer to an unknown id, %s", op.method, g.what, firstN(errorOf(ans), 300), want)
		}
	}
	// Listening: bob follows alice's, the forgotten and the made-up id;
	// alice follows hers.
	bobAcked, bobNotes := cb.listenTasks([]string{id, gone, forged}, 300*time.Millisecond)
	a.Check(len(bobAcked) == 0 && len(bobNotes) == 0, "bob's subscriptions/listen of alice's task: acknowledged %v, %d notifications/tasks; want none", bobAcked, len(bobNotes))
	aliceAcked, aliceNotes := ca.listenTasks([]string{id, forged}, 300*time.Millisecond)
	a.Check(slices.Equal(aliceAcked, []string{id}) && len(aliceNotes) == 1 && aliceNotes[0]["status"] == "input_required",
		"alice's subscriptions/listen of her task and a made-up id: acknowledged %v, notifications/tasks %v; want hers alone, input_required", aliceAcked, aliceNotes)
	empty := ca.task("tasks/get", "", nil)
	a.Check(empty.code() == -32602 && empty.status == http.StatusBadRequest, "tasks/get of an empty id: %v; want HTTP 400 and -32602", empty)
	unknown := a.metric(p, "hangar_tasks_unknown_total") - unknownBefore

	// Alice's task: as it was, and hers to finish.
	after := ca.view(id)
	a.Check(after["status"] == "input_required" && slices.Equal(inputKeys(after), keys) && after["lastUpdatedAt"] == updated,
		"alice's task after the others' requests: %s; want input_required as before (%v, lastUpdatedAt %v)", firstN(fmt.Sprint(after), 300), keys, updated)
	ok := ca.task("tasks/update", id, update(map[string]any{key: accept(map[string]any{"name": "alice"})}))
	a.Check(ok.err == nil && ok.code() == 0, "alice's tasks/update: %v", ok)
	out, _ := sleptOf(ca.await(id, "completed", 15*time.Second))
	a.Check(out.Content["name"] == "alice", "alice's task completed with %+v; want her answer, alice", out)

	a.Figure("the answer to an unknown id", "%s", want)
	a.Figure("bob's and carol's tasks/get, tasks/update, tasks/cancel of alice's task, of a forgotten and a made-up id", "%d requests, each answered exactly as an unknown id", others)
	a.Figure("alice's requests with guessed ids", "%d (%d kinds × 3 methods): refused as unknown, median %v, slowest %v (her own tasks/get: median %v)",
		guessed, len(guesses), round(percentile(lat, 50)), round(percentile(lat, 100)), round(percentile(own, 50)))
	a.Figure("subscriptions/listen following alice's task", "bob's acknowledged %v and got %d notifications/tasks; alice's acknowledged her id alone and got its state", bobAcked, len(bobNotes))
	a.Figure("hangar_tasks_unknown_total", "+%.0f", unknown)
	a.Check(unknown >= float64(others+guessed-3*len(ops)), "hangar_tasks_unknown_total rose by %.0f for %d requests of unknown ids", unknown, others+guessed)
	a.Check(percentile(lat, 100) < 5*time.Second, "a guessed id took %v to refuse", percentile(lat, 100))
	a.Result("other principals' and guessed ids got the unknown id's answer byte for byte; alice's task was untouched and completed with her answer")
}

// sampler calls the echo tool every interval, as another client, and
// records the latency of each call.
type sampler struct {
	mu   sync.Mutex
	lat  []time.Duration
	fail []string
	stop chan struct{}
	done chan struct{}
}

func (a *A) sampler(c *c26, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-a.ctx.Done():
				return
			case <-time.After(every):
			}
			start := time.Now()
			ans := c.do(r26{method: "tools/call", params: callArgs("echo", map[string]any{"text": "bystander"})})
			d := time.Since(start)
			s.mu.Lock()
			if ans.err != nil || ans.text() != "bystander" {
				s.fail = append(s.fail, ans.String())
			} else {
				s.lat = append(s.lat, d)
			}
			s.mu.Unlock()
		}
	}()
	a.Cleanup(s.end)
	return s
}

// cut returns the latencies recorded since the last cut.
func (s *sampler) cut() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lat
	s.lat = nil
	return l
}

func (s *sampler) end() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// tasksUpdateFlood: 25.2.
func tasksUpdateFlood(a *A) {
	p := a.serve26("", "", "")
	c := a.raw26(p.url, "")
	by := a.raw26(p.url, "")
	by.hc = a.from("127.0.0.2")
	smp := a.sampler(by, 20*time.Millisecond)

	asking := c.startTask("sleep_always", map[string]any{"ms": 0, "ask": true})
	working := c.startTask("sleep_always", map[string]any{"ms": 4000})
	v := c.await(asking, "input_required", 15*time.Second)
	keys := inputKeys(v)
	if len(keys) != 1 {
		a.Fatalf("the task asks %v, want one input request", keys)
	}
	key := keys[0]
	a.Until(30*time.Second, "the other client's first calls", func() bool {
		smp.mu.Lock()
		defer smp.mu.Unlock()
		return len(smp.lat) >= 3
	})
	smp.cut()
	a.Sleep(time.Second)
	base := smp.cut()
	rss0, cpu0 := p.rss(), p.cpu()

	many := map[string]any{}
	for i := range 200 {
		many[fmt.Sprintf("never-issued-%d", i)] = accept(map[string]any{"name": "x"})
	}
	kinds := []struct {
		what string
		id   string
		r    func(i int) map[string]any
		code int
	}{
		{"a never-issued key", asking, func(i int) map[string]any {
			return update(map[string]any{fmt.Sprintf("k%d", i): accept(map[string]any{"name": "mallory"})})
		}, 0},
		{"200 never-issued keys", asking, func(int) map[string]any { return update(many) }, 0},
		{"the real key, action maybe", asking, func(int) map[string]any {
			return update(map[string]any{key: map[string]any{"action": "maybe"}})
		}, -32602},
		{"the real key, content against the schema", asking, func(int) map[string]any {
			return update(map[string]any{key: accept(map[string]any{"name": 5})})
		}, -32602},
		{"the real key, to the working task", working, func(int) map[string]any {
			return update(map[string]any{key: accept(map[string]any{"name": "mallory"})})
		}, 0},
	}
	const total, workers = 3000, 4
	var sent, wrong atomic.Int64
	var mu sync.Mutex
	var wrongs []string
	deadline := time.Now().Add(5 * time.Second)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) && a.ctx.Err() == nil {
				i := int(sent.Add(1))
				if i > total {
					return
				}
				k := kinds[i%len(kinds)]
				ans := c.task("tasks/update", k.id, k.r(i))
				if ans.err != nil || ans.code() != k.code {
					wrong.Add(1)
					mu.Lock()
					if len(wrongs) < 3 {
						wrongs = append(wrongs, fmt.Sprintf("%s: %v", k.what, ans))
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	n := min(sent.Load(), total)
	flood := smp.cut()
	rss1, cpu1 := p.rss(), p.cpu()
	smp.end()

	// The task waits as before; then 8 right answers at once: one is
	// delivered, the others ignored.
	v = c.view(asking)
	a.Check(v["status"] == "input_required" && slices.Equal(inputKeys(v), keys), "the input_required task after the flood: %s; want it waiting for %v as before", firstN(fmt.Sprint(v), 300), keys)
	names := make([]string, 8)
	var acks atomic.Int64
	for i := range names {
		names[i] = fmt.Sprintf("answer-%d", i)
		wg.Go(func() {
			if ans := c.task("tasks/update", asking, update(map[string]any{key: accept(map[string]any{"name": names[i]})})); ans.err == nil && ans.code() == 0 {
				acks.Add(1)
			}
		})
	}
	wg.Wait()
	out, _ := sleptOf(c.await(asking, "completed", 15*time.Second))
	a.Check(acks.Load() == 8 && slices.Contains(names, fmt.Sprint(out.Content["name"])), "8 right answers at once: %d acknowledged, the task completed with %+v", acks.Load(), out)
	late := c.task("tasks/update", asking, update(map[string]any{key: accept(map[string]any{"name": "late"})}))
	a.Check(late.err == nil && late.code() == 0, "an answer to the completed task: %v; want it acknowledged and ignored", late)
	if again, _ := sleptOf(c.view(asking)); again.Content["name"] != out.Content["name"] {
		a.Errorf("the completed task's result changed after a late answer: %+v, was %+v", again, out)
	}
	w, _ := sleptOf(c.await(working, "completed", 30*time.Second))
	a.Check(w.MS == 4000, "the working task completed with %+v; want slept_ms 4000", w)

	// Answers racing cancels: 6 tasks waiting for input, each sent 8
	// right answers, 4 cancels and 8 tasks/get at once. Each ends
	// completed with one of the answers or cancelled, and nothing is left
	// running.
	racing := make([]string, 6)
	for i := range racing {
		racing[i] = c.startTask("sleep_always", map[string]any{"ms": 0, "ask": true})
	}
	var bad atomic.Int64
	for i, id := range racing {
		k := inputKeys(c.await(id, "input_required", 15*time.Second))
		if len(k) != 1 {
			a.Fatalf("racing task %d asks %v", i, k)
		}
		for j := range 20 {
			wg.Go(func() {
				var ans a26
				switch {
				case j%5 == 0:
					ans = c.task("tasks/cancel", id, nil)
				case j%5 < 3:
					ans = c.task("tasks/update", id, update(map[string]any{k[0]: accept(map[string]any{"name": fmt.Sprintf("race-%d", j)})}))
				default:
					ans = c.task("tasks/get", id, nil)
				}
				if ans.err != nil || ans.code() != 0 {
					bad.Add(1)
				}
			})
		}
	}
	wg.Wait()
	ends := map[string]int{}
	for _, id := range racing {
		var st string
		a.Until(15*time.Second, "a racing task final", func() bool {
			v := c.view(id)
			st, _ = v["status"].(string)
			if st == "completed" {
				out, _ := sleptOf(v)
				a.Check(strings.HasPrefix(fmt.Sprint(out.Content["name"]), "race-"), "a racing task completed with %+v", out)
			}
			return st == "completed" || st == "cancelled"
		})
		ends[st]++
	}
	a.Check(bad.Load() == 0, "%d of the racing requests were refused", bad.Load())
	a.Until(15*time.Second, "no task running", func() bool { return a.metric(p, "hangar_tasks_running") == 0 })

	rate := float64(n) / took.Seconds()
	a.Figure("tasks/update sent", "%d in %v (%.0f/s, %d at a time), %d answered otherwise than expected %v", n, round(took), rate, workers, wrong.Load(), wrongs)
	a.Figure("6 tasks sent 8 answers, 4 cancels and 8 tasks/get each at once", "ended %v; none left running", ends)
	a.Figure("the server", "RSS %.0f → %.0f MiB, CPU %v (%.0f µs per update)", rss0, rss1, round(cpu1-cpu0), float64((cpu1-cpu0).Microseconds())/float64(n))
	a.Figure("another client's echo", "p50 %v, p90 %v, slowest %v over %d calls before; p50 %v, p90 %v, slowest %v over %d calls during the flood",
		round(percentile(base, 50)), round(percentile(base, 90)), round(percentile(base, 100)), len(base),
		round(percentile(flood, 50)), round(percentile(flood, 90)), round(percentile(flood, 100)), len(flood))
	smp.mu.Lock()
	a.Check(len(smp.fail) == 0, "another client's echo failed: %v", smp.fail)
	smp.mu.Unlock()
	a.Check(wrong.Load() == 0, "%d updates answered otherwise than expected: %v", wrong.Load(), wrongs)
	a.Check(n >= 500, "only %d updates in %v", n, took)
	a.Check(rss1-rss0 < 64, "RSS grew %.0f MiB", rss1-rss0)
	a.Check(cpu1-cpu0 < time.Duration(n)*5*time.Millisecond, "the server's CPU: %v for %d updates", cpu1-cpu0, n)
	// Latency under a flood on two shared cores: bounded, not equal.
	limit := 20*percentile(base, 90) + 2*time.Second
	a.Check(len(flood) > 0 && percentile(flood, 90) < limit, "another client's echo during the flood: p90 %v (%d calls); want under %v", percentile(flood, 90), len(flood), limit)
	a.Result("%d tasks/update (%.0f/s) changed nothing: the task took the one right answer after them and completed, the working one too; RSS %+.0f MiB; another client's echo p90 %v (before %v)",
		n, rate, rss1-rss0, round(percentile(flood, 90)), round(percentile(base, 90)))
}

// tasksResultSize: 25.3.
func tasksResultSize(a *A) {
	p := a.serve26("", "tasks:\n  max_result_bytes: 64KiB\n  max_kept_bytes: 512KiB\n  max_kept_bytes_per_client: 64KiB\n  max_tasks_per_client: 64\n", "")
	const maxKept = 512 << 10
	c := a.raw26(p.url, "")
	other := a.raw26(p.url, "")
	other.hc = a.from("127.0.0.2")
	// Rounds of 6 results of 1 MiB at once, from 6 addresses (a task
	// holds room for max_result_bytes, which is the client's whole kept
	// bound: one task at a time each): each fails its task. The first
	// round starts the plugin's instances (their memory is the plugin's,
	// bounded by its limits); the next ones measure what the results
	// leave behind.
	big := make([]*c26, 6)
	for i := range big {
		big[i] = a.raw26(p.url, "")
		big[i].hc = a.from(fmt.Sprintf("127.0.0.%d", 11+i))
	}
	var msg string
	oversized := func() {
		ids := make([]string, len(big))
		for i, b := range big {
			ids[i] = b.startTask("sleep_always", map[string]any{"ms": runMS, "pad_kib": 1024})
		}
		for i, id := range ids {
			v := big[i].await(id, "failed", 30*time.Second)
			code, m, reason, setting := taskError(v)
			msg = m
			a.Check(code == -32603 && reason == "result_too_large" && setting == "tasks.max_result_bytes" && strings.Contains(m, "tasks.max_result_bytes"),
				"a task of a 1 MiB result: %s; want failed, error -32603 naming tasks.max_result_bytes", firstN(fmt.Sprint(v["error"]), 300))
			a.Check(v["result"] == nil, "a failed task has a result")
		}
	}
	rss0 := p.rss()
	oversized()
	rss1 := p.rss()
	for range 3 {
		oversized()
	}
	rss2 := p.rss()
	tooLarge := a.metric(p, "hangar_tasks_refusals_total", `reason="result_too_large"`)
	a.Check(tooLarge == 24, "hangar_tasks_refusals_total{reason=\"result_too_large\"} %.0f, want 24", tooLarge)

	// direct calls for a result of kib KiB that must be answered
	// directly, with the whole result: no room for it to be kept.
	direct := func(who string, c *c26, kib int) time.Duration {
		t0 := time.Now()
		ans := c.do(callTask("sleep_always", map[string]any{"ms": runMS, "pad_kib": kib}))
		took := since(t0)
		var out slept
		if ans.resultType() == "complete" {
			json.Unmarshal([]byte(ans.text()), &out)
		}
		a.Check(ans.err == nil && ans.resultType() == "complete" && len(out.Pad) == kib<<10 && out.MS == runMS,
			"%s: %s; want the call answered directly with its %d KiB result (before the fix: a task that failed after its work)", who, firstN(ans.String(), 300), kib)
		return took
	}

	// Two of 40 KiB: the first is kept; the second would take the client
	// past its kept bound (max_kept_bytes_per_client) with the first: it
	// is answered directly, with its result. Another client's is kept.
	first := c.startTask("sleep_always", map[string]any{"ms": runMS, "pad_kib": 40})
	kept, _ := sleptOf(c.await(first, "completed", 15*time.Second))
	secondTook := direct("the client's second call of a 40 KiB result", c, 40)
	theirs := other.startTask("sleep_always", map[string]any{"ms": runMS, "pad_kib": 40})
	o, _ := sleptOf(other.await(theirs, "completed", 15*time.Second))
	a.Check(len(o.Pad) == 40<<10, "another client's result of 40 KiB: %d bytes of padding", len(o.Pad))
	again, _ := sleptOf(c.view(first))
	a.Check(len(kept.Pad) == 40<<10 && again.Pad == kept.Pad && again.Nonce == kept.Nonce, "the client's kept result: %d bytes, then %d", len(kept.Pad), len(again.Pad))
	keptBytes := a.metric(p, "hangar_tasks_kept_bytes")
	fullClient := a.metric(p, "hangar_tasks_refusals_total", `reason="kept_full_client"`)
	a.Check(keptBytes > 80<<10 && keptBytes < 96<<10, "hangar_tasks_kept_bytes %.0f; want the two 40 KiB results", keptBytes)
	a.Check(fullClient == 1, "hangar_tasks_refusals_total{reason=\"kept_full_client\"} %.0f, want 1", fullClient)

	// Clients of 7 more addresses keep 60 KiB each, one after another,
	// under their own bound: the server's kept results come near
	// max_kept_bytes, with no room left for one more result. The next
	// client's call is answered directly, with its result (before the
	// fix: a task that did its work, then failed with kept_full). Kept
	// and reserved bytes, scraped together meanwhile, stay within
	// max_kept_bytes.
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			k, r := a.keptReserved(p)
			if v := int64(k + r); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	for i := range 7 {
		f := a.raw26(p.url, "")
		f.hc = a.from(fmt.Sprintf("127.0.0.%d", 3+i))
		f.await(f.startTask("sleep_always", map[string]any{"ms": runMS, "pad_kib": 60}), "completed", 30*time.Second)
	}
	full := a.metric(p, "hangar_tasks_kept_bytes")
	victim := a.raw26(p.url, "")
	victim.hc = a.from("127.0.0.10")
	victimTook := direct("a 10th client's call of a 40 KiB result with the server's kept results full", victim, 40)
	close(stop)
	sampler.Wait()
	fullServer := a.metric(p, "hangar_tasks_refusals_total", `reason="kept_full"`)
	after, reserved := a.keptReserved(p)
	created := a.metric(p, "hangar_tasks_created_total")
	failed := a.metric(p, "hangar_tasks_ended_total", `status="failed"`)
	a.Check(fullServer == 1, "hangar_tasks_refusals_total{reason=\"kept_full\"} %.0f, want 1", fullServer)
	a.Check(full > maxKept-64<<10 && full <= maxKept && after == full && reserved == 0, "hangar_tasks_kept_bytes %.0f, then %.0f (reserved %.0f); want within 64 KiB of max_kept_bytes, unchanged", full, after, reserved)
	a.Check(peak.Load() <= maxKept, "kept + reserved bytes reached %d, past max_kept_bytes", peak.Load())
	a.Check(created == 24+2+7 && failed == 24, "hangar_tasks_created_total %.0f, ended_total{failed} %.0f; want 33 and the 24 too large", created, failed)

	a.Figure("4 rounds of 6 tasks of a 1 MiB result at once", "failed: %q", firstN(msg, 200))
	a.Figure("the client's second call of a 40 KiB result", "answered directly with its whole result after %v (hangar_tasks_refusals_total{reason=\"kept_full_client\"} %.0f); before the fix: a task that did its work, then failed with kept_full_client", secondTook, fullClient)
	a.Figure("results kept", "%.0f bytes (hangar_tasks_kept_bytes): the client's first and another client's", keptBytes)
	a.Figure("7 more client addresses keeping 60 KiB each", "kept %.0f bytes of 524288 (max_kept_bytes 512 KiB); kept + reserved peaked at %d; a 10th client's call of a 40 KiB result then answered directly with it after %v (refusals{kept_full} %.0f); before the fix: its task failed with kept_full after its work", full, peak.Load(), victimTook, fullServer)
	a.Figure("the server's RSS", "%.0f MiB before, %.0f after the first round (6 instances started), %.0f after 3 more", rss0, rss1, rss2)
	a.Check(rss2-rss1 < 48, "RSS grew %.0f MiB over 3 rounds of 1 MiB results, once the instances had started", rss2-rss1)
	a.Result("results past max_result_bytes failed their tasks with an error naming the setting; calls with no room left for their result under the client's kept bound or the server's were answered directly with it, no work lost; kept + reserved bytes stayed within max_kept_bytes (%d at most; %.0f kept)", peak.Load(), full)
}

// keptReserved returns hangar_tasks_kept_bytes and
// hangar_tasks_reserved_bytes of one scrape: the server reads them
// together.
func (a *A) keptReserved(p *proc) (kept, reserved float64) {
	text := a.opsMetrics(p)
	kept, _ = metricSum(text, "hangar_tasks_kept_bytes")
	reserved, found := metricSum(text, "hangar_tasks_reserved_bytes")
	if !found {
		a.Fatalf("no hangar_tasks_reserved_bytes in /metrics")
	}
	return kept, reserved
}

// tasksCapsCancel: 25.4.
func tasksCapsCancel(a *A) {
	p := a.serve26("", "tasks:\n  max_tasks: 6\n  max_tasks_per_client: 3\n  keep: 3s\n  max_result_bytes: 16KiB\n", "{max_instances: 10}")
	ca, cb, cc := a.raw26(p.url, ""), a.raw26(p.url, ""), a.raw26(p.url, "")
	cb.hc, cc.hc = a.from("127.0.0.2"), a.from("127.0.0.3")
	capped := func(what string, c *c26) {
		t0 := time.Now()
		ans := c.do(callTask("sleep_always", map[string]any{"ms": 300}))
		out := slept{}
		if ans.resultType() == "complete" {
			json.Unmarshal([]byte(ans.text()), &out)
		}
		a.Check(ans.err == nil && ans.resultType() == "complete" && out.MS == 300, "%s: %v; want the call answered directly at the cap", what, ans)
		a.Logf("%s: answered directly after %v", what, since(t0))
	}

	// The first client's 3 tasks wait for input: its fourth call is
	// answered directly.
	var mine []string
	for range 3 {
		id := ca.startTask("sleep_always", map[string]any{"ms": 0, "ask": true})
		ca.await(id, "input_required", 15*time.Second)
		mine = append(mine, id)
	}
	// Its fourth, on a connection of its own: a client is an address, not
	// a connection.
	again := a.raw26(p.url, "")
	again.hc = a.from("127.0.0.1")
	capped("the first client's fourth call, on a new connection", again)
	// Another client still gets its 3: completed, failed, input_required.
	done := cb.startTask("sleep_always", map[string]any{"ms": runMS, "pad_kib": 1})
	bad := cb.startTask("sleep_always", map[string]any{"ms": runMS, "pad_kib": 32})
	waits := cb.startTask("sleep_always", map[string]any{"ms": 0, "ask": true})
	vDone := cb.await(done, "completed", 15*time.Second)
	vBad := cb.await(bad, "failed", 15*time.Second)
	cb.await(waits, "input_required", 15*time.Second)
	capped("a third client's call at max_tasks", cc)
	atCap := a.metric(p, "hangar_tasks")
	caps := a.metric(p, "hangar_tasks_refusals_total", `reason="cap"`)
	a.Check(atCap == 6 && caps == 2, "at the caps: hangar_tasks %.0f, refusals{cap} %.0f; want 6 and 2", atCap, caps)

	// Without authentication the id is the capability: another client
	// reads the first's task with it, and cancels it.
	seen := cb.task("tasks/get", mine[0], nil)
	a.Check(seen.code() == 0 && seen.result()["status"] == "input_required", "another client's tasks/get of the first's task by its id: %v", seen)
	stolen := cb.task("tasks/cancel", mine[0], nil)
	a.Check(stolen.code() == 0 && ca.view(mine[0])["status"] == "cancelled", "another client's tasks/cancel of the first's task by its id: %v", stolen)

	// tasks/cancel of finished tasks, twice: acknowledged, nothing changes.
	ack := func(what, id string, c *c26) {
		for i := range 2 {
			ans := c.task("tasks/cancel", id, nil)
			a.Check(ans.err == nil && ans.code() == 0 && ans.resultType() == "complete", "tasks/cancel %d of %s: %v; want an empty result", i+1, what, ans)
		}
	}
	ack("a completed task", done, cb)
	ack("a failed task", bad, cb)
	ack("a cancelled task", mine[0], ca)
	after := cb.view(done)
	a.Check(after["status"] == "completed" && fmt.Sprint(after["result"]) == fmt.Sprint(vDone["result"]), "the completed task after two cancels: %s", firstN(fmt.Sprint(after), 300))
	after = cb.view(bad)
	a.Check(after["status"] == "failed" && fmt.Sprint(after["error"]) == fmt.Sprint(vBad["error"]), "the failed task after two cancels: %s", firstN(fmt.Sprint(after), 300))
	after = ca.view(mine[0])
	a.Check(after["status"] == "cancelled" && strings.Contains(fmt.Sprint(after["statusMessage"]), "tasks/cancel"), "the cancelled task after two more cancels: %s", firstN(fmt.Sprint(after), 300))
	// The first client cancels the rest and the other answers its own:
	// every task is final, and still counts until tasks.keep.
	for _, id := range mine[1:] {
		ack("a task waiting for input", id, ca)
		ca.await(id, "cancelled", 15*time.Second)
	}
	key := inputKeys(cb.view(waits))
	a.Check(len(key) == 1 && cb.task("tasks/update", waits, update(map[string]any{key[0]: accept(map[string]any{"name": "b"})})).code() == 0, "the other client's answer")
	cb.await(waits, "completed", 15*time.Second)
	capped("the first client's call, its tasks final but kept", ca)

	// After tasks.keep every place is free: each client gets tasks again;
	// a forgotten task is an unknown id.
	t0 := time.Now()
	a.Until(20*time.Second, "every task forgotten after tasks.keep", func() bool { return a.metric(p, "hangar_tasks") == 0 })
	freed := since(t0)
	gone := ca.task("tasks/cancel", mine[1], nil)
	a.Check(gone.code() == -32602 && gone.status == http.StatusBadRequest, "tasks/cancel of a forgotten task: %v; want HTTP 400, -32602", gone)
	for _, c := range []*c26{ca, cc} {
		id := c.startTask("sleep_always", map[string]any{"ms": runMS})
		c.await(id, "completed", 15*time.Second)
	}
	expired := a.metric(p, "hangar_tasks_expired_total")
	cancelled := a.metric(p, "hangar_tasks_ended_total", `status="cancelled"`)
	caps = a.metric(p, "hangar_tasks_refusals_total", `reason="cap"`)
	a.Check(expired == 6 && cancelled == 3 && caps == 3, "hangar_tasks_expired_total %.0f, ended_total{cancelled} %.0f, refusals{cap} %.0f; want 6, 3, 3", expired, cancelled, caps)

	a.Figure("at the caps", "hangar_tasks %.0f; the first client's 4th call and a third client's call answered directly (refusals{cap} %.0f in all)", atCap, caps)
	a.Figure("tasks/cancel twice of completed, failed and cancelled tasks", "acknowledged; status, result and error unchanged")
	a.Figure("places freed", "%v after the last task ended (tasks.keep 3 s); hangar_tasks_expired_total %.0f", freed, expired)
	a.Result("caps held (per client 3, server 6: calls answered directly, not refused); finished tasks freed their places after tasks.keep; cancels of finished tasks changed nothing; without auth another client reached a task only by its id")
}
