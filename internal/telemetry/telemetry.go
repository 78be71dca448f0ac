// Package telemetry sets up OpenTelemetry tracing: a tracer provider that
// exports spans over OTLP/HTTP to a collector, as the tracing section of
// the configuration says. The spans themselves are made by package server
// (one per MCP request and one per plugin call), through the OpenTelemetry
// API only; without a tracing section the server gets no provider and
// makes none.
//
// Spans wait in memory for the collector. What they hold is bounded: each
// attribute value to MaxAttributeLength bytes, and the spans waiting, or
// being exported, to MaxQueueBytes (about) and MaxQueueSpans; past either
// bound a new span is dropped (Tracing.Dropped counts them), so that a
// slow or absent collector costs calls nothing and memory a bounded
// amount.
package telemetry

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/hangar-mcp/hangar/internal/config"
)

// The bounds of what spans hold while they wait for the collector.
const (
	MaxQueueBytes      = 16 << 20
	MaxQueueSpans      = sdktrace.DefaultMaxQueueSize
	MaxAttributeLength = 4096
)

// Tracing is a tracer provider exporting to a collector.
type Tracing struct {
	*sdktrace.TracerProvider
	queue *BoundedProcessor
}

// New returns the tracer provider cfg describes. Spans are batched and
// exported in the background; a collector that is down loses spans, never
// calls. Call Shutdown to export what is left.
func New(ctx context.Context, cfg *config.Tracing, version string) (*Tracing, error) {
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.Endpoint)}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	q := Bounded(exp, MaxQueueBytes, MaxQueueSpans)
	return &Tracing{NewProvider(q, cfg.SampleRatio, cfg.ServiceName, version), q}, nil
}

// Dropped returns how many spans were dropped for the bounds of the queue.
func (t *Tracing) Dropped() int64 { return t.queue.Dropped() }

// NewProvider returns a tracer provider sending spans to sp: it samples
// ratio of the traces that start here, and follows the sampling decision
// of a parent taken from a request's traceparent. Attribute values are cut
// to MaxAttributeLength bytes.
func NewProvider(sp sdktrace.SpanProcessor, ratio float64, service, version string) *sdktrace.TracerProvider {
	res := resource.NewSchemaless(
		attribute.String("service.name", service),
		attribute.String("service.version", version),
	)
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = MaxAttributeLength
	return sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(sp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithRawSpanLimits(limits),
	)
}

// Bounded returns a batch span processor exporting to exp that holds at
// most maxBytes (about: see spanSize) and maxSpans of spans, queued or
// being exported; further spans are dropped and counted.
func Bounded(exp sdktrace.SpanExporter, maxBytes, maxSpans int) *BoundedProcessor {
	q := &BoundedProcessor{maxBytes: int64(maxBytes), maxSpans: int64(maxSpans)}
	// The batch processor's own queue never fills: it holds fewer spans
	// than q counts (those being exported too).
	q.SpanProcessor = sdktrace.NewBatchSpanProcessor(countingExporter{exp, q}, sdktrace.WithMaxQueueSize(maxSpans))
	return q
}

// BoundedProcessor is a batch span processor that bounds the spans it holds.
type BoundedProcessor struct {
	sdktrace.SpanProcessor
	maxBytes, maxSpans int64
	bytes, spans       atomic.Int64 // held: queued, or being exported
	dropped            atomic.Int64
}

func (q *BoundedProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return // the batch processor exports sampled spans only
	}
	n := spanSize(s)
	if q.bytes.Add(n) > q.maxBytes || q.spans.Add(1) > q.maxSpans {
		q.bytes.Add(-n)
		q.spans.Add(-1)
		q.dropped.Add(1)
		return
	}
	q.SpanProcessor.OnEnd(s)
}

// Held returns about how many bytes of spans q holds.
func (q *BoundedProcessor) Held() int64 { return q.bytes.Load() }

// Dropped returns how many spans q dropped.
func (q *BoundedProcessor) Dropped() int64 { return q.dropped.Load() }

// countingExporter gives back the room of the spans it exported (or
// failed to).
type countingExporter struct {
	sdktrace.SpanExporter
	q *BoundedProcessor
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	var n int64
	for _, s := range spans {
		n += spanSize(s)
	}
	e.q.bytes.Add(-n)
	e.q.spans.Add(-int64(len(spans)))
	return err
}

// spanSize is about the memory a span holds: its strings, and a fixed
// overhead for the rest.
func spanSize(s sdktrace.ReadOnlySpan) int64 {
	n := 256 + len(s.Name()) + len(s.Status().Description)
	for _, a := range s.Attributes() {
		n += 16 + len(a.Key) + len(a.Value.Emit())
	}
	for _, e := range s.Events() {
		n += 64 + len(e.Name)
		for _, a := range e.Attributes {
			n += 16 + len(a.Key) + len(a.Value.Emit())
		}
	}
	for _, l := range s.Links() {
		n += 64
		for _, a := range l.Attributes {
			n += 16 + len(a.Key) + len(a.Value.Emit())
		}
	}
	return int64(n)
}
