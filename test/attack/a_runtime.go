package main

// Section 15: containment, round two (issue 15): sleeping guests, plugins
// reaching the deployment, host memory beyond plugin limits, a client that
// never answers sampling.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

func init() {
	register(
		&attack{
			id: "15.1", name: "sleeping-guest",
			attempt: "A plugin's time.Sleep (WASI poll_oneoff): 20 s under call_timeout 3s; 20 s then DELETE of its session; 20 s then SIGTERM (drain_timeout 3s); a start-up that sleeps 40 s beside another plugin (answered after 20 s holding the instance, 18 s to exit, no /healthz for 40 s, before the fix)",
			limit:   5 * time.Minute,
			run:     sleepingGuest,
		},
		&attack{
			id: "15.2", name: "deployment-reach",
			attempt: "A plugin granted 127.0.0.1 POSTs the batch [initialize, initialized, tools/call read] to a sibling replica to read another plugin's granted file (it did, before the fix); then with deployment.addresses forgotten; then setting the marker header itself",
			limit:   4 * time.Minute,
			run:     deploymentReach,
		},
		&attack{
			id: "15.9", name: "sampling-hold",
			attempt: "A client that never answers sampling holds a stateful plugin while another session calls it; then two 20 s sleeps queued and a third call (held for host_timeout, 10 minutes, and \"plugin busy\" with no holder, before the fix)",
			limit:   4 * time.Minute,
			run:     samplingHold,
		},
		&attack{
			id: "15.3", name: "host-memory",
			attempt: "4 sessions, each 8 rounds of: grow a 256 MiB plugin's memory past its limit, overflow its stack, hold 200 MiB (max_instances 4; RSS went 91 MB to 2.2 GB and stayed, live heap 330 MB, before the fix)",
			limit:   6 * time.Minute,
			run:     hostMemory,
		},
	)
}

