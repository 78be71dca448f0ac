package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/tasks"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// The tests of the tasks extension (io.modelcontextprotocol/tasks) at the
// 2026-07-28 edge: raw HTTP and stdio requests of a client that declares
// it, against internal/testplugins/mrtr's sleep tool (which sleeps, may
// ask its client for a name, and sleeps again).

const tasksExt = "io.modelcontextprotocol/tasks"

// taskMeta is the _meta of a client with the extension (and caps).
func taskMeta(caps map[string]any) map[string]any {
	if caps == nil {
		caps = map[string]any{}
	}
	caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
	return modernMeta(caps)
}

// taskServer serves the mrtr plugin (instances of it) with the
// extension, calls becoming tasks after 200 ms.
func taskServer(t *testing.T, fast bool, instances int, m *metrics.Metrics) *modern {
	p := loadPlugin(t, "mrtr", testutil.BuildPlugin(t, "./internal/testplugins/mrtr"), config.Limits{MaxInstances: instances})
	s := newServer(t, &server.Options{DisableFastPath: !fast, Tasks: &tasks.Options{}, TaskAfter: 200 * time.Millisecond, Metrics: m}, server.Mount{Plugin: p})
	return newModern(t, serveHTTP(t, s, nil))
}

// task sends a tasks/* request with Mcp-Name the task's id.
func (c *modern) task(id any, method, taskID string, params map[string]any) *reply {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["taskId"] = taskID
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = taskMeta(nil)
	}
	return c.do(c.request(id, method, params, map[string]string{"Mcp-Name": taskID}))
}

// waitStatus polls tasks/get until the task has status, and returns
// its last answer.
func (c *modern) waitStatus(taskID, status string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := c.task(9, "tasks/get", taskID, nil)
		res := r.result()
		if r.status != 200 || res["resultType"] != "complete" || res["taskId"] != taskID {
			c.t.Fatalf("tasks/get: %s", r)
		}
		if res["status"] == status {
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still %v, want %s: %s", taskID, res["status"], status, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func bothPaths(t *testing.T, f func(t *testing.T, fast bool)) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "go-sdk"}[fast], func(t *testing.T) { f(t, fast) })
	}
}

// TestTasksDiscover: server/discover offers the extension when the server
// has tasks, and not otherwise.
func TestTasksDiscover(t *testing.T) {
	for _, on := range []bool{true, false} {
		o := &server.Options{}
		if on {
			o.Tasks = &tasks.Options{}
		}
		c := newModern(t, serveHTTP(t, newServer(t, o, server.Mount{Plugin: fixture(t)}), nil))
		r := c.post(1, "server/discover", nil)
		caps, _ := r.result()["capabilities"].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		if _, got := ext[tasksExt]; got != on || caps["tools"] == nil {
			t.Errorf("tasks %v: discover: %s", on, r)
		}
		if _, ok := ext["io.modelcontextprotocol/ui"]; !ok {
			t.Errorf("tasks %v: discover lacks the MCP Apps extension: %s", on, r)
		}
	}
}

