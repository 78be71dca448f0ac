package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/testutil/mcpschema"
)

// manifests reads every document of deploy/kubernetes, by kind.
func manifests(t *testing.T) map[string]map[string]any {
	t.Helper()
	dir := filepath.Join(testutil.Root(), "deploy", "kubernetes")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	byKind := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kind, _ := doc["kind"].(string)
			if kind == "" {
				t.Fatalf("%s: a document without kind", f)
			}
			if _, dup := byKind[kind]; dup {
				t.Fatalf("two %s manifests", kind)
			}
			byKind[kind] = doc
		}
	}
	return byKind
}

// dig follows keys (strings for mappings, ints for lists) into v.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a mapping at %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no item %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// TestDeploy checks deploy/: the Kubernetes manifests parse and agree with
// each other and with the ConfigMap's hangar.yaml, which loads with package
// config; the Dockerfile builds a static binary on distroless and warms the
// cache; and the image's layout works: hangar warm fills the cache, then
// hangar serve, as an unprivileged user with the cache, the plugins and the
// configuration read-only, answers the probes' paths and MCP calls, and
// writes nothing.
func TestDeploy(t *testing.T) {
	m := manifests(t)
	for _, kind := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "Kustomization"} {
		if m[kind] == nil {
			t.Fatalf("no %s in deploy/kubernetes", kind)
		}
	}
	dep := m["Deployment"]
	labels := dig(t, dep, "spec", "template", "metadata", "labels").(map[string]any)
	for kind, sel := range map[string]any{
		"Deployment":          dig(t, dep, "spec", "selector", "matchLabels"),
		"Service":             dig(t, m["Service"], "spec", "selector"),
		"PodDisruptionBudget": dig(t, m["PodDisruptionBudget"], "spec", "selector", "matchLabels"),
	} {
		for k, v := range sel.(map[string]any) {
			if labels[k] != v {
				t.Errorf("the %s selector %s=%v does not match the pods' labels %v", kind, k, v, labels)
			}
		}
	}
	if n, _ := dig(t, dep, "spec", "replicas").(int); n < 2 {
		t.Errorf("replicas = %v", n)
	}
	if dig(t, m["PodDisruptionBudget"], "spec", "maxUnavailable") != 1 {
		t.Error("the PodDisruptionBudget must allow at most one replica down")
	}
	res := dig(t, m["Kustomization"], "resources").([]any)
	for _, f := range []string{"configmap.yaml", "deployment.yaml", "service.yaml", "pdb.yaml"} {
		if !slices.Contains(res, any(f)) {
			t.Errorf("kustomization.yaml does not list %s", f)
		}
	}

	c := dig(t, dep, "spec", "template", "spec", "containers", 0)
	ports := map[string]int{}
	for _, p := range dig(t, c, "ports").([]any) {
		ports[dig(t, p, "name").(string)] = dig(t, p, "containerPort").(int)
	}
	for _, p := range dig(t, m["Service"], "spec", "ports").([]any) {
		if _, ok := ports[dig(t, p, "targetPort").(string)]; !ok {
			t.Errorf("the Service targets port %v, which the container does not name", dig(t, p, "targetPort"))
		}
	}
	sc := dig(t, c, "securityContext")
	if dig(t, sc, "readOnlyRootFilesystem") != true || dig(t, sc, "allowPrivilegeEscalation") != false {
		t.Errorf("container securityContext %v", sc)
	}
	if dig(t, dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("the pod does not run as non-root")
	}
	probes := map[string]string{}
	for _, p := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		probes[p] = dig(t, c, p, "httpGet", "path").(string)
		if dig(t, c, p, "httpGet", "port") != "ops" {
			t.Errorf("%s is not on the ops port", p)
		}
	}
	if probes["livenessProbe"] != "/healthz" || probes["readinessProbe"] != "/readyz" {
		t.Errorf("probes %v", probes)
	}
	args := dig(t, c, "args").([]any)
	// Each pod is named after its IP, which the peer URL template of the
	// ConfigMap's mrtr section turns into its address; every pod has the
	// state key of one Secret; the Service keeps no affinity.
	if j := slices.Index(args, any("--replica")); j < 0 || j+1 >= len(args) || args[j+1] != "$(POD_IP)" {
		t.Errorf("the pods are not named after their IP: args %v", args)
	}
	envs := map[string]any{}
	for _, e := range dig(t, c, "env").([]any) {
		envs[dig(t, e, "name").(string)] = dig(t, e, "valueFrom")
	}
	if dig(t, envs["POD_IP"], "fieldRef", "fieldPath") != "status.podIP" {
		t.Errorf("POD_IP is not the pod's IP: %v", envs["POD_IP"])
	}
	if envs["HANGAR_STATE_KEY"] == nil || dig(t, envs["HANGAR_STATE_KEY"], "secretKeyRef", "name") != "hangar-state-key" {
		t.Errorf("HANGAR_STATE_KEY is not from the Secret hangar-state-key: %v", envs["HANGAR_STATE_KEY"])
	}
	if a, _ := dig(t, m["Service"], "spec", "sessionAffinity").(string); a != "" && a != "None" {
		t.Errorf("the Service keeps affinity (%s): 2026 clients need none", a)
	}
	i := slices.Index(args, any("--config"))
	mount := dig(t, c, "volumeMounts", 0, "mountPath").(string)
	if i < 0 || filepath.Dir(args[i+1].(string)) != mount || dig(t, c, "volumeMounts", 0, "name") != dig(t, dep, "spec", "template", "spec", "volumes", 0, "name") {
		t.Errorf("--config %v is not in the mounted ConfigMap at %s", args, mount)
	}
	if dig(t, dep, "spec", "template", "spec", "volumes", 0, "configMap", "name") != dig(t, m["ConfigMap"], "metadata", "name") {
		t.Error("the Deployment does not mount the ConfigMap")
	}
	// A writable /tmp, where a read-only cache is copied (see
	// TestServeReadOnlyCacheMiss).
	if dig(t, c, "volumeMounts", 1, "mountPath") != "/tmp" || dig(t, dep, "spec", "template", "spec", "volumes", 1, "emptyDir") == nil {
		t.Error("the Deployment has no writable /tmp")
	}

	// The Dockerfile.
	df, err := os.ReadFile(filepath.Join(testutil.Root(), "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0 go build", "FROM gcr.io/distroless/static", "hangar warm --cache-dir /out/cache/hangar/compiled", "ENV XDG_CACHE_HOME=/var/cache", "USER nonroot", `"--config", "` + args[i+1].(string) + `"`, "COPY --from=build /out/plugins /etc/hangar/plugins"} {
		if !strings.Contains(string(df), want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}

	// The image's layout, in a scratch directory: the plugins where the
	// Dockerfile puts them, warmed as it warms them, and the ConfigMap's
	// hangar.yaml where the Deployment mounts it.
	root := t.TempDir()
	plugins := filepath.Join(root, "etc", "hangar", "plugins")
	confDir := filepath.Join(root, filepath.FromSlash(mount))
	cacheHome := filepath.Join(root, "var", "cache")
	for _, d := range []string{plugins, confDir, cacheHome} {
		os.MkdirAll(d, 0o755)
	}
	for _, p := range []string{"hello", "notes"} {
		b, err := os.ReadFile(testutil.BuildPlugin(t, "./examples/"+p))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(plugins, p+".wasm"), b, 0o644)
	}
	if out, errOut, code := run(t, "warm", "--cache-dir", filepath.Join(cacheHome, "hangar", "compiled"), filepath.Join(plugins, "hello.wasm"), filepath.Join(plugins, "notes.wasm")); code != 0 {
		t.Fatalf("warm: %d %s%s", code, out, errOut)
	}
	text := dig(t, m["ConfigMap"], "data", "hangar.yaml").(string)
	text = strings.ReplaceAll(text, "/etc/hangar/plugins/", plugins+"/")
	cfgFile := filepath.Join(confDir, "hangar.yaml")
	os.WriteFile(cfgFile, []byte(text), 0o644)
	const token = "deploy-0123456789abcdef0123456789abcdef"
	tokens := "[{id: test, token: " + token + ", plugins: ['*']}]"
	t.Setenv("HANGAR_TOKENS", tokens)
	t.Setenv("HANGAR_STATE_KEY", stateKey)
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatalf("the ConfigMap's hangar.yaml: %v", err)
	}
	if cfg.HTTP.Auth == nil || port(t, cfg.HTTP.Addr) != ports["mcp"] || port(t, cfg.Metrics.Addr) != ports["ops"] || len(cfg.Plugins) != 2 {
		t.Errorf("hangar.yaml: http %+v, metrics %+v, ports %v", cfg.HTTP, cfg.Metrics, ports)
	}
	if peer := strings.ReplaceAll(cfg.MRTR.PeerURL, "{replica}", "10.1.2.3"); peer != fmt.Sprintf("http://10.1.2.3:%d/mcp", ports["mcp"]) || len(cfg.MRTR.StateKey) != config.StateKeySize {
		t.Errorf("hangar.yaml: mrtr peer_url %q (want the pod IP and the mcp port), state key of %d bytes", cfg.MRTR.PeerURL, len(cfg.MRTR.StateKey))
	}

	// Serve it, read-only and unprivileged, on 127.0.0.1.
	text = regexp.MustCompile(`0\.0\.0\.0:\d+`).ReplaceAllString(text, "127.0.0.1:0")
	os.WriteFile(cfgFile, []byte(text), 0o644)
	bin := filepath.Join(root, "usr", "local", "bin", "hangar")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if b, err := os.ReadFile(hangar); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatal(err)
	}
	readOnly(t, root)
	before := snapshot(t, cacheHome)
	cmd := exec.Command(bin, "serve", "--config", cfgFile, "--replica", "10.1.2.3")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cacheHome, "HOME=/nonexistent", "HANGAR_TOKENS="+tokens, "HANGAR_STATE_KEY="+stateKey)
	if os.Geteuid() == 0 {
		// As root, permissions stop nothing: run as nobody, as the image's
		// nonroot user would.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	s := startCmd(t, cmd)
	base := s.waitLog(t, mcpURLRE)[1]
	ops := s.waitLog(t, metricsURLRE)[1]
	for probe, path := range probes {
		// /readyz says 503 until the plugins have compiled in the
		// background; the probe asks again, as kubelet does.
		for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			resp, err := http.Get(ops + path)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Errorf("%s %s: %v %v", probe, path, resp, err)
				break
			}
		}
	}
	// An older client's session is named after the replica; a 2026
	// client has none.
	if cs := addNoteOnceAt(t, base, token, "2025-11-25"); !strings.HasPrefix(cs.ID(), "10.1.2.3~") {
		t.Errorf("session ID %q does not name the replica", cs.ID())
	}
	if cs := addNoteOnce(t, base, token); cs.InitializeResult().ProtocolVersion != "2026-07-28" || cs.ID() != "" {
		t.Errorf("a 2026 client: version %s, session %q", cs.InitializeResult().ProtocolVersion, cs.ID())
	}
	s.stop(t)
	if after := snapshot(t, cacheHome); after != before {
		t.Errorf("serve changed the image's cache:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if logs := s.logs.String(); strings.Contains(logs, "level=ERROR") {
		t.Errorf("errors in the log:\n%s", logs)
	}
}