// memMetric reads a metric of the server's /metrics (beside /mcp): the sum of
// its series, or -1.
func (a *A) memMetric(p *proc, name string) float64 {
	resp, err := http.Get(strings.TrimSuffix(p.url, "/mcp") + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if sum, found := metricSum(string(b), name); found {
		return sum
	}
	return -1
}

func mib(bytes float64) string { return fmt.Sprintf("%.0f MiB", bytes/(1<<20)) }

func hostMemory(a *A) {
	cfg := a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:0\nplugins:\n  - name: hostile\n    path: %s\n    limits: {memory: 256MiB, max_instances: 4, call_timeout: 60s}\n", a.env.hostile))
	p := a.serve(nil, "--config", cfg)
	if _, err := callText(a.ctx, a.client(p.url, nil), "ok", nil); err != nil {
		a.Fatalf("ok: %v", err)
	}
	rssBefore := p.rss()
	var peak float64
	stopPeak := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopPeak:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if r := p.rss(); r > peak {
				peak = r
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	crashes, held := 0, 0
	for range 4 {
		cs := a.client(p.url, nil)
		wg.Go(func() {
			for range 8 {
				for _, step := range []struct {
					tool string
					args map[string]any
				}{
					{"alloc", map[string]any{"mb": 400}},
					{"recurse", nil},
					{"alloc", map[string]any{"mb": 200}},
				} {
					ctx, cancel := context.WithTimeout(a.ctx, 2*time.Minute)
					_, err := callText(ctx, cs, step.tool, step.args)
					cancel()
					mu.Lock()
					if err != nil {
						crashes++
					} else {
						held++
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	took := since(start)
	close(stopPeak)
	heapBusy := a.memMetric(p, "go_memstats_heap_inuse_bytes")
	a.Sleep(15 * time.Second)
	rssAfter := p.rss()
	heapAfter := a.memMetric(p, "go_memstats_heap_inuse_bytes")
	// The instances still idle keep their memory (up to 4 of them, those
	// whose last call held 200 MiB and returned): that much is legitimate.
	idle := a.memMetric(p, "hangar_plugin_guest_memory_bytes")
	a.Figure("calls", "%d crashed at a limit (memory, stack, or the plugin's memory budget), %d held 200 MiB, in %v", crashes, held, took)
	a.Figure("RSS", "%.0f MiB before, %.0f MiB at the peak, %.0f MiB 15 s after, of which the idle instances' memories hold up to %s (past 2 GiB, killed by the suite's guard, before the fix)", rssBefore, peak, rssAfter, mib(idle))
	a.Figure("Go heap in use", "%s right after, %s 15 s after", mib(heapBusy), mib(heapAfter))
	// The bound docs/production.md gives: the server's own memory plus,
	// per instance, its two memories (256 MiB each) and 160 MiB in the Go
	// heap; the memories this attack fills are the linear ones.
	bound := rssBefore + 4*(256+160)
	// Four at once, the calls that would hold 200 MiB mostly meet the
	// plugin's memory budget (twice limits.memory) and fail, all of them
	// in some runs: that the memory was taken shows in the peak.
	a.Check(crashes > 0 && peak > rssBefore+200, "%d crashes, %d calls held memory, RSS peaked at %.0f MiB from %.0f: the attack did not run", crashes, held, peak, rssBefore)
	a.Check(peak < bound, "RSS peaked at %.0f MiB, past %.0f MiB", peak, bound)
	a.Check(rssAfter < rssBefore+idle/(1<<20)+64, "RSS stayed at %.0f MiB (%.0f MiB before, %s in idle instances)", rssAfter, rssBefore, mib(idle))
	a.Result("RSS stayed within 4 instances' memory limits (peak %.0f MiB) and returned to %.0f MiB, with %s in idle instances", peak, rssAfter, mib(idle))
}

var sleeperOnce struct {
	sync.Once
	path string
	err  error
}

// sleeper is the sleeper test plugin, built and compiled into the shared
// cache once for the run, so that the attacks' timings are the calls'.
func (a *A) sleeper() string {
	sleeperOnce.Do(func() {
		p, err := testutil.Build("./internal/testplugins/sleeper")
		if err != nil {
			sleeperOnce.err = fmt.Errorf("building the sleeper plugin: %w", err)
			return
		}
		warm := exec.Command(a.env.hangar, "warm", "--cache-dir", a.env.compiled, p)
		warm.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(a.env.dir, "xdg"))
		if out, err := warm.CombinedOutput(); err != nil {
			sleeperOnce.err = fmt.Errorf("compiling the sleeper plugin: %v\n%s", err, out)
			return
		}
		sleeperOnce.path = p
	})
	if sleeperOnce.err != nil {
		a.Fatalf("%v", sleeperOnce.err)
	}
	return sleeperOnce.path
}

// freePort returns a port on 127.0.0.1 that nothing listens on now.
func (a *A) freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Fatalf("%v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// timed calls a tool with a limit and returns its text, its error and how
// long it took.
func (a *A) timed(cs *mcp.ClientSession, limit time.Duration, tool string, args map[string]any) (string, error, time.Duration) {
	ctx, cancel := context.WithTimeout(a.ctx, limit)
	defer cancel()
	start := time.Now()
	text, err := callText(ctx, cs, tool, args)
	return text, err, time.Since(start)
}

func sleepingGuest(a *A) {
	sleeper := a.sleeper()

	// 1. A 20 s sleep under a 3 s call timeout, then the next call.
	p := a.serve(nil, "--config", a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:0\n  drain_timeout: 3s\nplugins:\n  - name: sleeper\n    path: %s\n    limits: {call_timeout: 3s}\n", sleeper)))
	cs := a.client(p.url, nil)
	if _, err, _ := a.timed(cs, time.Minute, "echo", map[string]any{"text": "warm"}); err != nil {
		a.Fatalf("echo: %v", err)
	}
	_, sleepErr, took := a.timed(cs, time.Minute, "sleep", map[string]any{"ms": 20000})
	a.Check(sleepErr != nil && strings.Contains(sleepErr.Error(), "time limit"), "sleep 20 s under call_timeout 3s: %v, want a timeout", sleepErr)
	a.Check(took < 5*time.Second, "sleep 20 s under call_timeout 3s answered after %v", round(took))
	_, err, next := a.timed(cs, time.Minute, "echo", map[string]any{"text": "next"})
	a.Check(err == nil && next < time.Second, "the next call: %v after %v", err, round(next))
	a.Figure("20 s sleep, call_timeout 3s", "answered after %v (%s); the next call on the plugin's only instance answered in %v", round(took), firstN(strings.TrimPrefix(fmt.Sprint(sleepErr), "error result: "), 90), round(next))

	// 2. DELETE of the session of a sleeping call.
	sleepy := a.raw(p.url)
	sleepy.mustInitialize(a)
	answered := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		sleepy.call(a.ctx, "tools/call", toolCall("sleep", map[string]any{"ms": 20000}, ""))
		answered <- time.Since(start)
	}()
	a.Sleep(500 * time.Millisecond)
	del := time.Now()
	code, derr := sleepy.delete(a.ctx)
	a.Check(derr == nil && code == http.StatusNoContent, "DELETE: %d %v", code, derr)
	_, err, _ = a.timed(cs, time.Minute, "echo", map[string]any{"text": "after delete"})
	freed := time.Since(del)
	a.Check(err == nil && freed < 2*time.Second, "a call after the DELETE: %v, answered %v after it", err, round(freed))
	select {
	case d := <-answered:
		a.Figure("20 s sleep, session deleted after 0.5 s", "the deleted session's request ended %v after it began; another session's call was answered %v after the DELETE", round(d), round(freed))
	case <-time.After(10 * time.Second):
		a.Errorf("the deleted session's request still open 10 s after the DELETE")
	}

	// 3. SIGTERM during a 20 s sleep, drain_timeout 3s.
	p2 := a.serve(nil, "--config", a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:0\n  drain_timeout: 3s\nplugins:\n  - name: sleeper\n    path: %s\n    limits: {call_timeout: 60s}\n", sleeper)))
	cs2 := a.client(p2.url, nil)
	if _, err, _ := a.timed(cs2, time.Minute, "echo", map[string]any{"text": "warm"}); err != nil {
		a.Fatalf("echo: %v", err)
	}
	drainAnswer := make(chan error, 1)
	go func() {
		_, err, _ := a.timed(cs2, time.Minute, "sleep", map[string]any{"ms": 20000})
		drainAnswer <- err
	}()
	a.Sleep(500 * time.Millisecond)
	term := time.Now()
	p2.signal(syscall.SIGTERM)
	var answer error
	select {
	case answer = <-drainAnswer:
	case <-time.After(30 * time.Second):
		a.Errorf("the sleeping call got no answer 30 s after SIGTERM")
	}
	answeredAfter := since(term)
	exit := p2.wait(30 * time.Second)
	exitAfter := since(term)
	a.Check(answer != nil && strings.Contains(answer.Error(), "drain timeout"), "the sleeping call's answer: %v, want an error at the drain timeout", answer)
	a.Check(exitAfter < 8*time.Second, "exit %v after SIGTERM, drain_timeout 3s", exitAfter)
	a.Figure("SIGTERM during a 20 s sleep, drain_timeout 3s", "the call answered %v after SIGTERM (%s); exit code %d %v after", answeredAfter, firstN(fmt.Sprint(answer), 60), exit, exitAfter)

	// 4. A start-up that sleeps 40 s, beside the flood plugin.
	port := a.freePort()
	cfg := a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:%d\nplugins:\n  - name: slow\n    path: %s\n    prefix: slow\n    config: {startup_sleep_ms: \"40000\"}\n    limits: {call_timeout: 2m}\n  - name: flood\n    path: %s\n", port, sleeper, a.env.flood))
	p3 := a.start(nil, "serve", "--cache-dir", a.env.compiled, "--config", cfg)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var health string
	healthAt := a.Until(20*time.Second, "/healthz", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		health = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		return resp.StatusCode == http.StatusOK
	})
	resp, err := http.Get(base + "/readyz")
	ready := ""
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ready = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	a.Check(strings.Contains(ready, `"slow":"listing"`) || strings.Contains(ready, `"slow":"loading"`), "/readyz while slow sleeps: %s", ready)
	cs3 := a.client(base+"/mcp", nil)
	text, err, echoTook := a.timed(cs3, time.Minute, "echo", map[string]any{"text": "meanwhile"})
	servedAt := since(p3.started)
	a.Check(err == nil && text == "meanwhile", "flood's echo while slow sleeps: %q %v", text, err)
	a.Check(servedAt < 35*time.Second, "flood served %v after the start, not while slow slept", servedAt)
	a.Figure("start-up sleeping 40 s", "/healthz %s %v after the start; /readyz %s; the other plugin's echo answered %v after the start (the call %v)", health, round(healthAt), firstN(ready, 90), servedAt, round(echoTook))
	a.Result("sleeps ended with their calls: at the call timeout, at the DELETE, at the drain timeout; probes and the other plugin served while a plugin's start slept")
}

// exploit is the batch a plugin posts to a replica: a session, and the
// other plugin's granted file through it.
const exploit = `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"plugin","version":"1"}}},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vault_read","arguments":{"path":"/vault/secret.txt"}}}]`

func deploymentReach(a *A) {
	vault := a.TempDir()
	const secret = "the-vault-secret-4f1c"
	if err := os.WriteFile(filepath.Join(vault, "secret.txt"), []byte(secret), 0o600); err != nil {
		a.Fatalf("%v", err)
	}
	portA, portB := a.freePort(), a.freePort()
	replica := func(port int, deployment string) *proc {
		return a.serve(nil, "--config", a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:%d
%splugins:
  - name: egress
    path: %s
    prefix: egress
    grants: {allowed_hosts: ["127.0.0.1"]}
  - name: vault
    path: %s
    prefix: vault
    grants:
      allowed_paths: [{host: %s, guest: /vault, read_only: true}]
`, port, deployment, a.env.egress, a.env.hostile, vault)))
	}
	both := fmt.Sprintf("deployment:\n  addresses: [\"127.0.0.1:%d\", \"127.0.0.1:%d\"]\n", portA, portB)
	pA := replica(portA, both)
	pB := replica(portB, both)
	cs := a.client(pA.url, nil)
	fetch := func(url string, headers map[string]any) (string, error) {
		ctx, cancel := context.WithTimeout(a.ctx, time.Minute)
		defer cancel()
		args := map[string]any{"url": url, "method": "POST", "body": exploit, "headers": map[string]any{
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}}
		for k, v := range headers {
			args["headers"].(map[string]any)[k] = v
		}
		return callText(ctx, cs, "egress_fetch", args)
	}
	if text, err := callText(a.ctx, a.client(pB.url, nil), "vault_read", map[string]any{"path": "/vault/secret.txt"}); err != nil || text != secret {
		a.Fatalf("the vault plugin on B does not read its own file: %q %v", text, err)
	}

	// 1. The documented deployment: B is in deployment.addresses.
	text, err := fetch(pB.url, nil)
	a.Check(err != nil && strings.Contains(err.Error(), "deployment"), "A's plugin POSTing to replica B: %q %v, want refused at dial time", firstN(text, 100), err)
	a.Check(!strings.Contains(text+fmt.Sprint(err), secret), "the secret leaked: %q", text)
	a.Figure("to replica B, in deployment.addresses", "%s", firstN(strings.TrimPrefix(fmt.Sprint(err), "error result: "), 200))

	// 2. A replica whose configuration forgot B: the marker is refused by B.
	portC := a.freePort()
	pC := replica(portC, "")
	csC := a.client(pC.url, nil)
	ctx, cancel := context.WithTimeout(a.ctx, time.Minute)
	text, err = callText(ctx, csC, "egress_fetch", map[string]any{"url": pB.url, "method": "POST", "body": exploit, "headers": map[string]any{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}})
	cancel()
	a.Check(err == nil && strings.HasPrefix(text, "403 Forbidden: this request was made by a Hangar plugin"), "a replica without deployment.addresses POSTing to B: %q %v, want B's 403", firstN(text, 120), err)
	a.Check(!strings.Contains(text, secret), "the secret leaked: %q", text)
	a.Figure("to replica B, deployment.addresses forgotten", "B answered %q", firstN(text, 130))

	// 3. The plugin sets the marker itself (to remove or spoof it).
	ctx, cancel = context.WithTimeout(a.ctx, time.Minute)
	text, err = callText(ctx, csC, "egress_fetch", map[string]any{"url": pB.url + "/healthz", "headers": map[string]any{"hangar-plugin-request": "0"}})
	cancel()
	a.Check(err != nil && strings.Contains(err.Error(), "a plugin may not set it"), "a plugin setting the marker: %q %v, want refused", firstN(text, 100), err)
	a.Figure("the plugin setting Hangar-Plugin-Request", "%s", firstN(strings.TrimPrefix(fmt.Sprint(err), "error result: "), 160))
	a.Result("the sibling replica was refused at dial time; with the address forgotten, the replica refused the marked request with 403; the plugin could not set the marker")
}

// never answers sampling: its handler waits until the server gives up.
func neverAnswers(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func samplingHold(a *A) {
	p := a.serve(nil, "--config", a.config(fmt.Sprintf("http:\n  addr: 127.0.0.1:0\nplugins:\n  - name: sleeper\n    path: %s\n    limits: {call_timeout: 10s}\n", a.sleeper())))
	holder := a.client(p.url, &mcp.ClientOptions{CreateMessageHandler: neverAnswers})
	other := a.client(p.url, nil)
	if _, err, _ := a.timed(other, time.Minute, "echo", map[string]any{"text": "warm"}); err != nil {
		a.Fatalf("echo: %v", err)
	}

	// 1. A client that never answers sampling, and another session.
	asked := make(chan string, 1)
	askStart := time.Now()
	go func() {
		_, err, took := a.timed(holder, 3*time.Minute, "ask", nil)
		asked <- fmt.Sprintf("answered %v after its ask: %s", round(took), firstN(strings.TrimPrefix(fmt.Sprint(err), "error result: "), 160))
	}()
	a.Sleep(time.Second)
	text, err, took := a.timed(other, time.Minute, "echo", map[string]any{"text": "my turn"})
	a.Check(err == nil && text == "my turn", "the other session's call: %q %v", text, err)
	a.Check(took < 8*time.Second, "the other session's call waited %v, want about 2 s (the grace a parked call keeps its instance once another call waits)", round(took))
	var holderGot string
	select {
	case holderGot = <-asked:
	case <-time.After(time.Minute):
		a.Errorf("the never-answered ask got no answer %v after it began", since(askStart))
	}
	a.Check(strings.Contains(holderGot, "another request is waiting for this plugin"), "the holder's answer: %s", holderGot)
	a.Figure("a client that never answers sampling", "the other session's call answered after %v; the holder %s", round(took), holderGot)

	// 2. Who holds it: three 20 s sleeps (call_timeout 10s), 0.3 s apart.
	// The first runs out of time; of the two waiting, one gets the
	// instance, the other does not in its call timeout.
	errs := make(chan error, 3)
	for range 3 {
		cs := a.client(p.url, nil)
		go func() {
			_, err, _ := a.timed(cs, time.Minute, "sleep", map[string]any{"ms": 20000})
			errs <- err
		}()
		a.Sleep(300 * time.Millisecond)
	}
	busy := ""
	for range 3 {
		select {
		case err := <-errs:
			if err != nil && strings.Contains(err.Error(), "plugin busy") {
				busy = strings.TrimPrefix(err.Error(), "error result: ")
			}
		case <-time.After(time.Minute):
			a.Fatalf("a sleep got no answer")
		}
	}
	a.Check(strings.Contains(busy, "held by request") && strings.Contains(busy, "until"), "the call that found no instance: %q, want a busy error naming the holder and until when", busy)
	a.Figure("the busy error", "%s", firstN(busy, 260))
	a.Result("the never-answering client held the plugin for half its call timeout once another session waited; the busy error named the holder and until when")
}