// TestTasksLongCallOverHTTP: a call that runs past the threshold, of a
// client with the extension, is answered with a task, whose tasks/get
// reaches completed with the tool's result; a client without the
// extension is answered directly, and its tasks/* requests get -32021.
func TestTasksLongCallOverHTTP(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		m := metrics.New("test")
		c := taskServer(t, fast, 2, m)
		r := c.post(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1000}, "_meta": taskMeta(nil)})
		res := r.result()
		id, _ := res["taskId"].(string)
		if r.status != 200 || res["resultType"] != "task" || res["status"] != "working" || id == "" || res["ttlMs"] == nil || res["createdAt"] == nil {
			t.Fatalf("tools/call: %s", r)
		}
		done := c.waitStatus(id, "completed")
		result, _ := done["result"].(map[string]any)
		if b, _ := json.Marshal(result); !strings.Contains(string(b), `slept_ms`) {
			t.Fatalf("completed task: %v", done)
		}

		// Without the extension: the same call is answered directly.
		r = c.post(2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 500}})
		if r.result()["resultType"] != "complete" || !strings.Contains(r.raw, "slept_ms") {
			t.Fatalf("without the extension: %s", r)
		}
		// tasks/get without the extension: -32021, naming it.
		r = c.task(3, "tasks/get", id, map[string]any{"_meta": modernMeta(nil)})
		e, _ := r.answer()["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		req, _ := data["requiredCapabilities"].(map[string]any)
		exts, _ := req["extensions"].(map[string]any)
		if r.errorCode() != -32021 || exts[tasksExt] == nil {
			t.Fatalf("tasks/get without the extension: %s", r)
		}
		// An unknown id: -32602; Mcp-Name not the id: -32020.
		if r := c.task(4, "tasks/get", id+"x", nil); r.errorCode() != -32602 {
			t.Errorf("unknown id: %s", r)
		}
		if r := c.do(c.request(5, "tasks/get", map[string]any{"taskId": id, "_meta": taskMeta(nil)}, map[string]string{"Mcp-Name": "other"})); r.errorCode() != -32020 {
			t.Errorf("Mcp-Name mismatch: %s", r)
		}
		if r := c.do(c.request(6, "tasks/get", map[string]any{"taskId": id, "_meta": taskMeta(nil)}, nil)); r.errorCode() != -32020 {
			t.Errorf("no Mcp-Name: %s", r)
		}
		if r := c.task(8, "tasks/update", id, map[string]any{"inputResponses": "no"}); r.errorCode() != -32602 {
			t.Errorf("tasks/update without an object: %s", r)
		}
		// The metrics count the task.
		body := metricsText(t, m)
		for _, want := range []string{"hangar_tasks_created_total 1", `hangar_tasks_ended_total{status="completed"} 1`, "hangar_tasks_unknown_total 1"} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})
}

// TestTasksInputOverHTTP: a task whose plugin asks its client for input
// goes through input_required, and completes with the answer given by
// tasks/update.
func TestTasksInputOverHTTP(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		c := taskServer(t, fast, 2, nil)
		meta := taskMeta(map[string]any{"elicitation": map[string]any{}})
		r := c.post(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 500, "ask": true}, "_meta": meta})
		id, _ := r.result()["taskId"].(string)
		if r.result()["resultType"] != "task" || id == "" {
			t.Fatalf("tools/call: %s", r)
		}
		in := c.waitStatus(id, "input_required")
		reqs, _ := in["inputRequests"].(map[string]any)
		er, _ := reqs["elicitation-1"].(map[string]any)
		if len(reqs) != 1 || er["method"] != "elicitation/create" {
			t.Fatalf("inputRequests: %v", in)
		}
		// A wrong answer: -32602, and the task still waits.
		if r := c.task(2, "tasks/update", id, map[string]any{"inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "maybe"}}}); r.errorCode() != -32602 {
			t.Fatalf("wrong answer: %s", r)
		}
		r = c.task(3, "tasks/update", id, map[string]any{"inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}})
		if r.status != 200 || r.result()["resultType"] != "complete" || r.answer()["error"] != nil {
			t.Fatalf("tasks/update: %s", r)
		}
		done := c.waitStatus(id, "completed")
		if b, _ := json.Marshal(done["result"]); !strings.Contains(string(b), "Ada") {
			t.Fatalf("completed: %v", done)
		}
	})
}