// stateKey is the Secret hangar-state-key of the tests: 32 bytes in hex.
const stateKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestDeployForwarding runs two pods of the manifests side by side: the
// ConfigMap's hangar.yaml (with the mrtr test plugin beside its plugins,
// since neither example asks its client for input), each pod named after
// its own address (127.0.0.2 and 127.0.0.3 as pod IPs, on the port the
// Deployment gives mcp), the Secret's state key, a client with a token and
// the Service's name as Host. A call that asks for input parks on one pod;
// its retry, sent to the other as the Service may, is forwarded and
// completes the same execution.
func TestDeployForwarding(t *testing.T) {
	m := manifests(t)
	text := dig(t, m["ConfigMap"], "data", "hangar.yaml").(string)
	c := dig(t, m["Deployment"], "spec", "template", "spec", "containers", 0)
	var mcpPort int
	for _, p := range dig(t, c, "ports").([]any) {
		if dig(t, p, "name") == "mcp" {
			mcpPort = dig(t, p, "containerPort").(int)
		}
	}
	pods := []string{"127.0.0.2", "127.0.0.3"}
	free := loopbackPort(t, pods)
	for _, p := range []string{"hello", "notes"} {
		text = strings.ReplaceAll(text, "/etc/hangar/plugins/"+p+".wasm", testutil.BuildPlugin(t, "./examples/"+p))
	}
	text += "  - name: mrtr\n    path: " + testutil.BuildPlugin(t, "./internal/testplugins/mrtr") + "\n"
	// The pods' port: the Deployment's, made a free one on this machine
	// (in the listen address and the peer URL alike).
	text = strings.ReplaceAll(text, fmt.Sprintf(":%d", mcpPort), ":"+free)
	text = regexp.MustCompile(`0\.0\.0\.0:9090`).ReplaceAllString(text, "127.0.0.1:0")
	const token = "deploy-0123456789abcdef0123456789abcdef"
	cache := testutil.ShareCompiledCache(t, t.TempDir())
	var urls []string
	for _, ip := range pods {
		cfg := writeConfig(t, strings.Replace(text, "0.0.0.0:"+free, ip+":"+free, 1))
		cmd := exec.Command(hangar, "serve", "--config", cfg, "--replica", ip)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "HANGAR_TOKENS=[{id: test, token: "+token+", plugins: ['*']}]", "HANGAR_STATE_KEY="+stateKey)
		p := startCmd(t, cmd)
		p.waitLog(t, regexp.MustCompile(`url=http://`+regexp.QuoteMeta(ip)+`:\d+/mcp`))
		p.waitLog(t, readyRE)
		urls = append(urls, "http://"+ip+":"+free+"/mcp")
	}
	// The client reaches the pods as the Service: Host hangar.
	conv := mcpschema.NewConversation(t)
	hc := &http.Client{Transport: hostAndToken{"hangar", token, conv.RoundTripper(nil)}}
	args := map[string]any{"message": "Name?"}
	status, msg := post2026(t, hc, urls[0], "tools/call", map[string]any{"name": "ask", "arguments": args})
	state, key, question := inputRequired(t, msg)
	status, msg = post2026(t, hc, urls[1], "tools/call", map[string]any{"name": "ask", "arguments": args, "requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": userName}}}})
	var a struct {
		Nonce   string
		Content map[string]any
	}
	json.Unmarshal([]byte(resultText(msg)), &a)
	if status != http.StatusOK || a.Content["name"] != userName || question != "Name? "+a.Nonce {
		t.Errorf("the retry sent to the other pod: HTTP %d %v; want the call parked on %s completed", status, msg, pods[0])
	}
}

