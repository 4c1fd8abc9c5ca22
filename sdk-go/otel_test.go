package spool_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// spansNamed returns the ended spans called name.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestTracingProducerToConsumer: with TracerProvider on both sides and an in-memory span
// exporter, each record produced by the SDK under a parent span gets a producer span (a child
// of the parent) whose context travels in its headers with the baggage of ctx, and each
// record consumed gets a consumer span linked to that producer span. A record produced by
// kcat with a hand-set traceparent header is linked to the span it names.
func TestTracingProducerToConsumer(t *testing.T) {
	t.Parallel()
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	eachTarget(t, func(t *testing.T, addr string) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		topic := createTopic(t, newClient(t, addr), 1)

		member, err := baggage.NewMember("tenant", "acme")
		if err != nil {
			t.Fatal(err)
		}
		bag, err := baggage.New(member)
		if err != nil {
			t.Fatal(err)
		}
		ctx, parent := tp.Tracer("test").Start(baggage.ContextWithBaggage(testCtx(t), bag), "request")
		producer := newClient(t, addr, spool.TracerProvider(tp))
		if err := producer.ProduceSync(ctx, spool.StringRecord(topic, "a"), spool.StringRecord(topic, "b")); err != nil {
			t.Fatal(err)
		}
		parent.End()
		// kcat (librdkafka) with a traceparent set by hand: trace 4bf9..., span 00f067aa0ba902b7.
		const handTrace, handSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		cmd := exec.Command(kcat, "-P", "-b", addr, "-t", topic, "-p", "0",
			"-H", "traceparent=00-"+handTrace+"-"+handSpan+"-01")
		cmd.Stdin = strings.NewReader("by kcat\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat: %v %s", err, out)
		}

		sends := spansNamed(exp, "send "+topic)
		if len(sends) != 2 {
			t.Fatalf("%d producer spans, want 2", len(sends))
		}
		for _, s := range sends {
			if s.SpanKind != trace.SpanKindProducer || s.Parent.SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("producer span %v: kind %v, parent %v, want a producer child of %v", s.SpanContext.SpanID(), s.SpanKind, s.Parent.SpanID(), parent.SpanContext().SpanID())
			}
			if v, ok := attr(s, "messaging.kafka.offset"); !ok || v.AsInt64() < 0 {
				t.Errorf("producer span lacks the acknowledged offset: %v", s.Attributes)
			}
		}

		consumer := newClient(t, addr, spool.TracerProvider(tp))
		got := consumeN(t, consumer, topic, 3)
		recvs := spansNamed(exp, "receive "+topic)
		if len(recvs) != 3 {
			t.Fatalf("%d consumer spans, want 3", len(recvs))
		}
		linked := map[trace.SpanID]bool{}
		for i, s := range recvs {
			if s.SpanKind != trace.SpanKindConsumer || len(s.Links) != 1 {
				t.Fatalf("consumer span %d: kind %v, %d links", i, s.SpanKind, len(s.Links))
			}
			l := s.Links[0].SpanContext
			off, _ := attr(s, "messaging.kafka.offset")
			if off.AsInt64() == 2 { // kcat's record
				if l.TraceID().String() != handTrace || l.SpanID().String() != handSpan {
					t.Errorf("kcat record linked to %v/%v, want %s/%s", l.TraceID(), l.SpanID(), handTrace, handSpan)
				}
				continue
			}
			linked[l.SpanID()] = true
			if l.TraceID() != parent.SpanContext().TraceID() {
				t.Errorf("consumer span %d linked to trace %v, want %v", i, l.TraceID(), parent.SpanContext().TraceID())
			}
		}
		for _, s := range sends {
			if !linked[s.SpanContext.SpanID()] {
				t.Errorf("no consumer span links producer span %v", s.SpanContext.SpanID())
			}
		}
		// The baggage went along in the SDK's records.
		for _, r := range got[:2] {
			found := false
			for _, h := range r.Headers {
				found = found || (string(h.Key) == "baggage" && string(h.Value) == "tenant=acme")
			}
			if !found {
				t.Errorf("record %q lacks baggage tenant=acme: %q", r.Value, r.Headers)
			}
		}
	})
}

// TestClientMetrics: with MeterProvider and a manual reader, records sent and consumed,
// batch sizes and request latencies reflect exactly the work done, the buffer gauges are
// reported, and a group member counts its rebalance.
func TestClientMetrics(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		t.Cleanup(func() { mp.Shutdown(context.Background()) })
		topic := createTopic(t, newClient(t, addr), 1)
		cl := newClient(t, addr, spool.MeterProvider(mp), spool.ClientID("metered"))
		const n = 7
		var recs []*spool.Record
		for range n {
			recs = append(recs, spool.StringRecord(topic, "0123456789"))
		}
		if err := cl.ProduceSync(testCtx(t), recs...); err != nil {
			t.Fatal(err)
		}
		consumeN(t, cl, topic, n)
		group := groupName()
		member := newClient(t, addr, spool.MeterProvider(mp), spool.ConsumerGroup(group), spool.ConsumeTopics(topic))
		if _, err := member.Poll(testCtx(t)); err != nil {
			t.Fatal(err)
		}

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		sums := map[string]int64{}
		counts := map[string]uint64{}
		gauges := map[string]int64{}
		var batchRecords int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					for _, p := range d.DataPoints {
						sums[m.Name] += p.Value
					}
				case metricdata.Gauge[int64]:
					for _, p := range d.DataPoints {
						gauges[m.Name] += p.Value
					}
				case metricdata.Histogram[int64]:
					for _, p := range d.DataPoints {
						counts[m.Name] += p.Count
						if m.Name == "spool.client.batch.records" {
							batchRecords += p.Sum
						}
					}
				case metricdata.Histogram[float64]:
					for _, p := range d.DataPoints {
						counts[m.Name] += p.Count
					}
				}
			}
		}
		if sums["messaging.client.sent.messages"] != n || batchRecords != n {
			t.Errorf("sent %d records in batches of %d in all, want %d", sums["messaging.client.sent.messages"], batchRecords, n)
		}
		// The first client consumed n, the group member n again from the start.
		if sums["messaging.client.consumed.messages"] < n+1 {
			t.Errorf("consumed %d records, want at least %d", sums["messaging.client.consumed.messages"], n+1)
		}
		if counts["spool.client.batch.size"] < 1 || counts["messaging.client.operation.duration"] < 2 {
			t.Errorf("batch sizes %d, request latencies %d recorded", counts["spool.client.batch.size"], counts["messaging.client.operation.duration"])
		}
		if gauges["spool.client.buffered.records"] != 0 || gauges["spool.client.buffer.capacity"] <= 0 {
			t.Errorf("buffered %d of %d after every record was acknowledged", gauges["spool.client.buffered.records"], gauges["spool.client.buffer.capacity"])
		}
		if sums["spool.client.rebalances"] < 1 {
			t.Errorf("rebalances: %d, want the member's first", sums["spool.client.rebalances"])
		}
	})
}
