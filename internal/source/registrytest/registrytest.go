// Package registrytest runs a real OCI registry, the CNCF distribution
// registry, as a separate process on 127.0.0.1 for tests.
//
// The registry binary is built once per test process, with
// "go install -ldflags=-s -w github.com/distribution/distribution/v3/cmd/registry@<Version>"
// into a temporary directory (through the Go module proxy the first time,
// from the module and build caches afterwards). Set HANGAR_TEST_REGISTRY to
// the path of a registry binary to use that instead. A package using Start
// should call Cleanup in TestMain after m.Run:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		registrytest.Cleanup()
//		os.Exit(code)
//	}
package registrytest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hangar-mcp/hangar/internal/testutil"
)

// Package and Version name the registry that is built.
const (
	Package = "github.com/distribution/distribution/v3/cmd/registry"
	Version = "v3.1.2"
)

var (
	mu       sync.Mutex
	binDir   string
	binPath  string
	buildErr error
	built    bool
)

// Binary returns the path of the registry binary, building it on first use.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("HANGAR_TEST_REGISTRY"); p != "" {
		return p
	}
	mu.Lock()
	defer mu.Unlock()
	if !built {
		built = true
		binPath, buildErr = build()
	}
	if buildErr != nil {
		t.Fatalf("registrytest: %v", buildErr)
	}
	return binPath
}

func build() (string, error) {
	dir, err := os.MkdirTemp("", "hangar-registry-")
	if err != nil {
		return "", err
	}
	binDir = dir
	gobin := filepath.Join(dir, "bin")
	cmd := exec.Command("go", "install", "-ldflags=-s -w", Package+"@"+Version) // no symbols: a faster link
	cmd.Dir = dir
	cmd.Env = append(goEnv(), "GOBIN="+gobin, "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", Package, Version, err, out)
	}
	return filepath.Join(gobin, "registry"), nil
}

// startEnv is the environment the test process started with: tests that
// point XDG_CACHE_HOME or HOME elsewhere (with t.Setenv) must not send the
// build to an empty build cache.
var startEnv = os.Environ()

// goEnv is the starting environment without -mod and -modfile flags, which go install
// pkg@version refuses.
func goEnv() []string {
	var env []string
	for _, kv := range startEnv {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			var keep []string
			for _, f := range strings.Fields(v) {
				if !strings.HasPrefix(f, "-mod") { // -mod=, -modfile=
					keep = append(keep, f)
				}
			}
			kv = "GOFLAGS=" + strings.Join(keep, " ")
		}
		env = append(env, kv)
	}
	return env
}

// Cleanup removes the built binary. Call it after m.Run, when no test runs.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	binDir, binPath, buildErr, built = "", "", nil, false
}

// Registry is a running registry, stopped when the test ends.
type Registry struct {
	Host string // "127.0.0.1:<port>"
	Root string // the storage directory

	cmd    *exec.Cmd
	out    *testutil.SyncBuffer
	exited chan struct{}
}

// Start starts a registry on a free port of 127.0.0.1, storing its content
// under a new temporary directory, and waits until it answers.
func Start(t testing.TB) *Registry {
	t.Helper()
	bin := Binary(t)
	var lastErr error
	for range 3 { // the free port may be taken before the registry binds it
		r, err := start(t, bin)
		if err == nil {
			t.Cleanup(r.Stop)
			return r
		}
		lastErr = err
	}
	t.Fatalf("registrytest: %v", lastErr)
	return nil
}

func start(t testing.TB, bin string) (*Registry, error) {
	dir := t.TempDir()
	root := filepath.Join(dir, "storage")
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	conf := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
`, root, host)
	confPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	out := &testutil.SyncBuffer{}
	cmd := exec.Command(bin, "serve", confPath)
	cmd.Env = append(os.Environ(), "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	r := &Registry{Host: host, Root: root, cmd: cmd, out: out, exited: exited}
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("the registry exited on start:\n%s", out.String())
		default:
		}
		resp, err := client.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return nil, fmt.Errorf("the registry did not answer on %s:\n%s", host, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Ref returns "oci://<host>/<path>", as in r.Ref("hangar/hello:1.0").
func (r *Registry) Ref(path string) string { return "oci://" + r.Host + "/" + path }

// BlobPath returns the file in which the registry stores the blob (module,
// config or manifest) with the SHA-256 hex digest h: edit it to tamper
// with what the registry serves.
func (r *Registry) BlobPath(h string) string {
	return filepath.Join(r.Root, "docker", "registry", "v2", "blobs", "sha256", h[:2], h, "data")
}

// Stop stops the registry; it is called when the test ends.
func (r *Registry) Stop() {
	if r.cmd.Process != nil {
		r.cmd.Process.Kill()
		<-r.exited
	}
}

// Log returns what the registry printed.
func (r *Registry) Log() string { return r.out.String() }
