package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/telemetry"
)

// TestExportsOverOTLP sends a span to a collector on 127.0.0.1, with the
// configured headers, when the provider shuts down.
func TestExportsOverOTLP(t *testing.T) {
	var (
		mu    sync.Mutex
		posts []*http.Request
		body  []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, r)
		body = append(body, b...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	tr, err := telemetry.New(context.Background(), &config.Tracing{
		Endpoint: srv.URL + "/v1/traces", Headers: map[string]string{"Authorization": "Bearer secret"},
		SampleRatio: 1, ServiceName: "hangar-test",
	}, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Tracer("test").Start(context.Background(), "tools/call greet")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 1 || posts[0].URL.Path != "/v1/traces" || posts[0].Header.Get("Authorization") != "Bearer secret" {
		t.Fatalf("posts: %d %+v", len(posts), posts)
	}
	for _, want := range []string{"tools/call greet", "hangar-test", "v1.2.3"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("the export lacks %q", want)
		}
	}
}

// TestSampleRatio: with ratio 0, traces that start here are not sampled.
func TestSampleRatio(t *testing.T) {
	tr, err := telemetry.New(context.Background(), &config.Tracing{Endpoint: "http://127.0.0.1:9/v1/traces", SampleRatio: 0, ServiceName: "x"}, "v")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	_, span := tr.Tracer("test").Start(context.Background(), "s")
	if span.SpanContext().IsSampled() {
		t.Error("sampled at ratio 0")
	}
	span.End()
}
