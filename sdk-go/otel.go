package spool

// OpenTelemetry for the client, opt-in: TracerProvider makes a producer span per record,
// whose context travels in the record's headers (W3C traceparent and baggage), and a
// consumer span per record polled, linked to its producer's; MeterProvider reports the
// client's metrics. Without them the hooks cost one nil check.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const instrumentationName = "github.com/spoolmq/spool/sdk-go"

// Attribute keys, from the OpenTelemetry messaging semantic conventions.
const (
	attrSystem    = attribute.Key("messaging.system")
	attrOperation = attribute.Key("messaging.operation.name")
	attrOpType    = attribute.Key("messaging.operation.type")
	attrDest      = attribute.Key("messaging.destination.name")
	attrPartition = attribute.Key("messaging.destination.partition.id")
	attrOffset    = attribute.Key("messaging.kafka.offset")
	attrKey       = attribute.Key("messaging.kafka.message.key")
	attrGroup     = attribute.Key("messaging.consumer.group.name")
	attrClientID  = attribute.Key("messaging.client.id")
	attrBodySize  = attribute.Key("messaging.message.body.size")
)

// TracerProvider makes the client trace each record: Produce starts a producer span
// ("send TOPIC", a child of ctx's span) and writes its context into the record's headers
// with the propagator (TracePropagator's, else W3C trace context and baggage), unless the
// record carries a `traceparent` already; the span ends when the record is acknowledged or
// fails. Poll and PollFunc start and end a consumer span per record ("receive TOPIC", a
// child of their ctx's span) linked to the span context found in the record's headers, so
// that a trace backend joins the consumer to the producer. Default: none.
func TracerProvider(tp trace.TracerProvider) Opt {
	return func(c *config) error { c.tracerProvider = tp; return nil }
}

// MeterProvider makes the client report its metrics to mp: records sent and consumed
// (messaging.client.sent.messages, messaging.client.consumed.messages), produce and fetch
// request latency (messaging.client.operation.duration), the records and bytes of each
// batch sent (spool.client.batch.records, spool.client.batch.size), the records buffered
// by the producer (spool.client.buffered.records, against spool.client.buffer.capacity), and
// the consumer group's rebalances (spool.client.rebalances). Default: none.
func MeterProvider(mp metric.MeterProvider) Opt {
	return func(c *config) error { c.meterProvider = mp; return nil }
}

// telemetry is the client's tracer and instruments; nil when neither provider was given.
type telemetry struct {
	tracer     trace.Tracer // nil without TracerProvider
	propagator propagation.TextMapPropagator
	clientID   attribute.KeyValue

	// metrics: nil without MeterProvider
	meter        metric.Meter
	sent         metric.Int64Counter
	consumed     metric.Int64Counter
	duration     metric.Float64Histogram
	batchRecords metric.Int64Histogram
	batchBytes   metric.Int64Histogram
	rebalances   metric.Int64Counter
	reg          metric.Registration
}

var kafka = attrSystem.String("kafka")

// initTelemetry makes cl.tel when a provider was given.
func (cl *Client) initTelemetry() error {
	cfg := &cl.cfg
	if cfg.tracerProvider == nil && cfg.meterProvider == nil {
		return nil
	}
	t := &telemetry{propagator: cfg.propagator, clientID: attrClientID.String(cfg.clientID)}
	if t.propagator == nil {
		t.propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if cfg.tracerProvider != nil {
		t.tracer = cfg.tracerProvider.Tracer(instrumentationName)
		// Produce injects through the same propagator.
		cfg.propagator = t.propagator
	}
	if mp := cfg.meterProvider; mp != nil {
		if err := t.initMetrics(mp.Meter(instrumentationName), cl); err != nil {
			return err
		}
	}
	cl.tel = t
	return nil
}

func (t *telemetry) initMetrics(m metric.Meter, cl *Client) error {
	var err error
	t.meter = m
	if t.sent, err = m.Int64Counter("messaging.client.sent.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Records the producer got acknowledged.")); err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	if t.consumed, err = m.Int64Counter("messaging.client.consumed.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Records handed out by Poll and PollFunc.")); err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	if t.duration, err = m.Float64Histogram("messaging.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Produce (send) and Fetch (receive) requests: sent to answered."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)); err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	if t.batchRecords, err = m.Int64Histogram("spool.client.batch.records", metric.WithUnit("{record}"),
		metric.WithDescription("Records per batch the producer got acknowledged."),
		metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)); err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	if t.batchBytes, err = m.Int64Histogram("spool.client.batch.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes per batch the producer got acknowledged (keys, values and headers)."),
		metric.WithExplicitBucketBoundaries(100, 1000, 4096, 16384, 65536, 262144, 1048576, 4194304)); err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	if t.rebalances, err = m.Int64Counter("spool.client.rebalances", metric.WithUnit("{rebalance}"),
		metric.WithDescription("Consumer group rebalances this member took part in (assignments received).")); err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	buffered, err := m.Int64ObservableGauge("spool.client.buffered.records", metric.WithUnit("{record}"),
		metric.WithDescription("Records produced and not yet acknowledged or failed."))
	if err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	capacity, err := m.Int64ObservableGauge("spool.client.buffer.capacity", metric.WithUnit("{record}"),
		metric.WithDescription("Records the producer may buffer (MaxBufferedRecords)."))
	if err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	attrs := metric.WithAttributes(t.clientID)
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(buffered, cl.prod.buffered.Load(), attrs)
		o.ObserveInt64(capacity, int64(cl.cfg.maxBuffered), attrs)
		return nil
	}, buffered, capacity)
	if err != nil {
		return fmt.Errorf("spool: metrics: %w", err)
	}
	return nil
}

