package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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

// stuckExporter exports nothing until released, as a collector that does
// not answer.
type stuckExporter struct {
	release  chan struct{}
	exported atomic.Int64
}

func (e *stuckExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	<-e.release
	e.exported.Add(int64(len(spans)))
	return nil
}

func (e *stuckExporter) Shutdown(context.Context) error { return nil }

// TestQueueBounded: while the collector does not answer, the spans held
// stay within the byte bound, however large, and the rest are dropped;
// once it answers, the room comes back (issue 15.7). Attribute values are
// cut.
func TestQueueBounded(t *testing.T) {
	exp := &stuckExporter{release: make(chan struct{})}
	q := telemetry.Bounded(exp, 1<<20, 1000)
	tp := telemetry.NewProvider(q, 1, "test", "v")
	name := strings.Repeat("n", 100<<10)
	for range 300 {
		_, span := tp.Tracer("test").Start(context.Background(), name)
		span.SetAttributes(attribute.String("big", strings.Repeat("v", 1<<20)))
		span.End()
	}
	if held := q.Held(); held > 1<<20 {
		t.Errorf("%d bytes of spans held, bound 1 MiB", held)
	}
	if q.Dropped() < 280 {
		t.Errorf("%d spans dropped of 300 of 100 KiB, with room for about 10", q.Dropped())
	}
	close(exp.release)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if held := q.Held(); held != 0 {
		t.Errorf("%d bytes still held after the export", held)
	}
	if exp.exported.Load()+q.Dropped() != 300 {
		t.Errorf("%d exported + %d dropped, want 300", exp.exported.Load(), q.Dropped())
	}
	// Attributes are cut.
	rec := tracetest.NewSpanRecorder()
	tp = telemetry.NewProvider(rec, 1, "test", "v")
	_, span := tp.Tracer("test").Start(context.Background(), "s")
	span.SetAttributes(attribute.String("big", strings.Repeat("v", 1<<20)))
	span.End()
	if v := rec.Ended()[0].Attributes()[0].Value.AsString(); len(v) != telemetry.MaxAttributeLength {
		t.Errorf("an attribute of %d bytes, want %d", len(v), telemetry.MaxAttributeLength)
	}
}
