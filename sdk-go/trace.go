package spool

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// TracePropagator makes Produce write the span context of its ctx into each record's headers
// with p (for W3C trace context, propagation.TraceContext{}: `traceparent`, `tracestate`),
// unless the record already carries a `traceparent` header. Default: none, which costs
// nothing per record.
func TracePropagator(p propagation.TextMapPropagator) Opt {
	return func(c *config) error { c.propagator = p; return nil }
}

// ExtractTraceContext returns ctx carrying the W3C trace context (`traceparent`,
// `tracestate`) found in r's headers, so that a consumer's span can continue the producer's
// trace; ctx is returned unchanged when r has none. For another propagator, call its
// Extract with RecordCarrier(r).
func ExtractTraceContext(ctx context.Context, r *Record) context.Context {
	return propagation.TraceContext{}.Extract(ctx, RecordCarrier(r))
}

// RecordCarrier adapts r's headers to an OpenTelemetry TextMapCarrier.
func RecordCarrier(r *Record) propagation.TextMapCarrier { return recordCarrier{r} }

type recordCarrier struct{ r *Record }

// Get returns the value of the last header named key, as Kafka clients read the latest.
func (c recordCarrier) Get(key string) string {
	for i := len(c.r.Headers) - 1; i >= 0; i-- {
		if string(c.r.Headers[i].Key) == key {
			return string(c.r.Headers[i].Value)
		}
	}
	return ""
}

// Set replaces the header named key, or appends it.
func (c recordCarrier) Set(key, value string) {
	for i := range c.r.Headers {
		if string(c.r.Headers[i].Key) == key {
			c.r.Headers[i].Value = []byte(value)
			return
		}
	}
	c.r.Headers = append(c.r.Headers, Header{Key: []byte(key), Value: []byte(value)})
}

func (c recordCarrier) Keys() []string {
	ks := make([]string, len(c.r.Headers))
	for i, h := range c.r.Headers {
		ks[i] = string(h.Key)
	}
	return ks
}

// injectTrace writes ctx's span context into r's headers, unless r has one already.
func (cl *Client) injectTrace(ctx context.Context, r *Record) {
	for _, h := range r.Headers {
		if string(h.Key) == "traceparent" {
			return
		}
	}
	cl.cfg.propagator.Inject(ctx, recordCarrier{r})
}