// close unregisters the gauges' callback (it reads the client).
func (t *telemetry) close() {
	if t != nil && t.reg != nil {
		t.reg.Unregister()
	}
}

// traceProduce starts r's producer span and injects its context; the returned callback ends
// it and calls cb. Without a tracer it injects ctx's span context when a propagator is set.
func (cl *Client) traceProduce(ctx context.Context, r *Record, cb func(*Record, error)) func(*Record, error) {
	t := cl.tel
	if t == nil || t.tracer == nil {
		if cl.cfg.propagator != nil {
			cl.injectTrace(ctx, r)
		}
		return cb
	}
	ctx, span := t.tracer.Start(ctx, "send "+r.Topic, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(kafka, attrOperation.String("send"), attrOpType.String("send"), attrDest.String(r.Topic),
			attrPartition.String(strconv.Itoa(int(r.Partition))), attrBodySize.Int(len(r.Value)), t.clientID))
	if len(r.Key) > 0 {
		span.SetAttributes(attrKey.String(string(r.Key)))
	}
	cl.injectTrace(ctx, r)
	return func(r *Record, err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(attrOffset.Int64(r.Offset))
		}
		span.End()
		if cb != nil {
			cb(r, err)
		}
	}
}

// consumed records n records polled and, with a tracer, each record's consumer span.
func (cl *Client) consumed(ctx context.Context, r *Record) {
	t := cl.tel
	if t.consumed != nil {
		opts := []metric.AddOption{metric.WithAttributes(kafka, attrDest.String(r.Topic), t.clientID)}
		t.consumed.Add(ctx, 1, opts...)
	}
	if t.tracer == nil {
		return
	}
	attrs := []attribute.KeyValue{kafka, attrOperation.String("receive"), attrOpType.String("receive"), attrDest.String(r.Topic),
		attrPartition.String(strconv.Itoa(int(r.Partition))), attrOffset.Int64(r.Offset), attrBodySize.Int(len(r.Value)), t.clientID}
	if cl.cfg.group.id != "" {
		attrs = append(attrs, attrGroup.String(cl.cfg.group.id))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	if sc := trace.SpanContextFromContext(t.propagator.Extract(context.Background(), recordCarrier{r})); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	_, span := t.tracer.Start(ctx, "receive "+r.Topic, opts...)
	span.End()
}

// batchAcked records a batch the producer got acknowledged.
func (t *telemetry) batchAcked(topic string, records, bytes int) {
	if t == nil || t.sent == nil {
		return
	}
	ctx := context.Background()
	a := metric.WithAttributes(kafka, attrDest.String(topic), t.clientID)
	t.sent.Add(ctx, int64(records), a)
	t.batchRecords.Record(ctx, int64(records), a)
	t.batchBytes.Record(ctx, int64(bytes), a)
}

// request records a produce ("send") or fetch ("receive") request's round trip.
func (t *telemetry) request(op string, began time.Time) {
	if t == nil || t.duration == nil {
		return
	}
	t.duration.Record(context.Background(), time.Since(began).Seconds(),
		metric.WithAttributes(kafka, attrOperation.String(op), t.clientID))
}

// rebalanced counts a rebalance of group.
func (t *telemetry) rebalanced(group string) {
	if t == nil || t.rebalances == nil {
		return
	}
	t.rebalances.Add(context.Background(), 1, metric.WithAttributes(attrGroup.String(group), t.clientID))
}
