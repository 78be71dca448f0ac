package main

// Section 4: supply chain and cache integrity.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"oras.land/oras-go/v2/registry/remote"

	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/verify"
)

func init() {
	register(
		&attack{
			id: "4.1", name: "tampered-lock",
			attempt: "hangar.lock of a plugin with verify: {key} edited to name an unsigned module that is in the cache; then to name an unsigned manifest and its module",
			limit:   3 * time.Minute,
			run:     tamperedLock,
		},
		&attack{
			id: "4.2", name: "corrupt-compiled-cache",
			attempt: "An entry of the compilation cache with one byte of machine code flipped; one with its function-offset table shifted by a byte",
			limit:   5 * time.Minute,
			run:     corruptCompiledCache,
		},
		&attack{
			id: "4.3", name: "module-not-regular",
			attempt: "A module path that is /dev/zero, a FIFO, a link to /dev/zero, or a 600 MiB file: at start (serve --config, serve FILE, call FILE); /dev/zero, a FIFO and the link added on reload",
			run:     moduleNotRegular,
		},
		&attack{
			id: "4.4", name: "stalled-registry-sigterm",
			attempt: "SIGTERM while start-up fetches from a registry that accepts connections and never answers",
			run:     stalledFetch(stalledRegistry, true),
		},
		&attack{
			id: "4.5", name: "stalled-registry",
			attempt: "Start-up fetching from a registry that accepts connections and never answers (hung start-up for over 185 s before the fix)",
			limit:   4 * time.Minute, background: true,
			run: stalledFetch(stalledRegistry, false),
		},
		&attack{
			id: "4.6", name: "dripping-https-sigterm",
			attempt: "SIGTERM while start-up downloads from an HTTPS source that sends a byte every 50 ms",
			run:     stalledFetch(drippingSource, true),
		},
		&attack{
			id: "4.7", name: "dripping-https",
			attempt: "Start-up downloading from an HTTPS source that sends a byte every 50 ms (hung start-up for over 90 s before the fix)",
			limit:   4 * time.Minute, background: true,
			run: stalledFetch(drippingSource, false),
		},
		&attack{
			id: "4.8", name: "killed-download",
			attempt: "hangar pull of an HTTPS module killed (SIGKILL) half-way, leaving its .tmp-* file; then pulled again",
			run:     killedDownload,
		},
		&attack{
			id: "4.9", name: "config-bombs",
			attempt: "A YAML alias bomb (billion laughs), a 99 KB file of 30,000 aliases and a 2 MB configuration: at start, and the bomb on reload",
			run:     configBombs,
		},
		&attack{
			id: "4.10", name: "big-config-watched",
			attempt: "The watched configuration replaced by a 150 MB file, then left alone (re-read every second at 14% CPU before the fix)",
			run:     bigConfigWatched,
		},
		&attack{
			id: "4.11", name: "config-not-regular",
			attempt: "The watched configuration replaced by a link to /dev/zero, then by a FIFO; then SIGHUP and SIGTERM",
			run:     configNotRegular,
		},
	)
}

// runHangar runs a hangar command to its end (at most limit) and returns
// its stdout, stderr and exit code.
func (a *A) runHangar(o *procOpts, limit time.Duration, args ...string) (stdout, stderr string, code int, p *proc) {
	if o == nil {
		o = &procOpts{}
	}
	var out testutil.SyncBuffer
	o.stdout = &out
	p = a.start(o, args...)
	code = p.wait(limit)
	return out.String(), p.log.String(), code, p
}

// startFails runs hangar with args, which must fail within 30 s with an
// error containing want; it returns how long that took and the peak RSS.
func (a *A) startFails(what, want string, args ...string) string {
	start := time.Now()
	_, stderr, code, p := a.runHangar(nil, 30*time.Second, args...)
	took := time.Since(start)
	a.Check(code == 1 && strings.Contains(stderr, want), "%s: exit %d, want 1 with %q:\n%s", what, code, want, tail(stderr, 5))
	return fmt.Sprintf("%s: exit %d after %v, peak RSS ≤ %.0f MiB", what, code, round(took), p.maxRSS())
}

// --- 4.1 -------------------------------------------------------------------

var (
	manifestRE = regexp.MustCompile(`(?m)^manifest:\s+(sha256:[0-9a-f]{64})`)
	moduleRE   = regexp.MustCompile(`(?m)^sha256:\s+([0-9a-f]{64})`)
)