// hostAndToken sends requests with a Host and a bearer token.
type hostAndToken struct {
	host, token string
	base        http.RoundTripper
}

func (h hostAndToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	r.Header.Set("Authorization", "Bearer "+h.token)
	return h.base.RoundTrip(r)
}

// readOnly makes everything under root read-only, and readable by all.
func readOnly(t *testing.T, root string) {
	t.Helper()
	// The directories above root (t.TempDir's) must be searchable too.
	for d := root; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o444)
		if d.IsDir() || strings.HasSuffix(path, "/hangar") {
			mode = 0o555
		}
		return os.Chmod(path, mode)
	})
	t.Cleanup(func() {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(path, 0o755)
			}
			return nil
		})
	})
}

// TestServeReadOnlyCacheMiss: a plugin missing from a read-only cache (an
// image run on a CPU unlike the one that warmed it, or a plugin added
// since) is compiled anyway, into a temporary copy of the cache, which is
// removed at the end; the read-only cache is untouched.
func TestServeReadOnlyCacheMiss(t *testing.T) {
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	plugins := filepath.Join(root, "plugins")
	os.MkdirAll(plugins, 0o755)
	var files []string
	for _, p := range []string{"hello", "notes"} {
		b, err := os.ReadFile(testutil.BuildPlugin(t, "./examples/"+p))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(plugins, p+".wasm"))
		os.WriteFile(files[len(files)-1], b, 0o644)
	}
	if out, errOut, code := run(t, "warm", "--cache-dir", cache, files[0]); code != 0 {
		t.Fatalf("warm: %d %s%s", code, out, errOut)
	}
	bin := filepath.Join(root, "hangar")
	if b, err := os.ReadFile(hangar); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatal(err)
	}
	readOnly(t, root)
	before := snapshot(t, cache)
	cmd := exec.Command(bin, "serve", "--cache-dir", cache, "--http", "127.0.0.1:0", files[0], files[1])
	cmd.Env = append(os.Environ(), "HOME=/nonexistent", "XDG_CACHE_HOME=/nonexistent")
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	s := startCmd(t, cmd)
	copyDir := s.waitLog(t, regexp.MustCompile(`msg="the compilation cache is read-only: serving from a writable copy" cache_dir=\S+ copy=(\S+)`))[1]
	addNoteOnce(t, s.waitLog(t, mcpURLRE)[1], "") // notes was compiled at start
	s.stop(t)
	if after := snapshot(t, cache); after != before {
		t.Errorf("serve changed the read-only cache:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(copyDir); err == nil {
		t.Errorf("the copy %s was not removed", copyDir)
	}

	// Without a writable temporary directory, the read-only cache serves
	// the plugins it has, and the log says what to do.
	cmd = exec.Command(bin, "serve", "--cache-dir", cache, "--http", "127.0.0.1:0", files[0])
	cmd.Env = append(os.Environ(), "HOME=/nonexistent", "XDG_CACHE_HOME=/nonexistent", "TMPDIR="+plugins)
	cmd.SysProcAttr = s.cmd.SysProcAttr
	s = startCmd(t, cmd)
	s.waitLog(t, regexp.MustCompile(`cannot be copied to a temporary directory: a plugin missing from it will fail to compile; make TMPDIR writable`))
	s.waitLog(t, mcpURLRE)
	s.stop(t)
	if after := snapshot(t, cache); after != before {
		t.Errorf("serve changed the read-only cache:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