// TestTasksCancelOverHTTP: tasks/cancel ends the plugin's call: the task
// is cancelled, and the plugin's only instance serves the next call at
// once, not after the cancelled call's 30 s.
func TestTasksCancelOverHTTP(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		c := taskServer(t, fast, 1, nil)
		r := c.post(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 30000}, "_meta": taskMeta(nil)})
		id, _ := r.result()["taskId"].(string)
		if id == "" {
			t.Fatalf("tools/call: %s", r)
		}
		r = c.task(2, "tasks/cancel", id, nil)
		if r.status != 200 || r.result()["resultType"] != "complete" || r.answer()["error"] != nil {
			t.Fatalf("tasks/cancel: %s", r)
		}
		c.waitStatus(id, "cancelled")
		start := time.Now()
		r = c.post(3, "tools/call", map[string]any{"name": "count", "arguments": map[string]any{}})
		if r.result()["resultType"] != "complete" || time.Since(start) > 10*time.Second {
			t.Fatalf("the next call after %v: %s", time.Since(start), r)
		}
		// Cancelling it again changes nothing.
		if r := c.task(4, "tasks/cancel", id, nil); r.answer()["error"] != nil {
			t.Fatalf("second cancel: %s", r)
		}
		c.waitStatus(id, "cancelled")
	})
}

// TestTasksOverStdio: the same over stdio: a task, tasks/get to
// completed; -32021 without the extension.
func TestTasksOverStdio(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		p := loadPlugin(t, "mrtr", testutil.BuildPlugin(t, "./internal/testplugins/mrtr"), config.Limits{MaxInstances: 2})
		s := newServer(t, &server.Options{DisableFastPath: !fast, Tasks: &tasks.Options{}, TaskAfter: 200 * time.Millisecond}, server.Mount{Plugin: p})
		io := newRawIO(t, s)
		ask := func(id int, method string, params map[string]any) map[string]any {
			t.Helper()
			io.write(mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
			timeout := time.After(time.Minute)
			for {
				select {
				case line := <-io.lines:
					var m map[string]any
					if json.Unmarshal([]byte(line), &m) == nil && m["id"] == float64(id) {
						return m
					}
				case <-timeout:
					t.Fatalf("%s: no answer", method)
				}
			}
		}
		m := ask(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 800}, "_meta": taskMeta(nil)})
		res, _ := m["result"].(map[string]any)
		id, _ := res["taskId"].(string)
		if res["resultType"] != "task" || id == "" {
			t.Fatalf("tools/call: %v", m)
		}
		for n := 2; ; n++ {
			m = ask(n, "tasks/get", map[string]any{"taskId": id, "_meta": taskMeta(nil)})
			res, _ = m["result"].(map[string]any)
			if res["status"] == "completed" {
				break
			}
			if res["status"] != "working" || n > 600 {
				t.Fatalf("tasks/get: %v", m)
			}
			time.Sleep(50 * time.Millisecond)
		}
		m = ask(1000, "tasks/get", map[string]any{"taskId": id, "_meta": modernMeta(nil)})
		if e, _ := m["error"].(map[string]any); e["code"] != float64(-32021) {
			t.Fatalf("without the extension: %v", m)
		}
		m = ask(1001, "tasks/cancel", map[string]any{"taskId": "nope", "_meta": taskMeta(nil)})
		if e, _ := m["error"].(map[string]any); e["code"] != float64(-32602) {
			t.Fatalf("unknown id: %v", m)
		}
		m = ask(1002, "tasks/get", map[string]any{"taskId": 5, "_meta": taskMeta(nil)})
		if e, _ := m["error"].(map[string]any); e["code"] != float64(-32602) {
			t.Fatalf("a taskId not a string: %v", m)
		}
	})
}

// metricsText is what m serves at /metrics.
func metricsText(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.String()
}