func tamperedLock(a *A) {
	reg := a.registry()
	dir := a.TempDir()
	xdg := filepath.Join(dir, "xdg")
	o := func() *procOpts { return &procOpts{xdg: xdg} }
	push := func(wasm, ref string) (manifest, module string) {
		out, stderr, code, _ := a.runHangar(o(), time.Minute, "push", wasm, ref)
		m, s := manifestRE.FindStringSubmatch(out), moduleRE.FindStringSubmatch(out)
		if code != 0 || m == nil || s == nil {
			a.Fatalf("push %s: exit %d\n%s%s", ref, code, out, stderr)
		}
		return m[1], s[1]
	}
	_, good := push(a.env.hello, "oci://"+reg+"/hangar/hello:1")
	keyFile := filepath.Join(dir, "cosign.pub")
	a.sign(reg, "hangar/hello", "1", keyFile)
	evilManifest, evil := push(a.env.flood, "oci://"+reg+"/hangar/hello:evil") // same repository, unsigned

	cfg := filepath.Join(dir, "hangar.yaml")
	a.writeFile(cfg, "plugins:\n  - name: hello\n    source: oci://"+reg+"/hangar/hello:1\n    verify: {key: ./cosign.pub}\n")
	if out, stderr, code, _ := a.runHangar(o(), time.Minute, "pull", "--config", cfg); code != 0 {
		a.Fatalf("pull --config: exit %d\n%s%s", code, out, stderr)
	}
	// The unsigned module gets into the cache (hangar pull REF does that).
	if out, stderr, code, _ := a.runHangar(o(), time.Minute, "pull", "oci://"+reg+"/hangar/hello:evil"); code != 0 {
		a.Fatalf("pull evil: exit %d\n%s%s", code, out, stderr)
	}
	lockPath := filepath.Join(dir, "hangar.lock")
	original, err := os.ReadFile(lockPath)
	if err != nil {
		a.Fatalf("%v", err)
	}
	editLock := func(edit func(e map[string]any)) {
		var lf map[string]any
		if err := json.Unmarshal(original, &lf); err != nil {
			a.Fatalf("hangar.lock: %v", err)
		}
		e, _ := lf["plugins"].(map[string]any)["hello"].(map[string]any)
		if e == nil || e["sha256"] != good {
			a.Fatalf("hangar.lock does not lock hello to %s:\n%s", good, original)
		}
		edit(e)
		b, _ := json.Marshal(lf)
		a.writeFile(lockPath, string(b))
	}
	serve := func() (string, int) {
		_, stderr, code, _ := a.runHangar(o(), time.Minute, "serve", "--stdio", "--cache-dir", a.env.compiled, "--config", cfg)
		return stderr, code
	}

	editLock(func(e map[string]any) { e["sha256"] = evil })
	stderr, code := serve()
	a.Check(code == 1 && strings.Contains(stderr, "digest mismatch") && strings.Contains(stderr, "hangar.lock names module sha256 "+evil),
		"lock edited to the unsigned module: exit %d\n%s", code, tail(stderr, 3))
	a.Figure("lock names an unsigned cached module", "exit %d: %s", code, firstN(errorLine(stderr), 150))

	editLock(func(e map[string]any) { e["sha256"], e["manifest"] = evil, evilManifest })
	stderr, code = serve()
	a.Check(code == 1 && strings.Contains(stderr, "signature not verified"), "lock edited to the unsigned manifest: exit %d\n%s", code, tail(stderr, 3))
	a.Figure("lock names an unsigned manifest", "exit %d: %s", code, firstN(errorLine(stderr), 150))

	a.writeFile(lockPath, string(original))
	stderr, code = serve()
	a.Check(code == 0 && strings.Contains(stderr, "plugins listed; serving"), "lock restored: exit %d\n%s", code, tail(stderr, 3))
	a.Figure("lock restored", "exit %d, served", code)
	a.Result("both edits were refused before anything was served; the restored lock served the signed module")
}

// errorLine is the line of hangar's stderr that says why it stopped.
func errorLine(stderr string) string {
	if l := lastLine(stderr, "hangar serve:"); l != "" {
		return l
	}
	return tail(stderr, 1)
}

