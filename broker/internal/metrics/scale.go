package metrics

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// ScaleStats are what keeps a broker up with many partitions, read at each collection.
type ScaleStats struct {
	OfflineReplicas int64 // local replicas whose log cannot be opened or that cannot take their state
	AcceptRetries   int64 // cumulative accept errors retried after a pause (out of descriptors, aborted handshakes)
}

// ObserveScale registers the scale instruments, read from stats at each collection.
func (m *Metrics) ObserveScale(stats func() ScaleStats) error {
	if m == nil {
		return nil
	}
	b := &builder{meter: m.meter}
	offline := b.gauge("spool.replicas.offline", "{replica}", "Local replicas offline: their log cannot be opened or they cannot take their state; retried on each reconcile.")
	retries := b.observedCounter("spool.accept.retries", "{error}", "Accept errors retried after a short pause (too many open files, aborted connections): the listener slows down instead of stopping.")
	if err := b.err("scale instruments"); err != nil {
		return err
	}
	_, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := stats()
		o.ObserveInt64(offline, st.OfflineReplicas)
		o.ObserveInt64(retries, st.AcceptRetries)
		return nil
	}, offline, retries)
	if err != nil {
		return fmt.Errorf("registering the scale callback: %w", err)
	}
	return nil
}
