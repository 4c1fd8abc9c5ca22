package spool_test

import (
	"context"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceContextRoundTrip produces under a span context with the W3C propagator and checks
// that the consumer extracts the same trace and span ids from the stored headers; a record
// that already carries a traceparent keeps it, and a client without a propagator adds none.
func TestTraceContextRoundTrip(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 1)
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
			SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
			TraceFlags: trace.FlagsSampled,
		})
		ctx := trace.ContextWithSpanContext(testCtx(t), sc)
		traced := newClient(t, addr, spool.TracePropagator(propagation.TraceContext{}))
		own := "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
		recs := []*spool.Record{
			spool.StringRecord(topic, "traced"),
			{Topic: topic, Value: []byte("own"), Headers: []spool.Header{{Key: []byte("traceparent"), Value: []byte(own)}}},
		}
		if err := traced.ProduceSync(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		if err := newClient(t, addr).ProduceSync(ctx, spool.StringRecord(topic, "plain")); err != nil {
			t.Fatal(err)
		}
		got := consumeN(t, newClient(t, addr), topic, 3)
		for _, r := range got {
			ext := trace.SpanContextFromContext(spool.ExtractTraceContext(context.Background(), r))
			switch string(r.Value) {
			case "traced":
				if ext.TraceID() != sc.TraceID() || ext.SpanID() != sc.SpanID() || !ext.IsSampled() || !ext.IsRemote() {
					t.Fatalf("extracted %v/%v sampled=%v, want %v/%v", ext.TraceID(), ext.SpanID(), ext.IsSampled(), sc.TraceID(), sc.SpanID())
				}
			case "own":
				if len(r.Headers) != 1 || string(r.Headers[0].Value) != own || ext.TraceID().String() != "0123456789abcdef0123456789abcdef" {
					t.Fatalf("own traceparent replaced: %q, extracted %v", r.Headers, ext.TraceID())
				}
			case "plain":
				if len(r.Headers) != 0 || ext.IsValid() {
					t.Fatalf("client without a propagator wrote headers %q", r.Headers)
				}
			default:
				t.Fatalf("unexpected record %q", r.Value)
			}
		}
	})
}