// registry starts an OCI registry on 127.0.0.1 for the attack and returns
// its host:port.
func (a *A) registry() string {
	bin, err := a.env.registryBinary()
	if err != nil {
		a.Fatalf("%v", err)
	}
	dir := a.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Fatalf("%v", err)
	}
	host := ln.Addr().String() // free now; the registry binds it
	ln.Close()
	conf := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "storage"), host)
	os.WriteFile(filepath.Join(dir, "config.yml"), []byte(conf), 0o644)
	var out testutil.SyncBuffer
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	cmd.Env = append(os.Environ(), "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		a.Fatalf("starting the registry: %v", err)
	}
	a.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	a.Until(30*time.Second, "the registry answering", func() bool {
		resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + host + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return host
}

// sign signs repo:tag with a new key, whose public key it writes to
// keyFile.
func (a *A) sign(host, repo, tag, keyFile string) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		a.Fatalf("%v", err)
	}
	kp, err := verify.NewKeypair(priv)
	if err != nil {
		a.Fatalf("%v", err)
	}
	der, _ := x509.MarshalPKIXPublicKey(priv.Public())
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		a.Fatalf("%v", err)
	}
	r, err := remote.NewRepository(host + "/" + repo)
	if err != nil {
		a.Fatalf("%v", err)
	}
	r.PlainHTTP = true
	desc, err := r.Resolve(a.ctx, tag)
	if err != nil {
		a.Fatalf("resolving %s:%s: %v", repo, tag, err)
	}
	if _, err := verify.Sign(a.ctx, r, desc, kp, nil); err != nil {
		a.Fatalf("signing: %v", err)
	}
}

// --- 4.2 -------------------------------------------------------------------

func corruptCompiledCache(a *A) {
	args := []string{a.env.hello, "greet", `{"name":"Ada"}`}
	for _, tc := range testutil.CacheCorruptions {
		cache := a.TempDir()
		call := func() (string, string, int, time.Duration) {
			start := time.Now()
			out, stderr, code, _ := a.runHangar(nil, time.Minute, append([]string{"call", "--cache-dir", cache}, args...)...)
			return out, stderr, code, time.Since(start)
		}
		want, stderr, code, first := call()
		if code != 0 || want == "" {
			a.Fatalf("%s: first call: exit %d\n%s", tc.Name, code, stderr)
		}
		entries, _ := filepath.Glob(filepath.Join(cache, "wazero-*", "*"))
		corrupted := map[string][]byte{}
		for _, e := range entries {
			b, err := os.ReadFile(e)
			if err != nil || strings.HasSuffix(e, ".tmp") || !tc.Corrupt(b) {
				continue
			}
			os.Chmod(e, 0o600)
			if err := os.WriteFile(e, b, 0o600); err != nil {
				a.Fatalf("%v", err)
			}
			corrupted[e] = b
		}
		if len(corrupted) == 0 {
			a.Fatalf("%s: no entry in wazero's format among %v", tc.Name, entries)
		}
		got, stderr, code, second := call()
		recompiled := 0
		for e, bad := range corrupted {
			if b, err := os.ReadFile(e); err == nil && !bytes.Equal(b, bad) {
				recompiled++
			}
		}
		a.Check(code == 0 && got == want, "%s: exit %d, %q (want %q)\n%s", tc.Name, code, got, want, tail(stderr, 5))
		a.Check(strings.Contains(stderr, "compilation cache: removed entries"), "%s: the corruption was not reported:\n%s", tc.Name, tail(stderr, 5))
		a.Check(recompiled == len(corrupted), "%s: %d of %d corrupted entries rewritten", tc.Name, recompiled, len(corrupted))
		a.Figure(tc.Name, "%d entries corrupted; the next start removed and recompiled them (exit %d, %v; the first start took %v)", len(corrupted), code, round(second), round(first))
	}
	a.Result("each corrupted entry was detected by its checksum and recompiled; the call was answered, never a refused start or a crash")
}

// --- 4.3 -------------------------------------------------------------------

