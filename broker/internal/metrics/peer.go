package metrics

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// PeerAuthStats are this broker's SASL authentications to the other brokers, read at each
// collection.
type PeerAuthStats struct {
	Authentications   int64 // cumulative: one per new connection to a peer
	Reauthentications int64 // cumulative: on an open connection, before its session ended (KIP-368)
}

// attrReauth tells a re-authentication from a new connection's first authentication.
const attrReauth = attribute.Key("spool.reauthentication")

// ObservePeerAuth registers spool.peer.authentications, read from stats at each collection.
func (m *Metrics) ObservePeerAuth(stats func() PeerAuthStats) error {
	if m == nil {
		return nil
	}
	c, err := m.meter.Int64ObservableCounter("spool.peer.authentications", metric.WithUnit("{authentication}"),
		metric.WithDescription("SASL authentications of this broker to the others on the inter-broker listener: a new connection's first (spool.reauthentication=false), or a re-authentication of an open one before its session ends (true, KIP-368)."))
	if err != nil {
		return fmt.Errorf("creating the peer authentication counter: %w", err)
	}
	first := metric.WithAttributeSet(attribute.NewSet(attrReauth.Bool(false)))
	re := metric.WithAttributeSet(attribute.NewSet(attrReauth.Bool(true)))
	_, err = m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := stats()
		o.ObserveInt64(c, st.Authentications, first)
		o.ObserveInt64(c, st.Reauthentications, re)
		return nil
	}, c)
	if err != nil {
		return fmt.Errorf("registering the peer authentication callback: %w", err)
	}
	return nil
}