// TestTasksToolPolicy: a tool says when its calls become tasks
// (pdk.Tool.Task): "always" at once, even a quick call; "never" not even a
// long one; "required" past the threshold (and at once on a retry that
// brings its input), and a client without the extension is refused with
// -32021 before the tool runs, on both paths.
func TestTasksToolPolicy(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		c := taskServer(t, fast, 2, nil)
		call := func(id int, name string, ms int, meta map[string]any) *reply {
			return c.post(id, "tools/call", map[string]any{"name": name, "arguments": map[string]any{"ms": ms}, "_meta": meta})
		}
		// 300 ms: a call that ends before its request looks is answered
		// directly, whatever its policy (the extension allows it), and a
		// call of 0 ms sometimes does under load.
		if r := call(1, "sleep_always", 300, taskMeta(nil)); r.result()["resultType"] != "task" {
			t.Errorf("always, a quick call: %s", r)
		}
		if r := call(2, "sleep_never", 600, taskMeta(nil)); r.result()["resultType"] != "complete" {
			t.Errorf("never, a long call: %s", r)
		}
		if r := call(3, "sleep_required", 600, taskMeta(nil)); r.result()["resultType"] != "task" {
			t.Errorf("required, with the extension: %s", r)
		}
		r := call(4, "sleep_required", 0, modernMeta(nil))
		e, _ := r.answer()["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		req, _ := data["requiredCapabilities"].(map[string]any)
		exts, _ := req["extensions"].(map[string]any)
		if r.errorCode() != -32021 || exts[tasksExt] == nil {
			t.Errorf("required, without the extension: %s", r)
		}
		// required, of a tool that asks at once: input_required over MRTR
		// first, then a task on the retry that brings the answer.
		meta := taskMeta(map[string]any{"elicitation": map[string]any{}})
		r = c.post(6, "tools/call", map[string]any{"name": "sleep_required", "arguments": map[string]any{"ms": 0, "ask": true, "then_ms": 1000}, "_meta": meta})
		if r.result()["resultType"] != "input_required" {
			t.Fatalf("required, asking: %s", r)
		}
		r = c.post(7, "tools/call", map[string]any{"name": "sleep_required", "arguments": map[string]any{"ms": 0, "ask": true, "then_ms": 1000}, "_meta": meta,
			"requestState": r.result()["requestState"], "inputResponses": map[string]any{"elicitation-1": accept("Ada")}})
		if id, _ := r.result()["taskId"].(string); r.result()["resultType"] != "task" || id == "" {
			t.Fatalf("required, the retry: %s", r)
		} else if done := c.waitStatus(id, "completed"); !strings.Contains(fmt.Sprint(done["result"]), "Ada") {
			t.Fatalf("required, the task: %v", done)
		}
		// The default: a quick call is answered directly.
		if r := call(5, "sleep", 0, taskMeta(nil)); r.result()["resultType"] != "complete" {
			t.Errorf("auto, a quick call: %s", r)
		}
	})
}

// listenTasks opens a subscriptions/listen stream for taskIds with meta,
// and returns its messages as they come.
func (c *modern) listenTasks(id any, taskIDs []string, meta map[string]any) <-chan map[string]any {
	c.t.Helper()
	req := c.request(id, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": taskIDs}, "_meta": meta}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(cancel)
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req.WithContext(ctx))
	if err != nil {
		c.t.Fatal(err)
	}
	out := make(chan map[string]any, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			var m map[string]any
			json.NewDecoder(resp.Body).Decode(&m)
			out <- m
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				json.Unmarshal([]byte(data), &m)
				out <- m
			}
		}
	}()
	return out
}

