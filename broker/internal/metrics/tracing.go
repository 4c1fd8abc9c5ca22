package metrics

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Span attribute keys besides the metrics' (rpc.method, kafka.api.version, error.type).
const (
	attrRPCSystem    = attribute.Key("rpc.system")
	attrClientID     = attribute.Key("messaging.client.id")
	attrRequestSize  = attribute.Key("spool.request.size")
	attrResponseSize = attribute.Key("spool.response.size")
	attrErrorCode    = attribute.Key("kafka.error.code")
)

// Tracer exports a span per Kafka request over OTLP/HTTP. A nil *Tracer records nothing, so
// tracing off costs the dispatcher one nil check per request.
//
// Spans are made when a request's response has been written, with the request's start as
// their start time: the handlers carry no span context, and a request that is never answered
// (a closed connection) leaves no half-open span. The batch processor drops spans rather than
// block a request when the receiver falls behind (its queue is bounded); the sampler follows
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default: every request).
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	// names[key] is the span name of API key: its Kafka name.
	names []string
}

// TraceBatchTimeout is how long a span may wait in the batch before it is exported.
const TraceBatchTimeout = time.Second

// NewTracer exports to endpoint, an http(s)://HOST:PORT URL of an OTLP/HTTP receiver (spans
// are posted to its /v1/traces). Nothing is sent until the first span; an unreachable receiver
// is logged by the OpenTelemetry SDK and costs the broker nothing but dropped spans.
func NewTracer(endpoint string) (*Tracer, error) {
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter for %s: %w", endpoint, err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "spoold"))
	t := &Tracer{provider: sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(TraceBatchTimeout)),
		sdktrace.WithResource(res))}
	t.tracer = t.provider.Tracer("github.com/spoolmq/spool/broker")
	for _, a := range wire.APIs {
		for int(a.Key) >= len(t.names) {
			t.names = append(t.names, "")
		}
		t.names[a.Key] = a.Name
	}
	return t, nil
}

// RequestSpan is what a finished request's span says.
type RequestSpan struct {
	Key, Version  int16
	ClientID      string
	Start         time.Time
	RequestBytes  int   // the request frame, size prefix excluded
	ResponseBytes int   // the response as written, size prefix excluded; 0: none (acks=0)
	Response      any   // the generated response, searched for the first non-zero error code
	Closed        error // the request closed the connection instead of being answered
}

// Request exports one request's span, ended now.
func (t *Tracer) Request(r RequestSpan) {
	if t == nil {
		return
	}
	name := "Unknown"
	if int(r.Key) < len(t.names) && t.names[r.Key] != "" {
		name = t.names[r.Key]
	}
	_, span := t.tracer.Start(context.Background(), name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(r.Start),
		trace.WithAttributes(attrRPCSystem.String("kafka"), attrMethod.String(name), attrVersion.Int(int(r.Version)),
			attrClientID.String(r.ClientID), attrRequestSize.Int(r.RequestBytes), attrResponseSize.Int(r.ResponseBytes)))
	if !span.IsRecording() { // sampled out: skip the search for an error code
		span.End()
		return
	}
	if code := firstError(reflect.ValueOf(r.Response)); code != 0 {
		errName := fmt.Sprint(code)
		var we *wire.Error
		if errors.As(wire.ErrorForCode(code), &we) {
			errName = we.Name
		}
		span.SetAttributes(attrErrorCode.Int(int(code)), attrError.String(errName))
		span.SetStatus(codes.Error, errName)
	}
	if r.Closed != nil {
		span.SetAttributes(attrError.String("connection_closed"))
		span.SetStatus(codes.Error, r.Closed.Error())
	}
	span.End()
}

// Shutdown exports the spans still batched and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// firstError is the first non-zero ErrorCode field in v, a generated response, in field
// order (the error plans ResponseErrors uses).
func firstError(v reflect.Value) int16 {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return firstError(v.Elem())
		}
	case reflect.Slice:
		if !planFor(v.Type().Elem()).has {
			return 0
		}
		for i := range v.Len() {
			if c := firstError(v.Index(i)); c != 0 {
				return c
			}
		}
	case reflect.Struct:
		p := planFor(v.Type())
		for _, i := range p.codes {
			if c := int16(v.Field(i).Int()); c != 0 {
				return c
			}
		}
		for _, i := range p.nested {
			if c := firstError(v.Field(i)); c != 0 {
				return c
			}
		}
	}
	return 0
}
