package main_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// hangarProc is a `hangar serve` process.
type hangarProc struct {
	cmd  *exec.Cmd
	logs *testutil.SyncBuffer
	done chan struct{} // closed when the process has exited
}

// runServe starts hangar with args (and env added to its environment),
// killed at the end of the test.
func runServe(t *testing.T, env []string, args ...string) *hangarProc {
	t.Helper()
	cmd := exec.Command(hangar, args...)
	cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	return startCmd(t, cmd)
}

// startCmd starts a hangar command, killed at the end of the test.
func startCmd(t *testing.T, cmd *exec.Cmd) *hangarProc {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &hangarProc{cmd: cmd, logs: &testutil.SyncBuffer{}, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.logs.Write([]byte(sc.Text() + "\n"))
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("%s:\n%s", strings.Join(cmd.Args, " "), s.logs)
		}
	})
	return s
}

// waitLog waits until the log has a line re matches, and returns its
// submatches.
func (s *hangarProc) waitLog(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if m := re.FindStringSubmatch(s.logs.String()); m != nil {
			return m
		}
		select {
		case <-s.done:
			t.Fatalf("hangar exited before logging %s:\n%s", re, s.logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hangar did not log %s:\n%s", re, s.logs)
		}
	}
}

// stop stops the process with SIGTERM and waits for it.
func (s *hangarProc) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("hangar did not stop on SIGTERM")
	}
}

var (
	mcpURLRE     = regexp.MustCompile(`url=(https?://127\.0\.0\.1:\d+)/mcp`)
	metricsURLRE = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/metrics`)
)

// TestServeLoopbackOnlyWithoutAuth: without http.auth, serve refuses an
// address other machines can reach, and says at start that HTTP is
// loopback-only.
func TestServeLoopbackOnlyWithoutAuth(t *testing.T) {
	legacy := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		_, errOut, code := run(t, "serve", "--http", addr, legacy)
		if code != 1 || !strings.Contains(errOut, addr+" can be reached from other machines, and http.auth is not configured") {
			t.Errorf("--http %s: exit %d, %s", addr, code, errOut)
		}
	}
	cfg := writeConfig(t, "http:\n  addr: 0.0.0.0:8080\nplugins:\n  - {name: p, path: "+legacy+"}\n")
	if _, errOut, code := run(t, "serve", "--config", cfg); code != 1 || !strings.Contains(errOut, "hangar.yaml:2:9: http.addr: 0.0.0.0:8080 can be reached from other machines") {
		t.Errorf("http.addr 0.0.0.0: exit %d, %s", code, errOut)
	}
	s := runServe(t, nil, "serve", "--http", "127.0.0.1:0", legacy)
	s.waitLog(t, regexp.MustCompile(`msg="HTTP is loopback-only: no http.auth is configured`))
	s.stop(t)
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their paths and a pool trusting it.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "hangar test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// authedTransport adds a bearer token to requests sent over TLS trusting
// pool.
type authedTransport struct {
	token string
	rt    http.RoundTripper
}

func (a authedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if a.token != "" {
		r.Header.Set("Authorization", "Bearer "+a.token)
	}
	return a.rt.RoundTrip(r)
}

// TestServeTLSTokensAndMetrics runs `hangar serve` with TLS from a
// generated certificate, static tokens from a file and from the
// environment, and the operations listener on metrics.addr.
func TestServeTLSTokensAndMetrics(t *testing.T) {
	dir := t.TempDir()
	_, _, pool := writeCert(t, dir)
	const fileToken, envToken = "file-0123456789abcdef0123456789abcdef", "env-0123456789abcdef0123456789abcdef0"
	os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte("- {id: ci, token: "+fileToken+", plugins: [hello]}\n"), 0o600)
	hello := testutil.BuildPlugin(t, "./examples/hello")
	cfg := filepath.Join(dir, "hangar.yaml")
	os.WriteFile(cfg, []byte(`http:
  addr: 127.0.0.1:0
  tls: {cert: tls.crt, key: tls.key}
  auth:
    tokens_file: tokens.yaml
    tokens_env: HANGAR_TOKENS
metrics:
  addr: 127.0.0.1:0
plugins:
  - {name: hello, path: `+hello+`}
`), 0o600)
	s := runServe(t, []string{"HANGAR_TOKENS=[{id: ops, token: " + envToken + ", plugins: ['*']}]"}, "serve", "--config", cfg)
	base := s.waitLog(t, mcpURLRE)[1]
	ops := s.waitLog(t, metricsURLRE)[1]
	s.waitLog(t, regexp.MustCompile(`msg="HTTP requires a bearer token" static_tokens=2 oauth=false`))
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("MCP URL %s is not https", base)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	// Clients of 2025-11-25, so that they open sessions, which the
	// metrics count.
	connect := func(token string) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "tls-test", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: authedTransport{token, tr}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	if _, err := connect(""); err == nil {
		t.Error("connected without a token")
	}
	for _, token := range []string{fileToken, envToken} {
		cs, err := connect(token)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "TLS"}})
		if err != nil || res.IsError {
			t.Errorf("greet over TLS: %v %+v", err, res)
		}
		cs.Close()
	}
	// Plain HTTP to the TLS port fails.
	if resp, err := http.Get(strings.Replace(base, "https", "http", 1) + "/mcp"); err == nil && resp.StatusCode < 400 {
		t.Errorf("plain HTTP to the TLS port: %s", resp.Status)
	}
	// The operations listener: metrics without a token, health, readiness.
	body := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, metrics := body(ops + "/metrics")
	if code != 200 || !strings.Contains(metrics, `hangar_plugin_calls_total{method="tools/call",name="greet",plugin="hello"} 2`) ||
		!strings.Contains(metrics, `hangar_sessions_opened_total{transport="streamable_http"} 2`) {
		t.Errorf("metrics: %d\n%s", code, metrics)
	}
	if code, b := body(ops + "/healthz"); code != 200 || !strings.Contains(b, `"ok"`) {
		t.Errorf("healthz: %d %s", code, b)
	}
	if code, b := body(ops + "/readyz"); code != 200 || !strings.Contains(b, `"ready"`) {
		t.Errorf("readyz: %d %s", code, b)
	}
	// With metrics.addr, /metrics is not served beside /mcp.
	c := &http.Client{Transport: authedTransport{envToken, tr}}
	if resp, err := c.Get(base + "/metrics"); err != nil || resp.StatusCode != 404 {
		t.Errorf("metrics beside /mcp: %v %v", resp, err)
	}
	s.stop(t)
}