// TestTasksListen: subscriptions/listen with notifications.taskIds, of a
// client with the extension, acknowledges the ids of the tasks it may
// see (not a made-up one), then sends each one's state as
// notifications/tasks at once and at each change, to completed; without
// the extension it is refused with -32021.
func TestTasksListen(t *testing.T) {
	c := taskServer(t, true, 2, nil)
	r := c.post(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": taskMeta(nil)})
	id, _ := r.result()["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call: %s", r)
	}
	ch := c.listenTasks(2, []string{id, "made-up"}, taskMeta(nil))
	ack := next(t, ch, "ack")
	notes, _ := ack["params"].(map[string]any)["notifications"].(map[string]any)
	if ack["method"] != "notifications/subscriptions/acknowledged" || fmt.Sprint(notes["taskIds"]) != fmt.Sprint([]any{id}) {
		t.Fatalf("ack: %v", ack)
	}
	var statuses []any
	for len(statuses) == 0 || statuses[len(statuses)-1] != "completed" {
		m := next(t, ch, "notifications/tasks")
		p, _ := m["params"].(map[string]any)
		meta, _ := p["_meta"].(map[string]any)
		if m["method"] != "notifications/tasks" || p["taskId"] != id || meta["io.modelcontextprotocol/subscriptionId"] == nil {
			t.Fatalf("notification: %v", m)
		}
		statuses = append(statuses, p["status"])
		if p["status"] == "completed" && p["result"] == nil {
			t.Fatalf("completed without its result: %v", m)
		}
	}
	if statuses[0] != "working" {
		t.Errorf("statuses: %v", statuses)
	}
	// Without the extension: -32021.
	m := next(t, c.listenTasks(3, []string{id}, modernMeta(nil)), "refusal")
	if e, _ := m["error"].(map[string]any); e["code"] != float64(-32021) {
		t.Fatalf("without the extension: %v", m)
	}
}

// TestTasksOnAnotherReplica: tasks/get, tasks/update and tasks/cancel
// that reach a replica other than the one holding the task are forwarded
// there (the id names it under a MAC); once that replica is gone, they
// fail with an error, never another task's state.
func TestTasksOnAnotherReplica(t *testing.T) {
	urls, stop := replicas(t, 2)
	r1, r2 := newModern(t, urls[0]), newModern(t, urls[1])
	meta := taskMeta(map[string]any{"elicitation": map[string]any{}})
	r := r1.post(1, "tools/call", map[string]any{"name": "sleep_always", "arguments": map[string]any{"ms": 0, "ask": true}, "_meta": meta})
	id, _ := r.result()["taskId"].(string)
	if r.result()["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %s", r)
	}
	// r2 answers r1's task: forwarded.
	r2.waitStatus(id, "input_required")
	if r := r2.task(2, "tasks/update", id, map[string]any{"_meta": meta, "inputResponses": map[string]any{"elicitation-1": accept("Ada")}}); r.answer()["error"] != nil || r.result()["resultType"] != "complete" {
		t.Fatalf("tasks/update on r2: %s", r)
	}
	done := r2.waitStatus(id, "completed")
	if b, _ := json.Marshal(done["result"]); !strings.Contains(string(b), "Ada") {
		t.Fatalf("completed: %v", done)
	}
	// A long task of r1 cancelled through r2.
	r = r1.post(3, "tools/call", map[string]any{"name": "sleep_always", "arguments": map[string]any{"ms": 30000}, "_meta": taskMeta(nil)})
	long, _ := r.result()["taskId"].(string)
	if long == "" {
		t.Fatalf("tools/call: %s", r)
	}
	if r := r2.task(4, "tasks/cancel", long, nil); r.answer()["error"] != nil {
		t.Fatalf("tasks/cancel on r2: %s", r)
	}
	r1.waitStatus(long, "cancelled")
	// r1 is gone: its tasks are an error on r2.
	stop(0)
	if r := r2.task(5, "tasks/get", id, nil); r.answer()["error"] == nil || r.result() != nil {
		t.Fatalf("tasks/get of a gone replica's task: %s", r)
	}
}

// TestTasksDrain: on a drain, a running task is cancelled shortly before
// the drain timeout, and tasks/get reads that while the drain goes on.
func TestTasksDrain(t *testing.T) {
	p := loadPlugin(t, "mrtr", testutil.BuildPlugin(t, "./internal/testplugins/mrtr"), config.Limits{MaxInstances: 2})
	s := newServer(t, &server.Options{Tasks: &tasks.Options{}, TaskAfter: 200 * time.Millisecond}, server.Mount{Plugin: p})
	c := newModern(t, serveHTTP(t, s, nil))
	r := c.post(1, "tools/call", map[string]any{"name": "sleep_always", "arguments": map[string]any{"ms": 30000}, "_meta": taskMeta(nil)})
	id, _ := r.result()["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call: %s", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		s.Drain(ctx)
	}()
	start := time.Now()
	c.waitStatus(id, "cancelled")
	select {
	case <-drained:
		t.Fatal("the drain ended before the task's final status was read")
	default:
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("the task was cancelled %v into a 5 s drain, want 2 s before its end", time.Since(start))
	}
	<-drained
}

