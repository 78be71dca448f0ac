package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hangar-mcp/hangar/internal/auth"
	"github.com/hangar-mcp/hangar/internal/auth/authtest"
	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/metrics"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/server"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// bearer adds a bearer token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b != "" {
		r.Header.Set("Authorization", "Bearer "+string(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// httpConnect connects a go-sdk client to url with a bearer token ("" for
// none).
func httpConnect(t *testing.T, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "svc-test", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + server.Path, HTTPClient: &http.Client{Transport: bearer(token)}}, sessionOpts)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var uris []string
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	return uris
}

const (
	helloToken = "hello-0123456789abcdef0123456789abcdef"
	allToken   = "all-0123456789abcdef0123456789abcdef01"
)

// sha is the SHA-256 of a token, as the configuration holds it.
func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestAuthorizedSessions serves hello and notes over HTTP with static
// tokens and OAuth, and checks that each session sees, and may use, only
// the plugins its token allows.
func TestAuthorizedSessions(t *testing.T) {
	hello := loadPlugin(t, "hello", testutil.BuildPlugin(t, "./examples/hello"), config.Limits{})
	notes := loadPlugin(t, "notes", testutil.BuildPlugin(t, "./examples/notes"), config.Limits{})
	s := newServer(t, nil, server.Mount{Plugin: hello}, server.Mount{Plugin: notes})
	is := authtest.New(t)
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + server.Path
	a, err := auth.New(&config.Auth{
		Tokens: []config.Token{
			{ID: "hello-only", SHA256: sha(helloToken), Plugins: []string{"hello"}},
			{ID: "all", SHA256: sha(allToken), Plugins: []string{"*"}},
		},
		OAuth: &config.OAuth{Issuer: is.URL, Resource: resource, Audience: resource, JWKSURL: is.JWKSURL, AuthorizationServers: []string{is.URL}},
	}, &auth.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = s.HTTPHandler(&server.HTTPOptions{Auth: a})
	srv.Start()
	t.Cleanup(srv.Close)
	ctx := context.Background()

	// No token, or a bad one: 401 naming the protected-resource metadata.
	for name, tok := range map[string]string{
		"missing":        "",
		"expired":        is.Mint(t, authtest.Claims{Audience: resource, Scope: "plugin:hello", Expiry: -time.Hour}),
		"wrong audience": is.Mint(t, authtest.Claims{Audience: "https://elsewhere.example.com/mcp", Scope: "plugin:hello"}),
		"wrong issuer":   is.Mint(t, authtest.Claims{Audience: resource, Scope: "plugin:hello", Issuer: "https://evil.example.com"}),
		"bad signature":  is.Mint(t, authtest.Claims{Audience: resource, Scope: "plugin:hello", OtherKey: true}),
		"unknown static": strings.Repeat("x", 40),
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+server.Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := `Bearer resource_metadata="http://` + srv.Listener.Addr().String() + `/.well-known/oauth-protected-resource/mcp"`
		if tok != "" {
			// A refused token's challenge says why (RFC 6750).
			want += `, error="invalid_token", error_description="`
		}
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(got, want) || tok == "" && got != want {
			t.Errorf("%s token: %d %q", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if _, err := httpConnect(t, srv.URL, tok, nil); err == nil {
			t.Errorf("%s token: a client connected", name)
		}
	}
	md, err := http.Get(srv.URL + auth.MetadataPath + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Resource string }
	json.NewDecoder(md.Body).Decode(&meta)
	md.Body.Close()
	if meta.Resource != resource {
		t.Errorf("metadata resource %q, want %q", meta.Resource, resource)
	}

	// Each of these sees hello's tools only.
	jwtHello := is.Mint(t, authtest.Claims{Audience: resource, Scope: "plugin:hello"})
	for name, tok := range map[string]string{"static": helloToken, "oauth": jwtHello} {
		changed := make(chan string, 16)
		cs, err := httpConnect(t, srv.URL, tok, &mcp.ClientOptions{
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- "resources" },
			ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { changed <- "tools" },
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := strings.Join(toolNames(t, cs), ","); got != "base64,greet,hash,uuid" {
			t.Errorf("%s: tools %s", name, got)
		}
		if got := resourceURIs(t, cs); len(got) != 0 {
			t.Errorf("%s: resources %v", name, got)
		}
		for rt, err := range cs.ResourceTemplates(ctx, nil) {
			t.Errorf("%s: template %v %v", name, rt, err)
		}
		for p, err := range cs.Prompts(ctx, nil) {
			t.Errorf("%s: prompt %v %v", name, p, err)
		}
		if res := callTool(t, cs, "greet", map[string]any{"name": "Ada"}); res.IsError {
			t.Errorf("%s: greet: %+v", name, res)
		}
		// notes exists, but not for this token: refused exactly as a name
		// that nothing offers.
		_, err1 := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t", "text": "x"}})
		_, err2 := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
		if err1 == nil || err2 == nil || strings.ReplaceAll(err1.Error(), "add_note", "X") != strings.ReplaceAll(err2.Error(), "no_such_tool", "X") {
			t.Errorf("%s: add_note: %v; unknown tool: %v", name, err1, err2)
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://list"}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s: read notes://list: %v", name, err)
		}
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize_note", Arguments: map[string]string{"id": "1"}}); err == nil || !strings.Contains(err.Error(), `unknown prompt "summarize_note"`) {
			t.Errorf("%s: summarize_note: %v", name, err)
		}
		if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "summarize_note"}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: ""}}); err == nil || !strings.Contains(err.Error(), "unknown ref/prompt") {
			t.Errorf("%s: complete: %v", name, err)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "notes://list"}); err == nil {
			t.Errorf("%s: subscribed to notes://list", name)
		}

		// Another session, allowed every plugin, adds a note: the list
		// changes, and this session is not told (nothing it may see
		// changed), and still sees none of notes'.
		// A list change from before (the previous round's reload) may
		// reach this session late, sent before its first request noted its
		// grant: let it arrive, and forget it.
		time.Sleep(200 * time.Millisecond)
		for len(changed) > 0 {
			<-changed
		}
		allChanged := make(chan bool, 16)
		all, err := httpConnect(t, srv.URL, allToken, &mcp.ClientOptions{
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { allChanged <- true },
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(t, all); !slices.Contains(got, "add_note") || !slices.Contains(got, "greet") {
			t.Errorf("all: tools %v", got)
		}
		if res := callTool(t, all, "add_note", map[string]any{"title": "secret", "text": "x"}); res.IsError {
			t.Fatalf("add_note: %+v", res)
		}
		if got := resourceURIs(t, all); len(got) < 2 {
			t.Errorf("all: resources %v", got)
		}
		select {
		case <-allChanged:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the session allowed every plugin got no resources/list_changed", name)
		}
		// Sent to every session at once; give this one's a moment.
		select {
		case what := <-changed:
			t.Errorf("%s: told that the %s list changed, when only notes' did", name, what)
		case <-time.After(time.Second):
		}
		if got := resourceURIs(t, cs); len(got) != 0 {
			t.Errorf("%s: after the change, resources %v", name, got)
		}
		// A change it may see is told: a reload replaces hello.
		if err := s.Reload(ctx, []server.Mount{{Plugin: hello}, {Plugin: notes}}); err != nil {
			t.Fatal(err)
		}
		// (Every list of a reloaded plugin counts as changed.)
		for told := false; !told; {
			select {
			case what := <-changed:
				told = what == "tools"
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no tools/list_changed after hello was reloaded", name)
			}
		}

		// The session is bound to the token that created it: another
		// token cannot use its ID.
		req, _ := http.NewRequest(http.MethodPost, srv.URL+server.Path, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Authorization", "Bearer "+allToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || bytes.Contains(body, []byte("add_note")) {
			t.Errorf("%s: session used with another token: %d %s", name, resp.StatusCode, body)
		}
	}

	// A token for notes only cannot call hello's tools.
	cs, err := httpConnect(t, srv.URL, is.Mint(t, authtest.Claims{Audience: resource, Scope: "plugin:notes", Subject: "other"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "x"}}); err == nil || !strings.Contains(err.Error(), `unknown tool "greet"`) {
		t.Errorf("notes token calling greet: %v", err)
	}
	if got := resourceURIs(t, cs); !slices.Contains(got, "notes://list") {
		t.Errorf("notes token: resources %v", got)
	}
}

