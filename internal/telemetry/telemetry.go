// Package telemetry sets up OpenTelemetry tracing: a tracer provider that
// exports spans over OTLP/HTTP to a collector, as the tracing section of
// the configuration says. The spans themselves are made by package server
// (one per MCP request and one per plugin call), through the OpenTelemetry
// API only; without a tracing section the server gets no provider and
// makes none.
package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/hangar-mcp/hangar/internal/config"
)

// Tracing is a tracer provider exporting to a collector.
type Tracing struct {
	*sdktrace.TracerProvider
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
	return &Tracing{NewProvider(sdktrace.NewBatchSpanProcessor(exp), cfg.SampleRatio, cfg.ServiceName, version)}, nil
}

// NewProvider returns a tracer provider sending spans to sp: it samples
// ratio of the traces that start here, and follows the sampling decision
// of a parent taken from a request's traceparent.
func NewProvider(sp sdktrace.SpanProcessor, ratio float64, service, version string) *sdktrace.TracerProvider {
	res := resource.NewSchemaless(
		attribute.String("service.name", service),
		attribute.String("service.version", version),
	)
	return sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(sp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	)
}