func moduleNotRegular(a *A) {
	dir := a.TempDir()
	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		a.Fatalf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link.wasm")
	os.Symlink("/dev/zero", link)
	big := filepath.Join(dir, "big.wasm")
	f, err := os.Create(big)
	if err != nil {
		a.Fatalf("%v", err)
	}
	f.Write([]byte("\x00asm\x01\x00\x00\x00"))
	f.Truncate(600 << 20) // sparse
	f.Close()

	var figs []string
	for _, tc := range []struct{ what, path, want string }{
		{"/dev/zero", "/dev/zero", "not a regular file"},
		{"a FIFO", fifo, "not a regular file"},
		{"a link to /dev/zero", link, "not a regular file"},
		{"600 MiB", big, "more than the limit of 536870912"},
	} {
		cfg := a.config("plugins:\n  - name: p\n    path: " + tc.path + "\n")
		figs = append(figs,
			a.startFails(tc.what+" in a configuration", tc.want, "serve", "--stdio", "--config", cfg),
			a.startFails(tc.what+" named to serve", tc.want, "serve", "--stdio", tc.path),
			a.startFails(tc.what+" named to call", tc.want, "call", tc.path, "x"),
		)
	}
	a.Figure("at start", "%s", strings.Join(figs, "; "))

	// Added on reload: refused, the server unharmed.
	cfg := filepath.Join(dir, "hangar.yaml")
	base := "http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: flood, path: " + a.env.flood + "}\n"
	a.writeFile(cfg, base)
	p := a.serve(nil, "--config", cfg)
	cs := a.client(p.url, nil)
	rssBefore := p.rss()
	for i, path := range []string{"/dev/zero", fifo, link} {
		a.writeFile(cfg, base+"  - {name: bad, path: "+path+"}\n")
		p.signal(syscall.SIGHUP)
		p.waitLog(`msg="reload failed`, i+1, 30*time.Second)
		a.Check(strings.Contains(lastLine(p.log.String(), "reload failed"), "not a regular file"), "reload with %s: %s", path, lastLine(p.log.String(), "reload failed"))
		a.echo(cs, 30*time.Second)
	}
	a.Figure("added on reload", "/dev/zero, a FIFO and a link refused; RSS %.0f MiB before, %.0f MiB after; the server went on serving", rssBefore, p.rss())
	a.Check(p.rss()-rssBefore < 64, "RSS grew from %.0f to %.0f MiB", rssBefore, p.rss())
	a.Result("every one was refused at once with a clear error, at start and on reload")
}

// --- 4.4 to 4.7 -------------------------------------------------------------

// stalledRegistry listens on 127.0.0.1 for the attack, accepts connections
// and never answers; it returns a source naming it.
func stalledRegistry(a *A) (string, []string) {
	addr, closeAll, err := testutil.StallListener()
	if err != nil {
		a.Fatalf("%v", err)
	}
	a.Cleanup(closeAll)
	return "oci://" + addr + "/hangar/p:1\n    verify: false", nil
}

// drippingSource serves a module over HTTPS on 127.0.0.1 one byte every
// 50 ms; it returns the source (with its pin) and the environment that
// makes hangar trust the server's certificate.
func drippingSource(a *A) (string, []string) {
	srv := httptest.NewTLSServer(http.HandlerFunc(testutil.Drip))
	a.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	sum := sha256.Sum256([]byte("a module that never arrives"))
	return srv.URL + "/p.wasm\n    sha256: " + hex.EncodeToString(sum[:]), trust(a, srv)
}

// trust writes the test server's certificate to a file and returns the
// environment that makes hangar (Go's crypto/x509 on Linux) trust it.
func trust(a *A, srv *httptest.Server) []string {
	file := filepath.Join(a.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		a.Fatalf("%v", err)
	}
	return []string{"SSL_CERT_FILE=" + file, "SSL_CERT_DIR=" + filepath.Dir(file)}
}

// stalledFetch is the attack of starting hangar serve with a plugin from
// the network source that source sets up (the source, and the environment
// hangar needs for it), which never completes. With sigterm, it sends
// SIGTERM once the fetch is under way and measures how soon hangar exits;
// without, it waits for the fetch's own deadline (two minutes).
func stalledFetch(source func(a *A) (string, []string), sigterm bool) func(a *A) {
	return func(a *A) { fetchUnderAttack(a, source, sigterm) }
}

func fetchUnderAttack(a *A, source func(a *A) (string, []string), sigterm bool) {
	src, env := source(a)
	cfg := a.config("plugins:\n  - name: s\n    source: " + src + "\n")
	p := a.start(&procOpts{env: env}, "serve", "--stdio", "--cache-dir", a.env.compiled, "--config", cfg)
	if sigterm {
		a.Sleep(2 * time.Second) // the fetch is under way: connected, waiting
		a.Check(!p.exited(), "hangar exited before SIGTERM: %s", tail(p.log.String(), 3))
		start := time.Now()
		p.signal(syscall.SIGTERM)
		code := p.wait(30 * time.Second)
		took := time.Since(start)
		a.Figure("SIGTERM to exit", "%v (exit %d)", round(took), code)
		a.Check(took < 5*time.Second, "hangar took %v to stop after SIGTERM", took)
		a.Result("hangar stopped %v after SIGTERM, mid-fetch", round(took))
		return
	}
	code := p.wait(3 * time.Minute)
	took := time.Since(p.started)
	line := errorLine(p.log.String())
	a.Figure("start-up ended", "after %v, exit %d: %s", round(took), code, firstN(line, 140))
	a.Check(code == 1 && strings.Contains(line, "timed out"), "exit %d: %s", code, line)
	a.Check(took < 2*time.Minute+30*time.Second, "start-up took %v with a 2 minute fetch deadline", took)
	a.Result("start-up failed with \"timed out\" at the 2 minute fetch deadline")
}