// TestHealthAndReadiness checks /healthz and /readyz beside /mcp.
func TestHealthAndReadiness(t *testing.T) {
	s := newServer(t, nil, server.Mount{Plugin: legacy(t)})
	notReady := map[string]string{"notes": "loading", "web": "compiling plugin web: boom"}
	ready := false
	readiness := func() (bool, map[string]string) {
		if ready {
			return true, nil
		}
		return false, notReady
	}
	get := func(h http.Handler, path string) (int, map[string]any) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	open := s.HTTPHandler(&server.HTTPOptions{Readiness: readiness})
	if code, body := get(open, server.HealthPath); code != 200 || body["status"] != "ok" {
		t.Errorf("healthz: %d %v", code, body)
	}
	code, body := get(open, server.ReadyPath)
	plugins, _ := body["plugins"].(map[string]any)
	if code != 503 || body["status"] != "not ready" || plugins["notes"] != "loading" || plugins["web"] != notReady["web"] {
		t.Errorf("readyz: %d %v", code, body)
	}
	// With authentication, readiness does not name plugins to anyone.
	a, err := auth.New(&config.Auth{Tokens: []config.Token{{ID: "t", SHA256: sha(allToken), Plugins: []string{"*"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := s.HTTPHandler(&server.HTTPOptions{Readiness: readiness, Auth: a})
	if code, body := get(closed, server.ReadyPath); code != 503 || body["plugins"] != nil || body["not_ready"] != 2.0 {
		t.Errorf("readyz with auth: %d %v", code, body)
	}
	ready = true
	if code, body := get(closed, server.ReadyPath); code != 200 || body["status"] != "ready" {
		t.Errorf("readyz when ready: %d %v", code, body)
	}
	// No readiness function: a server built from loaded plugins is ready.
	if code, _ := get(s.HTTPHandler(nil), server.ReadyPath); code != 200 {
		t.Errorf("readyz without a readiness function: %d", code)
	}
	if code, _ := get(s.HTTPHandler(nil), server.MetricsPath); code != 404 {
		t.Errorf("metrics without metrics: %d", code)
	}
}

// scrape fetches url's metrics and parses them.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value returns the value of the series of family with exactly these
// labels (those not given must be absent or empty), or -1.
func value(fams map[string]*dto.MetricFamily, family string, labels ...string) float64 {
	f := fams[family]
	if f == nil {
		return -1
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok && v != "" {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetrics makes known calls and scrapes /metrics.
func TestMetrics(t *testing.T) {
	hostile := loadPlugin(t, "hostile", testutil.BuildPlugin(t, "./internal/testplugins/hostile"), config.Limits{CallTimeout: 500 * time.Millisecond})
	hello := loadPlugin(t, "hello", testutil.BuildPlugin(t, "./examples/hello"), config.Limits{})
	m := metrics.New("test")
	s := newServer(t, &server.Options{Metrics: m}, server.Mount{Plugin: hostile}, server.Mount{Plugin: hello}, server.Mount{Plugin: legacy(t)})
	a, err := auth.New(&config.Auth{Tokens: []config.Token{
		{ID: "all", SHA256: sha(allToken), Plugins: []string{"*"}},
		{ID: "hello", SHA256: sha(helloToken), Plugins: []string{"hello"}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.HTTPHandler(&server.HTTPOptions{Auth: a, Metrics: m.Handler()}))
	t.Cleanup(srv.Close)
	ctx := context.Background()

	cs, err := httpConnect(t, srv.URL, allToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		callTool(t, cs, "ok", map[string]any{})
	}
	callTool(t, cs, "alloc", map[string]any{"mb": "many"})           // invalid arguments
	callTool(t, cs, "spin", map[string]any{})                        // timeout
	callTool(t, cs, "panic", map[string]any{})                       // trap
	callTool(t, cs, "http", map[string]any{"url": "http://x.test/"}) // denied
	callTool(t, cs, "bad_json", map[string]any{})                    // output
	callTool(t, cs, "fail", map[string]any{})                        // plugin_error
	for i := range 50 {                                              // no series for names nothing offers
		cs.CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("random-%d", i)})
	}
	other, err := httpConnect(t, srv.URL, helloToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	other.CallTool(ctx, &mcp.CallToolParams{Name: "ok", Arguments: map[string]any{}}) // forbidden
	callTool(t, other, "greet", map[string]any{"name": "Ada"})

	// The metrics name every plugin: a token allowed only some cannot
	// read them.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+server.MetricsPath, nil)
	req.Header.Set("Authorization", "Bearer "+helloToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("metrics for a token of one plugin: %v %v", resp.Status, err)
	}
	req.Header.Del("Authorization")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %v %v", resp.Status, err)
	}

	fams := scrape(t, srv.URL+server.MetricsPath, allToken)
	call := func(name string) []string { return []string{"plugin", "hostile", "method", "tools/call", "name", name} }
	errs := func(name, kind string) []string { return append(call(name), "kind", kind) }
	for _, c := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"hangar_plugin_calls_total", call("ok"), 4}, // 3 + 1 forbidden
		{"hangar_plugin_call_duration_seconds", call("ok"), 4},
		{"hangar_plugin_call_errors_total", errs("ok", "forbidden"), 1},
		{"hangar_plugin_calls_total", call("alloc"), 1},
		{"hangar_plugin_call_errors_total", errs("alloc", "invalid_arguments"), 1},
		{"hangar_plugin_call_errors_total", errs("spin", "timeout"), 1},
		{"hangar_plugin_call_errors_total", errs("panic", "trap"), 1},
		{"hangar_plugin_call_errors_total", errs("http", "denied"), 1},
		{"hangar_plugin_call_errors_total", errs("bad_json", "output"), 1},
		{"hangar_plugin_call_errors_total", []string{"plugin", "legacy", "method", "tools/call", "name", "fail", "kind", "plugin_error"}, 1},
		{"hangar_plugin_calls_total", []string{"plugin", "hello", "method", "tools/call", "name", "greet"}, 1},
		{"hangar_mcp_requests_total", []string{"method", "tools/call", "outcome", "error"}, 51}, // the unknown names, and the forbidden call
		{"hangar_sessions", []string{"transport", "streamable_http"}, 2},
		{"hangar_sessions_opened_total", []string{"transport", "streamable_http"}, 2},
		{"hangar_plugin_instances", []string{"plugin", "hello", "state", "busy"}, 0},
		{"hangar_plugin_instances", []string{"plugin", "hello", "state", "idle"}, 1},
	} {
		if got := value(fams, c.family, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if v := value(fams, "hangar_plugin_guest_memory_bytes", "plugin", "hello"); v < 1<<20 {
		t.Errorf("guest memory of hello = %v", v)
	}
	if v := value(fams, "hangar_plugin_compile_seconds", "plugin", "hello"); v <= 0 {
		t.Errorf("compile seconds of hello = %v", v)
	}
	for _, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if strings.HasPrefix(l.GetValue(), "random-") {
					t.Fatalf("a series for a name nothing offers: %s %v", f.GetName(), m.Label)
				}
			}
		}
	}

	// A session that ends is no longer counted.
	other.Close()
	deadline := time.Now().Add(10 * time.Second)
	for value(scrape(t, srv.URL+server.MetricsPath, allToken), "hangar_sessions", "transport", "streamable_http") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a closed session is still counted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTracing checks the spans of an MCP request and its plugin call, with
// the parent taken from traceparent in _meta.
func TestTracing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	s := newServer(t, &server.Options{TracerProvider: tp}, server.Mount{Plugin: legacy(t)})
	cs := connect(t, s, nil)
	ctx := context.Background()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name: "reverse", Arguments: map[string]any{"text": "abc"},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"},
	})
	if err != nil || res.IsError {
		t.Fatalf("reverse: %v %+v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	// tool is the tool name a span carries.
	tool := func(sp tracetest.SpanStub) string {
		for _, a := range sp.Attributes {
			if a.Key == "gen_ai.tool.name" {
				return a.Value.Emit()
			}
		}
		return ""
	}
	// find finds a span by its name, and for tools/call by its tool.
	find := func(name string) tracetest.SpanStub {
		t.Helper()
		method, target := name, ""
		if m, tg, ok := strings.Cut(name, " "); ok && m == "tools/call" {
			method, target = m, tg
		}
		for _, sp := range spans {
			if sp.Name == method && (method != "tools/call" || tool(sp) == target) {
				return sp
			}
		}
		var names []string
		for _, sp := range spans {
			names = append(names, sp.Name)
		}
		t.Fatalf("no span %q among %v", name, names)
		return tracetest.SpanStub{}
	}
	req := find("tools/call reverse")
	if req.SpanContext.TraceID().String() != traceID || req.Parent.SpanID().String() != parentID || !req.Parent.IsRemote() {
		t.Errorf("request span: trace %s parent %s, want %s %s", req.SpanContext.TraceID(), req.Parent.SpanID(), traceID, parentID)
	}
	attrs := map[string]string{}
	for _, a := range req.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["mcp.method.name"] != "tools/call" || attrs["jsonrpc.request.id"] == "" || req.SpanKind.String() != "server" {
		t.Errorf("request span attributes %v, kind %s", attrs, req.SpanKind)
	}
	call := find("plugin legacy tools/call")
	if call.Parent.SpanID() != req.SpanContext.SpanID() || call.SpanContext.TraceID().String() != traceID {
		t.Errorf("plugin span's parent %s, want the request's %s", call.Parent.SpanID(), req.SpanContext.SpanID())
	}
	// A request without traceparent starts a trace of its own; a tool
	// error marks both spans.
	var failed []tracetest.SpanStub
	for _, sp := range spans {
		if tool(sp) == "fail" || (sp.Name == "plugin legacy tools/call" && sp.SpanContext.TraceID().String() != traceID) {
			failed = append(failed, sp)
		}
	}
	if len(failed) != 2 {
		t.Fatalf("spans of the failed call: %v", failed)
	}
	for _, sp := range failed {
		if sp.SpanContext.TraceID().String() == traceID || sp.Status.Code.String() != "Error" {
			t.Errorf("span %s: trace %s status %v", sp.Name, sp.SpanContext.TraceID(), sp.Status)
		}
	}
	// Listing is a request too.
	toolNames(t, cs)
	spans = exp.GetSpans()
	if find("tools/list").Parent.IsValid() {
		t.Error("tools/list has a parent without traceparent")
	}

	// Over HTTP, without traceparent in _meta, the HTTP header's is the
	// parent.
	srv := httptest.NewServer(s.HTTPHandler(nil))
	t.Cleanup(srv.Close)
	const headerTrace, headerParent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	hc, err := mcp.NewClient(&mcp.Implementation{Name: "trace-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + server.Path, HTTPClient: &http.Client{Transport: traceHeader("00-" + headerTrace + "-" + headerParent + "-01")}}, sessionOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	if _, err := hc.CallTool(ctx, &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sp := range exp.GetSpans() {
		if sp.Name == "tools/call" && tool(sp) == "reverse" && sp.SpanContext.TraceID().String() == headerTrace && sp.Parent.SpanID().String() == headerParent {
			found = true
		}
	}
	if !found {
		t.Error("no tools/call span with the HTTP traceparent as its parent")
	}
}

// TestTracingBoundsWhatClientsSend: a call of an unknown tool with a name
// of 1 MB, and a known one under an id of 1 MB, make spans named by the
// method, without the name, and with the id and the error message cut
// (issue 15.7). Before, the span's name was "tools/call " and the name.
func TestTracingBoundsWhatClientsSend(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	s := newServer(t, &server.Options{TracerProvider: tp}, server.Mount{Plugin: legacy(t)})
	huge := strings.Repeat("x", 1<<20)
	for _, disable := range []bool{false, true} {
		s := s
		if disable {
			s = newServer(t, &server.Options{TracerProvider: tp, DisableFastPath: true}, server.Mount{Plugin: legacy(t)})
		}
		c := newRawIO(t, s)
		c.start("2025-06-18")
		c.exchange(call(2, huge, `{}`), "2")
		c.exchange(call(huge, "reverse", `{"text":"abc"}`), mustJSON(huge))
	}
	spans := exp.GetSpans()
	if len(spans) == 0 {
		t.Fatal("no spans")
	}
	for _, sp := range spans {
		size := len(sp.Name) + len(sp.Status.Description)
		for _, a := range sp.Attributes {
			size += len(a.Key) + len(a.Value.Emit())
		}
		if size > 2048 || strings.Contains(sp.Name, "x") {
			t.Errorf("span %.40q keeps %d bytes of the request", sp.Name, size)
		}
	}
}

// traceHeader sends a traceparent header with every request.
type traceHeader string

func (h traceHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", string(h))
	return http.DefaultTransport.RoundTrip(r)
}

// TestReplicaSessionIDs: with a replica name, session IDs start with it.
func TestReplicaSessionIDs(t *testing.T) {
	s := newServer(t, &server.Options{Replica: "r-2.a"}, server.Mount{Plugin: legacy(t)})
	srv := httptest.NewServer(s.HTTPHandler(nil))
	t.Cleanup(srv.Close)
	cs, err := httpConnect(t, srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := cs.ID(); !strings.HasPrefix(id, "r-2.a"+server.ReplicaSeparator) || len(id) < 20 {
		t.Errorf("session ID %q", id)
	}
	_, err = server.New(context.Background(), nil, &server.Options{Replica: "no spaces"})
	if err == nil || !strings.Contains(err.Error(), "invalid replica name") {
		t.Errorf("bad replica name: %v", err)
	}
}

// BenchmarkObservedCall compares a tool call without metrics or tracing,
// with metrics, and with metrics and every trace sampled (go test -bench
// ObservedCall ./internal/server).
func BenchmarkObservedCall(b *testing.B) {
	e := sharedEngine(b)
	wasm, err := os.ReadFile(testutil.BuildPlugin(b, "./internal/testplugins/legacy"))
	if err != nil {
		b.Fatal(err)
	}
	p, err := e.Load(context.Background(), wasm, plugin.Options{Name: "legacy", Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	for _, c := range []struct {
		name string
		opts server.Options
	}{
		{"plain", server.Options{}},
		{"metrics", server.Options{Metrics: metrics.New("bench")}},
		{"metrics+tracing", server.Options{Metrics: metrics.New("bench"), TracerProvider: tp}},
	} {
		b.Run(c.name, func(b *testing.B) {
			opts := c.opts
			opts.Logger = quietLogger()
			s, err := server.New(context.Background(), []server.Mount{{Plugin: p}}, &opts)
			if err != nil {
				b.Fatal(err)
			}
			st, ct := mcp.NewInMemoryTransports()
			ss, err := s.MCP().Connect(context.Background(), st, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), ct, sessionOpts)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "reverse", Arguments: map[string]any{"text": "abc"}}
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