// TestTasksOlderVersions: a server with tasks serves a session of an
// older version as before: a long call, even of a tool that requires a
// task, is answered with its result, and tasks/get is an unknown method
// (as the go-sdk answers one in a session), on both paths.
func TestTasksOlderVersions(t *testing.T) {
	bothPaths(t, func(t *testing.T, fast bool) {
		p := loadPlugin(t, "mrtr", testutil.BuildPlugin(t, "./internal/testplugins/mrtr"), config.Limits{MaxInstances: 2})
		s := newServer(t, &server.Options{DisableFastPath: !fast, Tasks: &tasks.Options{}, TaskAfter: 200 * time.Millisecond}, server.Mount{Plugin: p})
		url := serveHTTP(t, s, nil)
		cs := httpClient(t, url)
		for _, name := range []string{"sleep", "sleep_always", "sleep_required"} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"ms": 500}})
			if err != nil || res.IsError || len(res.Content) == 0 {
				t.Fatalf("%s at 2025-11-25: %v %v", name, res, err)
			}
		}
		c := newRawClient(t, url)
		if code, body := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d %s", code, body)
		}
		resp, err := c.post(context.Background(), "tasks/get", map[string]any{"taskId": "x"}, false)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The go-sdk's answer to any method it does not know in a session
		// (HTTP 400, no JSON-RPC error): not a task's state.
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "taskId") {
			t.Fatalf("tasks/get at 2025-06-18: %d %s", resp.StatusCode, body)
		}
	})
}

// TestTasksModeOverride: the configuration's override of when a plugin's
// tools become tasks (Mount.TaskModes, by the tool's name in the plugin)
// replaces what the plugin says: sleep (auto) made "always" is a task even
// when quick, sleep_always made "auto" is answered directly when quick,
// sleep_never made "required" refuses a client without the extension.
func TestTasksModeOverride(t *testing.T) {
	p := loadPlugin(t, "mrtr", testutil.BuildPlugin(t, "./internal/testplugins/mrtr"), config.Limits{MaxInstances: 2})
	s := newServer(t, &server.Options{Tasks: &tasks.Options{}, TaskAfter: 5 * time.Second},
		server.Mount{Plugin: p, Prefix: "m", TaskModes: map[string]string{"sleep": "always", "sleep_always": "auto", "sleep_never": "required"}})
	c := newModern(t, serveHTTP(t, s, nil))
	call := func(id int, name string, ms int, meta map[string]any) *reply {
		return c.post(id, "tools/call", map[string]any{"name": name, "arguments": map[string]any{"ms": ms}, "_meta": meta})
	}
	// 300 ms, far below tasks.after: a call that ends before its request
	// looks is answered directly whatever its policy, and one of 0 ms
	// sometimes does under load.
	if r := call(1, "m_sleep", 300, taskMeta(nil)); r.result()["resultType"] != "task" {
		t.Errorf("sleep made always: %s", r)
	}
	if r := call(2, "m_sleep_always", 300, taskMeta(nil)); r.result()["resultType"] != "complete" {
		t.Errorf("sleep_always made auto: %s", r)
	}
	if r := call(3, "m_sleep_never", 0, modernMeta(nil)); r.errorCode() != -32021 {
		t.Errorf("sleep_never made required, without the extension: %s", r)
	}
	if r := call(4, "m_sleep_required", 0, modernMeta(nil)); r.errorCode() != -32021 {
		t.Errorf("sleep_required, not overridden: %s", r)
	}
}
