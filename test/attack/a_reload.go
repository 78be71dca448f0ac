package main

// Section 2: a reload loses no call.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(&attack{
		id: "2.1", name: "reload-under-load",
		attempt: "5,000 calls from 16 clients while the watched configuration is rewritten 30 times: 24 changes that replace the plugin, 6 broken files (misspelt key, missing module, two plugins offering one tool, a module that is not WebAssembly, path: /dev/zero, an alias bomb)",
		limit:   5 * time.Minute,
		run:     reloadUnderLoad,
	})
}

const (
	reloadCalls   = 5000
	reloadClients = 16
	reloadCount   = 30
)

func reloadUnderLoad(a *A) {
	dir := a.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	garbage := filepath.Join(dir, "garbage.wasm")
	if err := os.WriteFile(garbage, []byte("\x00asm garbage, not a module"), 0o644); err != nil {
		a.Fatalf("%v", err)
	}
	const head = "http:\n  addr: 127.0.0.1:0\nplugins:\n"
	good := func(gen int) string {
		return fmt.Sprintf(head+"  - name: flood\n    path: %s\n    config: {generation: \"%d\"}\n    limits: {max_instances: 2}\n", a.env.flood, gen)
	}
	broken := []struct{ what, content string }{
		{"misspelt key", head + "  - name: flood\n    pathh: " + a.env.flood + "\n"},
		{"missing module", head + "  - name: flood\n    path: " + filepath.Join(dir, "nope.wasm") + "\n"},
		{"two plugins offering one tool", head + "  - {name: flood, path: " + a.env.flood + "}\n  - {name: flood2, path: " + a.env.flood + "}\n"},
		{"not WebAssembly", head + "  - name: flood\n    path: " + garbage + "\n"},
		{"path: /dev/zero", head + "  - {name: flood, path: " + a.env.flood + "}\n  - {name: zero, path: /dev/zero}\n"},
		{"alias bomb", head + aliasBomb(a.env.flood)},
	}
	a.writeFile(cfg, good(0))
	p := a.serve(nil, "--config", cfg)
	rssBefore := p.rss()

	var next, failed, done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range reloadClients {
		cs := a.client(p.url, nil)
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > reloadCalls || a.ctx.Err() != nil {
					return
				}
				text := "c" + strconv.FormatInt(i, 10)
				ctx, cancel := context.WithTimeout(a.ctx, time.Minute)
				got, err := callText(ctx, cs, "echo", map[string]any{"text": text})
				cancel()
				if err == nil && got != text {
					err = fmt.Errorf("echo %q answered %q", text, got)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				done.Add(1)
			}
		})
	}

	applied, refused, gen := 0, 0, 0
	var slowest time.Duration
	var reasons []string
	for r := range reloadCount {
		// Spread the reloads over the calls.
		for done.Load() < int64((r+1)*reloadCalls/(reloadCount+2)) {
			a.Sleep(2 * time.Millisecond)
		}
		content, wantOK, what := "", true, ""
		if r%5 == 4 {
			b := broken[refused%len(broken)]
			content, wantOK, what = b.content, false, b.what
		} else {
			gen++
			content = good(gen)
		}
		// The watch reloads the file (within its poll interval of 1 s).
		// Not SIGHUP as well: a signal and the watch can both reload one
		// change, and the reloads' log lines would no longer pair with the
		// files written.
		before := p.count("msg=reloaded") + p.count(`msg="reload failed`)
		t0 := time.Now()
		a.writeFile(cfg, content)
		a.Until(time.Minute, fmt.Sprintf("reload %d", r+1), func() bool {
			return p.count("msg=reloaded")+p.count(`msg="reload failed`) > before
		})
		slowest = max(slowest, time.Since(t0))
		// A refused reload logs one record per line of its error (two
		// plugins offering one tool: one for each tool), which may reach
		// the log after the first: wait for the rest, or the next reload
		// would count them as its own.
		for n := -1; n != p.count(`msg="reload failed`); {
			n = p.count(`msg="reload failed`)
			a.Sleep(200 * time.Millisecond)
		}
		last := lastLine(p.log.String(), "msg=reloaded", `msg="reload failed`)
		if ok := strings.Contains(last, "msg=reloaded"); ok != wantOK {
			a.Errorf("reload %d (%s): %s", r+1, orGood(what), last)
		}
		if wantOK {
			applied++
		} else {
			refused++
			reasons = append(reasons, what+": "+firstN(strings.ReplaceAll(errorField(last), dir+string(filepath.Separator), ""), 110))
		}
	}
	wg.Wait()
	took := time.Since(start)
	a.Figure("calls lost", "%d of %d (16 clients; 80 of 2,000 before the fix)", failed.Load(), reloadCalls)
	a.Figure("reloads", "%d applied (each replacing the plugin), %d refused; the slowest took %v", applied, refused, round(slowest))
	a.Figure("refusals", "%s", strings.Join(reasons, "; "))
	a.Figure("throughput", "%.0f calls/s over %v", float64(done.Load())/took.Seconds(), round(took))
	a.Figure("RSS", "%.0f MiB before, %.0f MiB after %d plugins were retired", rssBefore, p.rss(), applied)
	if failed.Load() > 0 {
		a.Errorf("%d calls failed; first: %v", failed.Load(), firstErr.Load())
	}
	a.Result("%d calls across %d reloads (%d refused): %d failed", done.Load(), reloadCount, refused, failed.Load())
}

func orGood(what string) string {
	if what == "" {
		return "a good file, refused"
	}
	return what + ", accepted"
}

// aliasBomb is a "billion laughs" plugin list entry: aliases of aliases
// that would expand to a billion strings.
func aliasBomb(path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: a\n    path: %s\n    grants:\n      allowed_hosts: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n", path)
	prev := "a"
	for i, c := range "bcdefghi" {
		fmt.Fprintf(&b, "  - name: p%d\n    path: %s\n    config: {x: &%c [%s]}\n", i, path, c, strings.TrimSuffix(strings.Repeat("*"+prev+", ", 9), ", "))
		prev = string(c)
	}
	fmt.Fprintf(&b, "  - name: last\n    path: %s\n    grants: {allowed_hosts: *%s}\n", path, prev)
	return b.String()
}

// lastLine is the log's last line that contains one of subs.
func lastLine(log string, subs ...string) string {
	ls := lines(log)
	for i := len(ls) - 1; i >= 0; i-- {
		for _, s := range subs {
			if strings.Contains(ls[i], s) {
				return ls[i]
			}
		}
	}
	return ""
}

// errorField is the error="..." of a log line, unquoted as far as needed.
func errorField(line string) string {
	_, v, ok := strings.Cut(line, "error=")
	if !ok {
		return line
	}
	if s, err := strconv.QuotedPrefix(v); err == nil {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return v
}

func firstN(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