// snapshot lists the files under dir with their sizes, modes and
// modification times.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b.WriteString(rel + " " + fi.Mode().String() + " " + fi.ModTime().String())
		if !d.IsDir() {
			fmt.Fprintf(&b, " %d", fi.Size())
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWarm compiles plugins with `hangar warm`; `hangar serve` then starts
// from that cache without compiling and without writing to it, as it must
// on a read-only file system.
func TestWarm(t *testing.T) {
	hello := testutil.BuildPlugin(t, "./examples/hello")
	notes := testutil.BuildPlugin(t, "./examples/notes")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hangar.yaml")
	os.WriteFile(cfg, []byte("plugins:\n  - {name: hello, path: "+hello+"}\n  - {name: notes, path: "+notes+"}\n"), 0o600)
	cache := filepath.Join(dir, "cache")
	out, errOut, code := run(t, "warm", "--config", cfg, "--cache-dir", cache)
	if code != 0 || !strings.HasPrefix(out, "compiled 2 plugins into "+cache) {
		t.Fatalf("warm: exit %d\n%s%s", code, out, errOut)
	}
	before := snapshot(t, cache)
	if !strings.Contains(before, "wazero-") {
		t.Fatalf("warm left no compiled code:\n%s", before)
	}

	s := runServe(t, nil, "serve", "--config", cfg, "--cache-dir", cache, "--http", "127.0.0.1:0")
	addNoteOnce(t, s.waitLog(t, mcpURLRE)[1], "")
	s.stop(t)
	// Nothing was compiled again (that would have added entries), and
	// nothing was written.
	if after := snapshot(t, cache); after != before {
		t.Errorf("serve changed the warmed cache:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// addNoteOnce connects to the MCP endpoint at base (with a bearer token, if
// not ""), adds a note with examples/notes, and disconnects.
func addNoteOnce(t *testing.T, base, token string) *mcp.ClientSession {
	t.Helper()
	return addNoteOnceAt(t, base, token, "")
}

// addNoteOnceAt is addNoteOnce with a client that asks for protocol
// version (its latest, 2026-07-28, when ""): 2025-11-25 and older open a
// session.
func addNoteOnceAt(t *testing.T, base, token, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "note-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: authedTransport{token, http.DefaultTransport}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t", "text": "x"}}); err != nil || res.IsError {
		t.Errorf("add_note: %v %+v", err, res)
	}
	cs.Close()
	return cs
}