// --- 4.8 -------------------------------------------------------------------

func killedDownload(a *A) {
	wasm, err := os.ReadFile(a.env.hello)
	if err != nil {
		a.Fatalf("%v", err)
	}
	sum := sha256.Sum256(wasm)
	pin := hex.EncodeToString(sum[:])
	var half sync.Mutex
	half.Lock() // held: the server sends half the module and waits
	var whole bool
	var mu sync.Mutex
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(wasm)))
		mu.Lock()
		all := whole
		mu.Unlock()
		if all {
			w.Write(wasm)
			return
		}
		w.Write(wasm[:len(wasm)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	a.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	env := trust(a, srv)
	xdg := filepath.Join(a.TempDir(), "xdg")
	temps := func() (names []string, size int64) {
		filepath.Walk(filepath.Join(xdg, "hangar", "sources"), func(path string, fi os.FileInfo, err error) error {
			if err == nil && strings.HasPrefix(fi.Name(), ".tmp-") {
				names = append(names, path)
				size += fi.Size()
			}
			return nil
		})
		return names, size
	}
	url := srv.URL + "/hello.wasm"
	p := a.start(&procOpts{env: env, xdg: xdg}, "pull", "--sha256", pin, url)
	a.Until(60*time.Second, "a .tmp-* file holding half the module", func() bool {
		_, size := temps()
		return size >= int64(len(wasm)/2)
	})
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
	left, size := temps()
	a.Check(len(left) == 1, "after SIGKILL: temporary files %v", left)

	mu.Lock()
	whole = true
	mu.Unlock()
	out, stderr, code, _ := a.runHangar(&procOpts{env: env, xdg: xdg}, time.Minute, "pull", "--sha256", pin, url)
	after, _ := temps()
	_, blobErr := os.Stat(filepath.Join(xdg, "hangar", "sources", "blobs", "sha256", pin))
	a.Check(code == 0 && strings.Contains(out, pin), "the second pull: exit %d\n%s%s", code, out, stderr)
	a.Check(len(after) == 0, "temporary files after the second pull: %v", after)
	a.Check(blobErr == nil, "the module is not in the cache: %v", blobErr)
	a.Figure("left by the killed pull", "%d file, %d bytes", len(left), size)
	a.Figure("after the next pull", "%d temporary files; the module cached under its digest", len(after))
	a.Result("the killed download's .tmp-* file was removed by the next fetch")
}

// --- 4.9 to 4.11 -------------------------------------------------------------

func configBombs(a *A) {
	bomb := "plugins:\n" + aliasBomb(a.env.flood)
	wide := "p: &p\n  name: p\n  path: " + a.env.flood + "\n  grants: {allowed_hosts: [a.example, b.example], env: {A: \"1\", B: \"2\"}}\n" +
		"plugins: [" + strings.TrimSuffix(strings.Repeat("*p,", 30000), ",") + "]\n"
	big := "plugins:\n  - {name: flood, path: " + a.env.flood + "}\n" + strings.Repeat("# padding\n", 200_000)
	var figs []string
	for _, tc := range []struct{ what, content, want string }{
		{fmt.Sprintf("alias bomb (%d bytes)", len(bomb)), bomb, "aliases (*name) expand to"},
		{fmt.Sprintf("30,000 aliases (%d KB)", len(wide)/1000), wide, "aliases (*name) expand to"},
		{fmt.Sprintf("%d MB configuration", len(big)/1000000), big, "a configuration file may have at most"},
	} {
		figs = append(figs, a.startFails(tc.what, tc.want, "serve", "--stdio", "--config", a.config(tc.content)))
	}
	a.Figure("at start", "%s", strings.Join(figs, "; "))

	dir := a.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	good := "http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: flood, path: " + a.env.flood + "}\n"
	a.writeFile(cfg, good)
	p := a.serve(nil, "--config", cfg)
	cs := a.client(p.url, nil)
	rssBefore := p.rss()
	start := time.Now()
	a.writeFile(cfg, "http:\n  addr: 127.0.0.1:0\n"+bomb)
	p.signal(syscall.SIGHUP)
	p.waitLog(`msg="reload failed`, 1, 30*time.Second)
	took := time.Since(start)
	a.echo(cs, 30*time.Second)
	a.Figure("alias bomb on reload", "refused in %v; RSS %.0f MiB before, %.0f MiB after", round(took), rssBefore, p.rss())
	a.Check(strings.Contains(lastLine(p.log.String(), "reload failed"), "expand to"), "reload: %s", lastLine(p.log.String(), "reload failed"))
	a.Result("each file was refused at once with a clear error; the running server was unharmed")
}

func bigConfigWatched(a *A) {
	dir := a.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	good := "http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: flood, path: " + a.env.flood + "}\n"
	a.writeFile(cfg, good)
	p := a.serve(nil, "--config", cfg)
	cs := a.client(p.url, nil)
	idle := func(d time.Duration) float64 {
		c0 := p.cpu()
		a.Sleep(d)
		return float64(p.cpu()-c0) / float64(d) * 100
	}
	before := idle(3 * time.Second)

	f, err := os.Create(cfg + ".big")
	if err != nil {
		a.Fatalf("%v", err)
	}
	f.WriteString(good)
	pad := bytes.Repeat([]byte("# padding, to make the file large\n"), 32<<10)
	for written := 0; written < 150_000_000; written += len(pad) {
		f.Write(pad)
	}
	f.Close()
	os.Rename(cfg+".big", cfg)
	p.waitLog(`msg="reload failed`, 1, 60*time.Second)
	a.Check(strings.Contains(lastLine(p.log.String(), "reload failed"), "may have at most"), "reload: %s", lastLine(p.log.String(), "reload failed"))
	after := idle(6 * time.Second)
	a.echo(cs, 30*time.Second)
	a.Figure("idle CPU", "%.1f%% before, %.1f%% while watching the 150 MB file (14%% before the fix)", before, after)
	a.Figure("RSS", "%.0f MiB", p.rss())
	a.Check(after < 5, "%.1f%% CPU while idle", after)
	a.Check(p.count(`msg="reload failed`) == 1, "the unchanged file was reloaded %d times", p.count(`msg="reload failed`))
	a.Result("refused once as too large, then not read again: %.1f%% CPU while idle", after)
}

func configNotRegular(a *A) {
	dir := a.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	good := "http:\n  addr: 127.0.0.1:0\nplugins:\n  - {name: flood, path: " + a.env.flood + "}\n"
	a.writeFile(cfg, good)
	p := a.serve(nil, "--config", cfg)
	cs := a.client(p.url, nil)
	rssBefore := p.rss()

	replace := func(make func(tmp string) error) {
		tmp := filepath.Join(dir, ".next")
		os.Remove(tmp)
		if err := make(tmp); err != nil {
			a.Fatalf("%v", err)
		}
		if err := os.Rename(tmp, cfg); err != nil {
			a.Fatalf("%v", err)
		}
	}
	replace(func(tmp string) error { return os.Symlink("/dev/zero", tmp) })
	p.waitLog(`msg="reload failed`, 1, 30*time.Second)
	a.Sleep(2 * time.Second)
	a.echo(cs, 30*time.Second)
	rssZero := p.rss()
	replace(func(tmp string) error { return syscall.Mkfifo(tmp, 0o644) })
	p.waitLog(`msg="reload failed`, 2, 30*time.Second)
	a.echo(cs, 30*time.Second)

	// Still reloading: a good file, announced with SIGHUP.
	before := p.count("msg=reloaded")
	replace(func(tmp string) error { return os.WriteFile(tmp, []byte(good), 0o644) })
	p.signal(syscall.SIGHUP)
	p.waitLog("msg=reloaded", before+1, 30*time.Second)
	start := time.Now()
	p.signal(syscall.SIGTERM)
	code := p.wait(30 * time.Second)
	a.Figure("RSS", "%.0f MiB before, %.0f MiB after the link to /dev/zero", rssBefore, rssZero)
	a.Figure("SIGTERM to exit", "%v (exit %d)", round(time.Since(start)), code)
	a.Check(rssZero-rssBefore < 64, "RSS grew from %.0f to %.0f MiB", rssBefore, rssZero)
	a.Check(code == 0, "exit %d after SIGTERM", code)
	a.Result("both were refused as not regular files; the server kept serving, reloading and stopping")
}
