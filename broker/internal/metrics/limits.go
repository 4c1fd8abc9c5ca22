package metrics

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// LimitStats are the broker's flood limits and what they refused, read at each collection.
type LimitStats struct {
	RequestMemoryUsed  int64 // bytes of queued.max.request.bytes held by requests being read
	RequestMemoryLimit int64 // queued.max.request.bytes (-1: unbounded)
	RequestMemoryWaits int64 // cumulative reads that waited for request memory
	RefusedMax         int64 // cumulative connections closed over max.connections
	RefusedPerIP       int64 // cumulative connections closed over max.connections.per.ip(.overrides)
	MaxConnections     int64 // max.connections
	// RefusedByListener counts connections closed over a listener's own limit, by the
	// property's name (listener.name.<listener>.max.connections); only listeners with one.
	RefusedByListener map[string]int64
}

// attrLimit names the limit a refused connection hit (Kafka's property name).
const attrLimit = attribute.Key("spool.limit")

// ObserveLimits registers the flood-limit instruments, read from limits at each collection.
func (m *Metrics) ObserveLimits(limits func() LimitStats) error {
	if m == nil {
		return nil
	}
	b := &builder{meter: m.meter}
	gauge, counter := b.gauge, b.observedCounter
	used := gauge("spool.request.memory.used", "By", "Memory held by requests larger than the read buffer while they are read and handled, counted against queued.max.request.bytes.")
	limit := gauge("spool.request.memory.limit", "By", "queued.max.request.bytes (-1: unbounded).")
	maxConns := gauge("spool.connections.limit", "{connection}", "max.connections.")
	waits := counter("spool.request.memory.waits", "{wait}", "Request reads that waited for memory under queued.max.request.bytes.")
	refused := counter("spool.connections.refused", "{connection}", "Connections closed on accept over a limit, by the limit's property name (spool.limit).")
	if err := b.err("limit instruments"); err != nil {
		return err
	}
	byMax := metric.WithAttributeSet(attribute.NewSet(attrLimit.String("max.connections")))
	byIP := metric.WithAttributeSet(attribute.NewSet(attrLimit.String("max.connections.per.ip")))
	_, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := limits()
		o.ObserveInt64(used, st.RequestMemoryUsed)
		o.ObserveInt64(limit, st.RequestMemoryLimit)
		o.ObserveInt64(maxConns, st.MaxConnections)
		o.ObserveInt64(waits, st.RequestMemoryWaits)
		o.ObserveInt64(refused, st.RefusedMax, byMax)
		o.ObserveInt64(refused, st.RefusedPerIP, byIP)
		for prop, n := range st.RefusedByListener {
			o.ObserveInt64(refused, n, metric.WithAttributeSet(attribute.NewSet(attrLimit.String(prop))))
		}
		return nil
	}, used, limit, maxConns, waits, refused)
	if err != nil {
		return fmt.Errorf("registering the limits callback: %w", err)
	}
	return nil
}
